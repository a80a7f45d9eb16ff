//! `butler schedule list|add|remove|run-now|next`: scheduled jobs from the shell, straight on the
//! store (Butler need not be running; a running Butler's tick sees changes within a second, and
//! picks up a run-now event at its dispatcher's next poll). `next` previews the fire times of a
//! cron expression and never touches the config or the database.
//!
//! Jobs added here are owned by `--owner` (default: the first configured owner), who must be
//! allowed to use Butler; they run with that user's rights. Config jobs are not removed here
//! (the next start would bring them back): remove them from the file.

use super::exit;
use crate::config::{Config, Missed, ScheduleMode};
use crate::ingress::InboxIngress;
use crate::schedule::cron::{parse_cron, parse_time, parse_tz, rfc3339};
use crate::schedule::jobs::{self, JobOwner, JobSpec};
use crate::schedule::Schedules;
use crate::store::{
    now_ms, InboxStore, RunQuery, ScheduleChange, ScheduleFilter, ScheduleSource, ScheduleStore, UserStore,
};
use crate::triage::Access;
use butler_channel::Identity;
use clap::Subcommand;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Subcommand, Debug)]
pub enum ScheduleCommand {
    /// Every job with its next fire time (in its zone) and its last runs
    List {
        /// Only the jobs of this identity's user (e.g. telegram:123456789)
        #[arg(long)]
        owner: Option<String>,
        /// Runs shown per job, newest first
        #[arg(long, default_value_t = 3)]
        runs: usize,
    },
    /// Add a job: a 5-field --cron or a one-shot --at time
    Add {
        /// Unique per owner
        #[arg(long)]
        name: String,
        /// 5-field crontab, e.g. "0 8 * * 1-5"
        #[arg(long, conflicts_with = "at", required_unless_present = "at")]
        cron: Option<String>,
        /// One-shot: RFC 3339, a local time in --tz ("2025-03-10 08:00") or "in 20 minutes"
        #[arg(long)]
        at: Option<String>,
        /// IANA time zone (default: [agent] timezone)
        #[arg(long)]
        tz: Option<String>,
        /// What the agent is asked at each fire time
        #[arg(long)]
        prompt: String,
        /// The conversation the result goes to (channel:id[/thread], e.g. web:briefings)
        #[arg(long)]
        target: String,
        /// Whose job it is (default: the first configured owner)
        #[arg(long)]
        owner: Option<String>,
        /// "always", or "heartbeat" (deliver only when something is worth saying)
        #[arg(long, default_value = "always")]
        mode: String,
        /// After downtime: "run_once" (within --grace-secs) or "skip"
        #[arg(long, default_value = "run_once")]
        missed: String,
        #[arg(long, default_value_t = crate::config::DEFAULT_GRACE_SECS)]
        grace_secs: u64,
    },
    /// Remove a job and its runs
    Remove { id: i64 },
    /// Run a job now, through the same claim as the scheduler (a running Butler delivers it)
    RunNow { id: i64 },
    /// Print the next fire times of a cron expression (touches nothing)
    Next {
        /// 5-field crontab, e.g. "0 8 * * 1-5"
        cron: String,
        /// IANA time zone the cron is read in
        #[arg(long, default_value = "UTC")]
        tz: String,
        /// Start after this time: RFC 3339 or a local wall time in --tz (default: now)
        #[arg(long)]
        after: Option<String>,
        #[arg(long, default_value_t = 5)]
        count: usize,
    },
}

/// `next` needs no config; everything else loads it and opens the store.
pub async fn run(config: Option<&std::path::Path>, cmd: ScheduleCommand) -> Result<ExitCode, ExitCode> {
    if let ScheduleCommand::Next { cron, tz, after, count } = &cmd {
        return next(cron, tz, after.as_deref(), *count);
    }
    let cfg = exit::load_config(config)?.config;
    let store = crate::store::connect(cfg.database.url.expose(), 2).await.map_err(|e| exit::fail(1, e))?;
    store.migrate().await.map_err(|e| exit::fail(1, e))?;
    let code = on_store(&cfg, Stores { jobs: store.clone(), users: store.clone(), inbox: store.clone() }, cmd).await;
    store.close().await;
    code
}

fn next(expr: &str, tz: &str, after: Option<&str>, count: usize) -> Result<ExitCode, ExitCode> {
    let cron = parse_cron(expr).map_err(|e| exit::fail(2, e))?;
    let tz = parse_tz(tz).map_err(|e| exit::fail(2, e))?;
    if !(1..=1000).contains(&count) {
        return Err(exit::fail(2, "--count must be 1 to 1000"));
    }
    let start = match after {
        Some(text) => parse_time(text, tz, now_ms()).map_err(|e| exit::fail(2, format!("--after: {e}")))?,
        None => now_ms(),
    };
    for t in crate::schedule::cron::fire_times(&cron, tz, start, count) {
        println!("{}", rfc3339(t, tz));
    }
    Ok(ExitCode::SUCCESS)
}

/// The access rules of `cfg`, with the operator's local identities (as `butler serve` has them).
fn access(cfg: &Config) -> Access {
    let mut local = vec![Identity::new("cli", "local")];
    if crate::web::WebAuth::from_config(&cfg.channels.web).is_local() {
        local.push(Identity::new(crate::ids::WEB_CHANNEL, crate::web::LOCAL_USER));
    }
    if cfg.channels.web.token.is_some() {
        local.push(Identity::new(crate::ids::WEB_CHANNEL, "owner"));
    }
    Access::new(&cfg.access, local, &cfg.agent.timezone)
}

/// The store traits `butler schedule` uses.
struct Stores {
    jobs: Arc<dyn ScheduleStore>,
    /// Who a job's owner is.
    users: Arc<dyn UserStore>,
    /// `run-now` queues the job's event.
    inbox: Arc<dyn InboxStore>,
}

async fn on_store(cfg: &Config, stores: Stores, cmd: ScheduleCommand) -> Result<ExitCode, ExitCode> {
    let fail = |e: crate::store::StoreError| exit::fail(1, e);
    let access = Arc::new(access(cfg));
    let Stores { jobs: store, users, inbox } = stores;
    match cmd {
        ScheduleCommand::List { owner, runs } => list((&*store, &*users), &access, owner, runs).await,
        ScheduleCommand::Add { name, cron, at, tz, prompt, target, owner, mode, missed, grace_secs } => {
            let identity = match owner {
                Some(o) => o.parse::<Identity>().map_err(|e| exit::fail(2, format!("--owner: {e}")))?,
                None => access.owners().first().cloned().unwrap_or_else(|| Identity::new("cli", "local")),
            };
            let Some(user) = access.user_for(&*users, &identity).await.map_err(fail)? else {
                return Err(exit::fail(
                    1,
                    format!(
                        "{identity} may not use Butler (not an owner, allowed, or paired); a job runs as its owner"
                    ),
                ));
            };
            let spec = JobSpec {
                name: Some(name),
                cron,
                at,
                tz: tz.unwrap_or_else(|| cfg.agent.timezone.clone()),
                prompt,
                target,
                mode: ScheduleMode::parse(&mode).ok_or_else(|| exit::fail(2, "--mode must be always or heartbeat"))?,
                missed: Missed::parse(&missed).ok_or_else(|| exit::fail(2, "--missed must be run_once or skip"))?,
                grace_secs,
            };
            let owner = JobOwner { identity, user_id: Some(user.id.clone()) };
            let new = jobs::build(&spec, &owner, ScheduleSource::Cli, now_ms()).map_err(|e| exit::fail(2, e))?;
            let mine = store.schedules_list(&ScheduleFilter::Owner(user.id.clone())).await.map_err(fail)?;
            if let Some(old) = mine.iter().find(|r| r.scope == new.scope && r.name == new.name) {
                return Err(exit::fail(1, format!("job `{}` exists already (#{}); remove it first", old.name, old.id)));
            }
            let row = store.schedule_put(&new).await.map_err(fail)?;
            let tz = parse_tz(&row.tz).unwrap_or(chrono_tz::UTC);
            let next = row.next_fire_ms.map_or_else(|| "never".into(), |t| rfc3339(t, tz));
            println!("added job #{} `{}` ({}), next {next}", row.id, row.name, jobs::when(&row));
            Ok(ExitCode::SUCCESS)
        }
        ScheduleCommand::Remove { id } => {
            match store.schedules_list(&ScheduleFilter::Id(id)).await.map_err(fail)?.first() {
                None => return Err(exit::fail(1, format!("there is no job #{id}; `butler schedule list` shows them"))),
                Some(row) if row.source == ScheduleSource::Config => {
                    return Err(exit::fail(
                        1,
                        format!(
                            "job #{id} `{}` comes from [[schedules]] in the config file; remove it there",
                            row.name
                        ),
                    ))
                }
                Some(_) => {}
            }
            store.schedule_set(id, &ScheduleChange::Remove).await.map_err(fail)?;
            println!("removed job #{id}");
            Ok(ExitCode::SUCCESS)
        }
        ScheduleCommand::RunNow { id } => {
            let ingress = InboxIngress::new(inbox, Arc::new(tokio::sync::Notify::new()));
            let schedules = Schedules::new(&cfg.schedules, store.clone(), users, access);
            match schedules.run_now(&ingress, id).await.map_err(fail)? {
                Some(run) => {
                    println!("queued run of job #{id} as event {} (a running Butler delivers it)", run.event_id);
                    Ok(ExitCode::SUCCESS)
                }
                None => Err(exit::fail(1, format!("there is no job #{id}; `butler schedule list` shows them"))),
            }
        }
        ScheduleCommand::Next { .. } => unreachable!("handled without the store"),
    }
}

async fn list(
    (store, users): (&dyn ScheduleStore, &dyn UserStore),
    access: &Access,
    owner: Option<String>,
    runs: usize,
) -> Result<ExitCode, ExitCode> {
    let fail = |e: crate::store::StoreError| exit::fail(1, e);
    let filter = match owner {
        None => ScheduleFilter::All,
        Some(o) => {
            let identity = o.parse::<Identity>().map_err(|e| exit::fail(2, format!("--owner: {e}")))?;
            match access.user_for(users, &identity).await.map_err(fail)? {
                Some(user) => ScheduleFilter::Owner(user.id),
                None => ScheduleFilter::Owner(String::new()),
            }
        }
    };
    let rows = store.schedules_list(&filter).await.map_err(fail)?;
    if rows.is_empty() {
        println!("no scheduled jobs");
    }
    for row in rows {
        let tz = parse_tz(&row.tz).unwrap_or(chrono_tz::UTC);
        let state = match (row.paused, row.next_fire_ms) {
            (true, _) => "paused".to_string(),
            (false, Some(t)) => format!("next {}", rfc3339(t, tz)),
            (false, None) => "done".to_string(),
        };
        println!(
            "#{}  {}  [{}]  owner {}  {}  -> {}  mode={} missed={} grace={}s  {state}",
            row.id,
            row.name,
            row.source.as_str(),
            row.owner,
            jobs::when(&row),
            row.target,
            row.mode.as_str(),
            row.missed.as_str(),
            row.grace_ms / 1000
        );
        let recent = store.schedule_runs(&RunQuery::Of { schedule_id: row.id, limit: runs }).await.map_err(fail)?;
        for run in recent {
            let ended = run.ended_ms.map_or_else(|| "-".to_string(), |t| rfc3339(t, tz));
            println!(
                "    run {} {}: {}{}{}  started {} ended {ended}",
                rfc3339(run.fire_at_ms, tz),
                run.kind.as_str(),
                run.status.as_str(),
                run.delivered_id.as_deref().map(|id| format!(" message {id}")).unwrap_or_default(),
                run.error.as_deref().map(|e| format!(" error: {e}")).unwrap_or_default(),
                rfc3339(run.started_ms, tz),
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
