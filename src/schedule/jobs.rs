//! Jobs as people define them (the config file, the `schedule` tool, `butler schedule add`):
//! checking a definition and turning it into a stored job, deciding where a user may deliver,
//! and describing jobs and runs for `/schedules`, the tool and the CLI.
//!
//! Every definition passes [`build`], whatever its source, so a job that is stored can always
//! be computed. Nothing here fires a job or reads the clock (callers pass `now`).

use super::cron::{self, human, parse_cron, parse_time, parse_tz, CronError};
use crate::config::{Missed, ScheduleMode};
use crate::ids::{HOOK_CHANNEL, SYSTEM_CHANNEL, WEB_CHANNEL};
use crate::store::{
    NewSchedule, RunRow, RunStatus, ScheduleRow, ScheduleSource, StoreError, UserRole, UserRow, UserStore,
};
use butler_channel::{ConversationRef, Identity};

/// The longest prompt a job may carry.
pub const MAX_PROMPT_CHARS: usize = 8_000;
/// The longest job name.
pub const MAX_NAME_CHARS: usize = 64;

/// Why a job definition is refused, or a target is not the user's. The text says what to do.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum JobError {
    #[error(transparent)]
    Cron(#[from] CronError),
    #[error("the prompt is empty: say what the job should do each time it runs")]
    EmptyPrompt,
    #[error("the prompt is longer than {} characters", MAX_PROMPT_CHARS)]
    LongPrompt,
    #[error("`{0}` never fires (no such date in the next thousands of years)")]
    NeverFires(String),
    #[error("{0} is in the past")]
    InThePast(String),
    #[error("give either a cron expression or an `at` time, not both")]
    CronAndAt,
    #[error("say when: a cron expression (`0 8 * * 1-5`) or an `at` time (`in 20 minutes`)")]
    NoWhen,
    #[error("a job name must be 1-{} characters on one line", MAX_NAME_CHARS)]
    BadName,
    #[error("the target must be a conversation channel:id[/thread] (web:briefings, telegram:123456789): {0}")]
    BadTarget(String),
    #[error("`{0}` is not a conversation anything can be delivered to")]
    Undeliverable(String),
    #[error("{0} belongs to someone else")]
    SomeoneElses(String),
    #[error("a job of yours may deliver only to this conversation or to a web conversation of yours, not to {0}")]
    NotYourTarget(String),
}

/// A job as written, before it is checked.
#[derive(Clone, Debug, Default)]
pub struct JobSpec {
    /// Default: made from the first words of the prompt.
    pub name: Option<String>,
    /// A 5-field crontab; exactly one of `cron` and `at`.
    pub cron: Option<String>,
    /// A one-shot time, as [`cron::parse_time`] reads it.
    pub at: Option<String>,
    pub tz: String,
    pub prompt: String,
    pub target: String,
    pub mode: ScheduleMode,
    pub missed: Missed,
    pub grace_secs: u64,
}

/// Whose job it is.
#[derive(Clone, Debug)]
pub struct JobOwner {
    pub identity: Identity,
    pub user_id: Option<String>,
}

/// The scope names are unique in: `config`, or the owner's user (`user:<id>`), or, for a
/// CLI job whose owner has no user yet, the owner's identity.
pub fn scope_for(source: ScheduleSource, owner: &JobOwner) -> String {
    match (source, &owner.user_id) {
        (ScheduleSource::Config, _) => "config".into(),
        (_, Some(user)) => format!("user:{user}"),
        (_, None) => format!("identity:{}", owner.identity),
    }
}

/// Checks `spec` and builds the job, first firing after `now_ms`.
pub fn build(spec: &JobSpec, owner: &JobOwner, source: ScheduleSource, now_ms: i64) -> Result<NewSchedule, JobError> {
    let tz = parse_tz(&spec.tz)?;
    let prompt = spec.prompt.trim();
    if prompt.is_empty() {
        return Err(JobError::EmptyPrompt);
    }
    if prompt.chars().count() > MAX_PROMPT_CHARS {
        return Err(JobError::LongPrompt);
    }
    let target = check_target(&spec.target)?;
    let name = match spec.name.as_deref().map(str::trim).filter(|n| !n.is_empty()) {
        Some(name) => check_name(name)?,
        None => name_from(prompt),
    };
    let (cron_expr, at_ms, next) = match (spec.cron.as_deref().map(str::trim), spec.at.as_deref().map(str::trim)) {
        (Some(expr), None) => {
            let c = parse_cron(expr)?;
            let next = cron::next_after(&c, tz, now_ms).ok_or_else(|| JobError::NeverFires(expr.to_string()))?;
            (Some(expr.to_string()), None, next)
        }
        (None, Some(at)) => {
            let at = parse_time(at, tz, now_ms)?;
            if at <= now_ms {
                return Err(JobError::InThePast(human(at, tz)));
            }
            (None, Some(at), at)
        }
        (Some(_), Some(_)) => return Err(JobError::CronAndAt),
        (None, None) => return Err(JobError::NoWhen),
    };
    Ok(NewSchedule {
        scope: scope_for(source, owner),
        name,
        source,
        owner: owner.identity.to_string(),
        owner_user: owner.user_id.clone(),
        cron: cron_expr,
        at_ms,
        tz: tz.name().to_string(),
        prompt: prompt.to_string(),
        target: target.to_string(),
        mode: spec.mode,
        missed: spec.missed,
        grace_ms: i64::try_from(spec.grace_secs.saturating_mul(1000)).unwrap_or(i64::MAX),
        next_fire_ms: Some(next),
    })
}

/// A job name: 1-64 characters, no line breaks or control characters.
pub fn check_name(name: &str) -> Result<String, JobError> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > MAX_NAME_CHARS || name.chars().any(char::is_control) {
        return Err(JobError::BadName);
    }
    Ok(name.to_string())
}

/// A target conversation `channel:id[/thread]` that can be delivered to.
pub fn check_target(target: &str) -> Result<ConversationRef, JobError> {
    let conv = target.trim().parse::<ConversationRef>().map_err(|e| JobError::BadTarget(e.to_string()))?;
    if [HOOK_CHANNEL, SYSTEM_CHANNEL].contains(&conv.channel.as_str()) {
        return Err(JobError::Undeliverable(conv.to_string()));
    }
    Ok(conv)
}

/// `brief-me-on-my` from "Brief me on my calendar and the news".
fn name_from(prompt: &str) -> String {
    let words: Vec<String> =
        prompt.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).take(4).map(str::to_lowercase).collect();
    let name: String = words.join("-").chars().take(40).collect();
    if name.is_empty() {
        "job".into()
    } else {
        name
    }
}

/// Whether `user` (speaking as `identity` in `current`) may have a job deliver to `target`:
/// the conversation they are in, a web conversation of theirs (or a new one, which becomes
/// theirs), or, for owners, anywhere. Anyone else's chats are refused.
pub async fn may_target(
    store: &dyn UserStore,
    user: &UserRow,
    current: &ConversationRef,
    target: &ConversationRef,
) -> Result<Result<(), JobError>, StoreError> {
    if target == current || user.role == UserRole::Owner {
        return Ok(Ok(()));
    }
    if target.channel == WEB_CHANNEL {
        let mine = store.user_identities(&user.id).await?;
        return Ok(match store.conversation_get(&target.to_string()).await? {
            None => Ok(()),
            Some(c) if mine.iter().any(|i| i.to_string() == c.owner) => Ok(()),
            Some(_) => Err(JobError::SomeoneElses(target.to_string())),
        });
    }
    Ok(Err(JobError::NotYourTarget(target.to_string())))
}

/// "every `0 8 * * 1-5` (Europe/Berlin)" or "once at Mon 2025-03-10 08:00 CET".
pub fn when(row: &ScheduleRow) -> String {
    match (&row.cron, row.at_ms, parse_tz(&row.tz)) {
        (Some(c), _, _) => format!("every `{c}` ({})", row.tz),
        (None, Some(at), Ok(tz)) => format!("once at {}", human(at, tz)),
        _ => "never".into(),
    }
}

/// One job on one line, then its next fire time and last run.
pub fn describe(row: &ScheduleRow, last: Option<&RunRow>) -> String {
    let tz = parse_tz(&row.tz).unwrap_or(chrono_tz::UTC);
    let mut text = format!("#{} `{}`: {} → {}", row.id, row.name, when(row), row.target);
    if row.mode == ScheduleMode::Heartbeat {
        text.push_str(", heartbeat (speaks only when something is worth saying)");
    }
    if row.source == ScheduleSource::Config {
        text.push_str(", from the config file");
    }
    let next = match (row.paused, row.next_fire_ms) {
        (true, _) => "paused".to_string(),
        (false, Some(next)) => format!("next {}", human(next, tz)),
        (false, None) => "done".to_string(),
    };
    text.push_str(&format!("\n  {next}; "));
    match last {
        Some(run) => text.push_str(&format!("last run {}", describe_run(run, tz))),
        None => text.push_str("no runs yet"),
    }
    text
}

/// "Mon 2025-03-10 08:00 CET (catch_up): delivered (message 42)".
pub fn describe_run(run: &RunRow, tz: chrono_tz::Tz) -> String {
    let mut text = human(run.fire_at_ms, tz);
    if run.kind != crate::store::RunKind::Scheduled {
        text.push_str(&format!(" ({})", run.kind.as_str().replace('_', " ")));
    }
    text.push_str(&format!(": {}", run.status.as_str()));
    if let Some(id) = &run.delivered_id {
        text.push_str(&format!(" (message {id})"));
    }
    if run.status == RunStatus::Delivering && run.delivery_attempts > 0 {
        text.push_str(&format!(", {} failed attempts so far", run.delivery_attempts));
    }
    if let Some(e) = &run.error {
        text.push_str(&format!(" — {e}"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(cron: Option<&str>, at: Option<&str>) -> JobSpec {
        JobSpec {
            name: None,
            cron: cron.map(str::to_string),
            at: at.map(str::to_string),
            tz: "Europe/Berlin".into(),
            prompt: "Brief me on my calendar and the news".into(),
            target: "web:briefings".into(),
            grace_secs: 3600,
            ..JobSpec::default()
        }
    }

    #[test]
    fn build_checks_every_field() {
        let owner = JobOwner { identity: Identity::new("web", "alice"), user_id: Some("u1".into()) };
        let now = 1_735_689_600_000; // 2025-01-01T00:00:00Z
        let job = build(&spec(Some("0 8 * * 1-5"), None), &owner, ScheduleSource::Tool, now).unwrap();
        assert_eq!((job.scope.as_str(), job.name.as_str()), ("user:u1", "brief-me-on-my"));
        assert_eq!(job.next_fire_ms, Some(now + 7 * 3_600_000), "08:00 CET on Wednesday");
        let bad: &[(JobSpec, &str)] = &[
            (spec(None, None), "say when"),
            (spec(Some("0 8 * * 1-5"), Some("in 1 hour")), "not both"),
            (spec(Some("61 8 * * *"), None), "the minute field `61`"),
            (spec(Some("0 0 30 2 *"), None), "never fires"),
            (spec(None, Some("2020-01-01 08:00")), "in the past"),
            (JobSpec { tz: "Nowhere/Town".into(), ..spec(Some("* * * * *"), None) }, "IANA"),
            (JobSpec { prompt: "  ".into(), ..spec(Some("* * * * *"), None) }, "prompt is empty"),
            (JobSpec { target: "nowhere".into(), ..spec(Some("* * * * *"), None) }, "channel:id"),
            (JobSpec { target: "hook:github".into(), ..spec(Some("* * * * *"), None) }, "delivered"),
            (JobSpec { name: Some("a\nb".into()), ..spec(Some("* * * * *"), None) }, "one line"),
        ];
        for (s, want) in bad {
            let e = build(s, &owner, ScheduleSource::Tool, now).unwrap_err();
            assert!(e.to_string().contains(want), "{s:?}: {e}");
        }
    }

    /// The typed errors keep the texts the functions returned as strings before.
    #[test]
    fn error_texts_are_the_same_as_before() {
        let table = [
            (check_name("").unwrap_err(), "a job name must be 1-64 characters on one line"),
            (check_target("system:approvals").unwrap_err(), "`system:approvals` is not a conversation anything can be delivered to"),
            (JobError::LongPrompt, "the prompt is longer than 8000 characters"),
            (JobError::EmptyPrompt, "the prompt is empty: say what the job should do each time it runs"),
            (JobError::CronAndAt, "give either a cron expression or an `at` time, not both"),
            (JobError::NoWhen, "say when: a cron expression (`0 8 * * 1-5`) or an `at` time (`in 20 minutes`)"),
            (JobError::NeverFires("0 0 30 2 *".into()), "`0 0 30 2 *` never fires (no such date in the next thousands of years)"),
            (JobError::SomeoneElses("web:c1".into()), "web:c1 belongs to someone else"),
            (
                JobError::NotYourTarget("telegram:1".into()),
                "a job of yours may deliver only to this conversation or to a web conversation of yours, not to telegram:1",
            ),
            (JobError::Cron(CronError::ClockOutOfRange), "the clock is out of range"),
        ];
        for (got, want) in table {
            assert_eq!(got.to_string(), want);
        }
        let bad = check_target("nonsense").unwrap_err().to_string();
        assert!(
            bad.starts_with(
                "the target must be a conversation channel:id[/thread] (web:briefings, telegram:123456789): "
            ),
            "{bad}"
        );
    }
}
