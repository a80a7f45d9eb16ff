//! The scheduler: cron jobs with time zones and one-shot `at` jobs, from the config file
//! (`[[schedules]]`), the `schedule` tool (a user's own jobs) and `butler schedule`, each fired
//! exactly once per fire time however many processes share the database, and delivered to any
//! channel.
//!
//! Scheduled jobs enter Butler like everything else: the tick turns a due (job, fire time) into
//! an `InboundEvent` (id `schedule:<id>:<fire_at_ms>`, actor the owner, conversation the
//! target, body `EventBody::Trigger { source: "schedule", .. }`) through the ingress; triage
//! hands it to [`Schedules::decide`], which starts an agent turn in the job's own session
//! (`schedule:<id>`) as the owner's user, through the normal permission engine, so a job never
//! has more rights than its owner. Heartbeat jobs are quiet turns: delivered only when the model
//! says something other than `NOTHING_TO_REPORT`.
//!
//! - Times: [`cron`] (croner 4 + chrono-tz; DST rules there). Missed runs: [`plan`].
//! - Claiming and firing: [`tick`]. Definitions and descriptions: [`jobs`].
//! - Runs are recorded at the claim (fire time, start); triage notes `running` or `dropped`
//!   (with the reason); the end, the status and the delivered message id are read from the
//!   event's inbox row and the reply's outbox row (`<event id>:reply`) whenever runs are listed,
//!   so the delivery worker (which retries with backoff) needs no hook here.
//! - Config jobs are upserted by name into the scope `config` when [`Schedules::run`] starts;
//!   config jobs no longer in the file are deleted with their runs.
//!
//! This module must never run a turn or send a message itself, and never let a job act as
//! anyone but its owner.

pub mod cron;
pub mod jobs;
pub mod plan;
pub mod tick;

pub use jobs::{JobOwner, JobSpec};
pub use tick::{event_for, TickReport, HEARTBEAT_NOTE};

use crate::config::{ScheduleConfig, ScheduleMode};
use crate::session::{Job, JobKind};
use crate::store::{
    now_ms, ConversationRow, RunQuery, RunStatus, ScheduleChange, ScheduleFilter, ScheduleSource, Store, StoreError,
    UserRow,
};
use crate::triage::{Access, Decision, Verdict};
use butler_channel::{ConversationKind, EventBody, InboundEvent, Ingress};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The source name of scheduled events.
pub const SOURCE: &str = "schedule";
/// How long after a missed fire time a `run_once` job still catches up, by default: an hour.
pub const DEFAULT_GRACE_SECS: u64 = 3600;
/// How often the tick looks for due jobs, by default.
pub const DEFAULT_TICK: Duration = Duration::from_secs(1);

pub struct Schedules {
    config: Vec<ScheduleConfig>,
    store: Arc<dyn Store>,
    access: Arc<Access>,
    every: Duration,
}

impl Schedules {
    pub fn new(cfg: &[ScheduleConfig], store: Arc<dyn Store>, access: Arc<Access>) -> Self {
        Self { config: cfg.to_vec(), store, access, every: DEFAULT_TICK }
    }

    /// Ticks every `every` instead of every second (tests, benchmarks).
    pub fn with_tick(mut self, every: Duration) -> Self {
        self.every = every.max(Duration::from_millis(10));
        self
    }

    /// What to do with a due job's event: an agent turn in the job's own session, as its
    /// owner's user; dropped (with the reason recorded, also on the run) when the job is gone
    /// or paused, or its owner may no longer use Butler or reach the target.
    pub async fn decide(&self, event: &InboundEvent) -> Result<Verdict, StoreError> {
        let EventBody::Trigger { payload, .. } = &event.body else {
            return Ok(Verdict::drop("a scheduled event without a job"));
        };
        let (Some(id), Some(fire_at)) = (payload["schedule"].as_i64(), payload["fire_at_ms"].as_i64()) else {
            return Ok(Verdict::drop("a scheduled event without a job id or fire time"));
        };
        let Some(row) = self.store.schedules_list(&ScheduleFilter::Id(id)).await?.into_iter().next() else {
            return Ok(Verdict::drop(format!("scheduled job #{id} no longer exists")));
        };
        let user = match self.admit(&row, event, payload["kind"] == "manual").await? {
            Ok(user) => user,
            Err(reason) => {
                self.store.schedule_run_note(id, fire_at, RunStatus::Dropped, Some(&reason)).await?;
                return Ok(Verdict::drop(reason));
            }
        };
        self.store.schedule_run_note(id, fire_at, RunStatus::Running, None).await?;
        let quiet = payload["mode"] == ScheduleMode::Heartbeat.as_str();
        let reason = format!(
            "job #{id} `{}` due {} -> turn for {} in {}",
            row.name,
            payload["fire_at"].as_str().unwrap_or_default(),
            event.actor.identity,
            event.conversation
        );
        let job = Job { event: event.clone(), user, kind: JobKind::Turn, attempt: 1, quiet };
        Ok(Verdict::recorded(
            Decision::Session { key: format!("{SOURCE}:{id}"), job: Box::new(job) },
            "schedule",
            reason,
        ))
    }

    /// The owner's user, or why the run is dropped: the job is paused (a manual run still
    /// goes), the owner may no longer use Butler, or the target is not the owner's.
    async fn admit(
        &self,
        row: &crate::store::ScheduleRow,
        event: &InboundEvent,
        manual: bool,
    ) -> Result<Result<UserRow, String>, StoreError> {
        if row.paused && !manual {
            return Ok(Err(format!("scheduled job #{} `{}` is paused", row.id, row.name)));
        }
        let owner = &event.actor.identity;
        let Some(user) = self.access.user_for(&*self.store, owner).await? else {
            return Ok(Err(format!(
                "scheduled job #{} `{}`: its owner {owner} may no longer use Butler",
                row.id, row.name
            )));
        };
        if let Some(why) = self.target_refusal(event, &user).await? {
            return Ok(Err(format!("scheduled job #{}: {why}", row.id)));
        }
        Ok(Ok(user))
    }

    /// A web target is created for the owner if it does not exist; one that belongs to someone
    /// else is refused.
    async fn target_refusal(&self, event: &InboundEvent, user: &UserRow) -> Result<Option<String>, StoreError> {
        let conv = &event.conversation;
        if conv.channel != crate::web::CHANNEL {
            return Ok(None);
        }
        let owner = event.actor.identity.to_string();
        let row = ConversationRow { id: conv.to_string(), kind: ConversationKind::Direct, owner, created_ms: now_ms() };
        let actual = self.store.conversation_ensure(&row).await?.owner;
        if actual == row.owner || self.store.user_identities(&user.id).await?.iter().any(|i| i.to_string() == actual) {
            return Ok(None);
        }
        Ok(Some(format!("{conv} belongs to {actual}, not to the job's owner")))
    }

    /// `/schedules`: the user's jobs with their next fire time and last run.
    pub async fn describe_for(&self, user: &UserRow) -> Result<String, StoreError> {
        let rows = self.store.schedules_list(&ScheduleFilter::Owner(user.id.clone())).await?;
        if rows.is_empty() {
            return Ok("You have no scheduled jobs. Ask me, e.g. \"every weekday at 8, brief me on my calendar\" \
                       or \"remind me in 20 minutes to stretch\"."
                .into());
        }
        let mut text = String::from("Your scheduled jobs:");
        for row in rows {
            let last = self.store.schedule_runs(&RunQuery::Of { schedule_id: row.id, limit: 1 }).await?;
            text.push_str("\n- ");
            text.push_str(&jobs::describe(&row, last.first()));
        }
        Ok(text)
    }

    /// Puts the config's jobs into the store (by name, scope `config`) and deletes config jobs
    /// no longer in the file. A job's owner is its `owner`, else the first configured owner.
    pub async fn sync_config(&self) -> Result<(), StoreError> {
        let now = now_ms();
        let default_owner = self.access.owners().first().cloned();
        let mut names = Vec::new();
        for cfg in &self.config {
            let Some(identity) = cfg.owner.clone().or_else(|| default_owner.clone()) else { continue };
            let user_id = self.access.user_for(&*self.store, &identity).await?.map(|u| u.id);
            let spec = JobSpec {
                name: Some(cfg.name.clone()),
                cron: Some(cfg.cron.clone()),
                at: None,
                tz: cfg.tz.clone(),
                prompt: cfg.prompt.clone(),
                target: cfg.target.to_string(),
                mode: cfg.mode,
                missed: cfg.missed,
                grace_secs: cfg.grace_secs,
            };
            match jobs::build(&spec, &JobOwner { identity, user_id }, ScheduleSource::Config, now) {
                Ok(new) => {
                    let row = self.store.schedule_put(&new).await?;
                    tracing::debug!(schedule = row.id, name = %row.name, "config job stored");
                    names.push(row.name);
                }
                Err(e) => tracing::error!(name = %cfg.name, error = %e, "[[schedules]] entry skipped"),
            }
        }
        for row in self.store.schedules_list(&ScheduleFilter::Scope("config".into())).await? {
            if !names.contains(&row.name) {
                self.store.schedule_set(row.id, &ScheduleChange::Remove).await?;
                tracing::info!(schedule = row.id, name = %row.name, "config job removed (no longer in the file)");
            }
        }
        Ok(())
    }

    /// Stores the config's jobs, then fires due jobs into `ingress` until `cancel` fires: a
    /// tick every `every` (sooner when a job is due sooner), and every half minute a look for
    /// runs a dead process claimed but never handed over.
    pub async fn run(self: Arc<Self>, ingress: Arc<dyn Ingress>, cancel: CancellationToken) {
        while let Err(e) = self.sync_config().await {
            tracing::warn!(error = %e, "could not store the [[schedules]] jobs; retrying");
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(5)) => {}
                _ = cancel.cancelled() => return,
            }
        }
        let mut recovered_at = 0;
        loop {
            let now = now_ms();
            let next_due = match self.tick(&*ingress, now).await {
                Ok(report) => report.next_due_ms,
                Err(e) => {
                    tracing::warn!(error = %e, "scheduler tick failed");
                    None
                }
            };
            if now - recovered_at >= tick::RECOVER_AFTER_MS {
                recovered_at = now;
                if let Err(e) = self.recover(&*ingress, now).await {
                    tracing::warn!(error = %e, "could not look for runs left by a dead process");
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(sleep_for(next_due, now_ms(), self.every)) => {}
                _ = cancel.cancelled() => return,
            }
        }
    }
}

/// How long the loop sleeps: until the next fire time if that is sooner than `every`.
pub fn sleep_for(next_due_ms: Option<i64>, now_ms: i64, every: Duration) -> Duration {
    let every_ms = every.as_millis() as i64;
    let wait = next_due_ms.map_or(every_ms, |t| (t - now_ms).clamp(0, every_ms));
    Duration::from_millis(wait as u64)
}
