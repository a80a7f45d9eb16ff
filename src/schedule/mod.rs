//! The scheduler: cron jobs with time zones and one-shot `at` jobs, from the config file
//! (`[[schedules]]`), the `schedule` tool (a user's own jobs) and `butler schedule`, each fired
//! exactly once per fire time however many processes share the database, and delivered to any
//! channel.
//!
//! Scheduled jobs enter Butler like everything else: the tick turns a due (job, fire time) into
//! an `InboundEvent` (id `schedule:<id>:<fire_at_ms>`, actor the owner, conversation the
//! target, body `EventBody::Trigger { source: "schedule", .. }`) through the ingress; triage
//! decides about it (`src/triage/scheduled.rs`): an agent turn in the job's own session
//! (`schedule:<id>`) as the owner's user, through the normal permission engine, so a job never
//! has more rights than its owner. The scheduler only computes and claims fire times; what it
//! needs to know about people it asks a [`Directory`] (access control answers). Heartbeat jobs are quiet turns: delivered only when the model
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
//! This module must never run a turn or send a message itself, never decide about a due job's
//! event (triage does), and never let a job act as anyone but its owner.

mod check;
pub mod cron;
mod fields;
pub mod jobs;
pub mod plan;
pub mod tick;

pub use check::check_config;
pub use jobs::{JobOwner, JobSpec};
pub use tick::{event_for, TickReport, HEARTBEAT_NOTE};

use crate::config::ScheduleConfig;
use crate::store::{
    now_ms, RunClaim, RunKind, RunQuery, RunRow, ScheduleChange, ScheduleFilter, ScheduleRow, ScheduleSource,
    ScheduleStore, StoreError, UserRow, UserStore,
};
use async_trait::async_trait;
use butler_channel::{ConversationKind, ConversationRef, Identity, Ingress};
use cron::{parse_cron, parse_tz, rfc3339};
use futures::StreamExt;
use plan::plan;
use std::sync::Arc;
use std::time::Duration;
use tick::{Caches, Outcome, BATCH, CONCURRENCY, MAX_BATCHES, RECOVER_AFTER_MS};
use tokio_util::sync::CancellationToken;

/// How often the tick looks for due jobs, by default.
pub const DEFAULT_TICK: Duration = Duration::from_secs(1);

/// What the scheduler asks about people and conversations. Access control answers it
/// (`triage::Access`); the scheduler never decides who may do what.
#[async_trait]
pub trait Directory: Send + Sync {
    /// The owner of a config job that names none: the first configured owner, if any.
    fn default_owner(&self) -> Option<Identity>;
    /// The id of the user behind `identity`, if that identity may use Butler.
    async fn user_id(&self, store: &dyn UserStore, identity: &Identity) -> Result<Option<String>, StoreError>;
    /// Whether the config names `conversation` (or its chat) as a group.
    fn is_group(&self, conversation: &ConversationRef) -> bool;
}

pub struct Schedules {
    config: Vec<ScheduleConfig>,
    store: Arc<dyn ScheduleStore>,
    /// Who owns a config job, and whether a target is a group.
    users: Arc<dyn UserStore>,
    directory: Arc<dyn Directory>,
    every: Duration,
}

impl Schedules {
    pub fn new(
        cfg: &[ScheduleConfig],
        store: Arc<dyn ScheduleStore>,
        users: Arc<dyn UserStore>,
        directory: Arc<dyn Directory>,
    ) -> Self {
        Self { config: cfg.to_vec(), store, users, directory, every: DEFAULT_TICK }
    }

    /// Ticks every `every` instead of every second (tests, benchmarks).
    pub fn with_tick(mut self, every: Duration) -> Self {
        self.every = every.max(Duration::from_millis(10));
        self
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
        let default_owner = self.directory.default_owner();
        let mut names = Vec::new();
        for cfg in &self.config {
            let Some(identity) = cfg.owner.clone().or_else(|| default_owner.clone()) else { continue };
            let user_id = self.directory.user_id(&*self.users, &identity).await?;
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
            if now - recovered_at >= RECOVER_AFTER_MS {
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

    /// Fires every job due at `now_ms`: reads them in batches (earliest first) and claims up to
    /// [`CONCURRENCY`] at once, so that commits of several claims share the database's flush.
    /// Errors of single jobs are logged and leave them due for the next tick.
    pub async fn tick(&self, ingress: &dyn Ingress, now_ms: i64) -> Result<TickReport, StoreError> {
        let mut report = TickReport::default();
        let mut caches = Caches::default();
        for _ in 0..MAX_BATCHES {
            let due = self.store.schedules_list(&ScheduleFilter::Due { now_ms, limit: BATCH }).await?;
            let (n, before) = (due.len(), report.fired + report.skipped + report.lost);
            report.due += n;
            for row in &due {
                if let Some(expr) = &row.cron {
                    caches.crons.entry(expr.clone()).or_insert_with(|| parse_cron(expr).ok());
                }
                self.target_kind(&row.target, &mut caches).await?;
            }
            let caches = &caches;
            let mut outcomes = futures::stream::iter(due)
                .map(|row| async move {
                    self.fire_due(&row, now_ms, ingress, caches).await.unwrap_or_else(|e| {
                        tracing::warn!(schedule = row.id, error = %e, "could not fire a due job; trying again next tick");
                        Outcome::Nothing
                    })
                })
                .buffer_unordered(CONCURRENCY);
            while let Some(outcome) = outcomes.next().await {
                match outcome {
                    Outcome::Fired => report.fired += 1,
                    Outcome::Skipped => report.skipped += 1,
                    Outcome::Lost => report.lost += 1,
                    Outcome::Nothing => {}
                }
            }
            if n < BATCH || report.fired + report.skipped + report.lost == before {
                break;
            }
        }
        let ahead = self.store.schedules_list(&ScheduleFilter::Due { now_ms: i64::MAX, limit: 1 }).await?;
        report.next_due_ms = ahead.first().and_then(|r| r.next_fire_ms);
        Ok(report)
    }

    async fn fire_due(
        &self,
        row: &ScheduleRow,
        now_ms: i64,
        ingress: &dyn Ingress,
        caches: &Caches,
    ) -> Result<Outcome, StoreError> {
        let Some(due) = row.next_fire_ms else { return Ok(Outcome::Nothing) };
        let cron = row.cron.as_ref().and_then(|expr| caches.crons.get(expr).cloned().flatten());
        let tz = parse_tz(&row.tz).ok().filter(|_| row.cron.is_none() || cron.is_some());
        let Some(tz) = tz else {
            // Stored jobs are checked when written; one that no longer parses can never fire.
            tracing::error!(schedule = row.id, cron = ?row.cron, tz = %row.tz, "job cannot be computed; disabling it");
            self.store.schedule_set(row.id, &ScheduleChange::Advance { from: due, to: None }).await?;
            return Ok(Outcome::Nothing);
        };
        let Some(plan) = plan(row, cron.as_ref(), tz, now_ms) else { return Ok(Outcome::Nothing) };
        let Some((fire_at, kind)) = plan.run else {
            if !self.store.schedule_set(row.id, &ScheduleChange::Advance { from: due, to: plan.next }).await? {
                return Ok(Outcome::Lost);
            }
            tracing::info!(schedule = row.id, name = %row.name, missed = %rfc3339(due, tz), "missed fire time skipped");
            return Ok(Outcome::Skipped);
        };
        let conv_kind = caches.kinds.get(&row.target).copied().unwrap_or(ConversationKind::Direct);
        Ok(match self.claim(row, fire_at, kind, Some((due, plan.next)), conv_kind, ingress).await? {
            Some(_) => Outcome::Fired,
            None => Outcome::Lost,
        })
    }

    /// Claims (job, `fire_at`) and, if this process won, queues its event. A failed hand-over
    /// is left to [`Schedules::recover`].
    async fn claim(
        &self,
        row: &ScheduleRow,
        fire_at: i64,
        kind: RunKind,
        advance: Option<(i64, Option<i64>)>,
        conv_kind: ConversationKind,
        ingress: &dyn Ingress,
    ) -> Result<Option<RunRow>, StoreError> {
        let event = event_for(row, fire_at, kind, conv_kind);
        let claim = RunClaim {
            schedule_id: row.id,
            fire_at_ms: fire_at,
            kind,
            event_id: event.id.0.clone(),
            outbox_key: crate::store::reply_key(&event.id.0),
            started_ms: now_ms(),
            advance,
        };
        let Some(run) = self.store.schedule_claim(&claim).await? else { return Ok(None) };
        tracing::info!(schedule = row.id, name = %row.name, fire_at = fire_at, kind = kind.as_str(), "job fired");
        if let Err(e) = ingress.accept(event).await {
            tracing::warn!(schedule = row.id, error = %e, "could not queue a claimed run; it is handed over later");
        }
        Ok(Some(run))
    }

    /// Runs job `id` now (`butler schedule run-now`), through the same claim as the tick; its
    /// next fire time is left alone. `None` when there is no such job.
    pub async fn run_now(&self, ingress: &dyn Ingress, id: i64) -> Result<Option<RunRow>, StoreError> {
        let Some(row) = self.store.schedules_list(&ScheduleFilter::Id(id)).await?.into_iter().next() else {
            return Ok(None);
        };
        let kind = self.target_kind(&row.target, &mut Caches::default()).await?;
        // A millisecond already claimed (two run-nows at once) moves on to the next one.
        for offset in 0..5 {
            if let Some(run) = self.claim(&row, now_ms() + offset, RunKind::Manual, None, kind, ingress).await? {
                return Ok(Some(run));
            }
        }
        Err(StoreError::Conflict(format!("job #{id} is being run right now")))
    }

    /// Hands over runs claimed at least [`RECOVER_AFTER_MS`] before `now_ms` whose event never
    /// reached the inbox (their claimer died in between). Returns how many were queued.
    pub async fn recover(&self, ingress: &dyn Ingress, now_ms: i64) -> Result<usize, StoreError> {
        let query = RunQuery::Unqueued { claimed_before_ms: now_ms - RECOVER_AFTER_MS, limit: 100 };
        let mut queued = 0;
        let mut caches = Caches::default();
        for run in self.store.schedule_runs(&query).await? {
            let rows = self.store.schedules_list(&ScheduleFilter::Id(run.schedule_id)).await?;
            let Some(row) = rows.first() else { continue };
            let kind = self.target_kind(&row.target, &mut caches).await?;
            if ingress.accept(event_for(row, run.fire_at_ms, run.kind, kind)).await.is_ok() {
                tracing::info!(schedule = row.id, fire_at = run.fire_at_ms, "handed over a run a dead process claimed");
                queued += 1;
            }
        }
        Ok(queued)
    }

    /// Group when the config or the store says the target is a group; else direct.
    async fn target_kind(&self, target: &str, caches: &mut Caches) -> Result<ConversationKind, StoreError> {
        if let Some(kind) = caches.kinds.get(target) {
            return Ok(*kind);
        }
        let configured_group = target.parse::<ConversationRef>().ok().is_some_and(|c| self.directory.is_group(&c));
        let kind = if configured_group {
            ConversationKind::Group
        } else {
            self.users.conversation_get(target).await?.map_or(ConversationKind::Direct, |c| c.kind)
        };
        caches.kinds.insert(target.to_string(), kind);
        Ok(kind)
    }
}

/// How long the loop sleeps: until the next fire time if that is sooner than `every`.
pub fn sleep_for(next_due_ms: Option<i64>, now_ms: i64, every: Duration) -> Duration {
    let every_ms = every.as_millis() as i64;
    let wait = next_due_ms.map_or(every_ms, |t| (t - now_ms).clamp(0, every_ms));
    Duration::from_millis(wait as u64)
}
