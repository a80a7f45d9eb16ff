//! The tick: finds due jobs (one indexed query), applies the missed-run policy, claims each fire
//! time and hands its event to the ingress; plus run-now and the recovery of runs claimed by a
//! process that died before handing them over.
//!
//! Claiming is one store transaction (advance `next_fire_ms` by compare-and-swap, insert the run
//! under UNIQUE(schedule_id, fire_at_ms)), so any number of processes may tick at once: each
//! (job, fire time) has one winner, and only the winner queues the event `schedule:<id>:<ms>`
//! (the inbox would drop a repeat anyway). The tick never runs a turn and never sends anything.

use super::cron::{parse_cron, parse_tz, rfc3339};
use super::plan::plan;
use super::{Schedules, SOURCE};
use crate::config::ScheduleMode;
use crate::store::{
    now_ms, RunClaim, RunKind, RunQuery, RunRow, ScheduleChange, ScheduleFilter, ScheduleRow, StoreError,
};
use butler_channel::{Actor, ConversationKind, ConversationRef, EventBody, EventId, Identity, InboundEvent, Ingress};
use croner::Cron;
use futures::StreamExt;
use serde_json::json;
use std::collections::HashMap;

/// Due jobs read per query.
const BATCH: usize = 512;
/// A tick stops after this many full batches (the next tick goes on).
const MAX_BATCHES: usize = 64;
/// Due jobs claimed at once.
const CONCURRENCY: usize = 8;
/// A run claimed this long ago without an inbox row was lost by a dying process.
pub const RECOVER_AFTER_MS: i64 = 30_000;

/// What the heartbeat prompt adds: how to say "nothing".
pub const HEARTBEAT_NOTE: &str = "This is a heartbeat check: if nothing is worth telling me right now, answer exactly \
     NOTHING_TO_REPORT and nothing else (then I am not disturbed); otherwise tell me briefly what I should know.";

/// What one tick did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TickReport {
    /// Due jobs looked at.
    pub due: usize,
    /// Runs claimed and queued by this process.
    pub fired: usize,
    /// Missed fire times skipped by the policy.
    pub skipped: usize,
    /// Jobs another process claimed first (or changed meanwhile).
    pub lost: usize,
    /// The earliest fire time still ahead, if any.
    pub next_due_ms: Option<i64>,
}

/// Per-tick caches: parsed crons and target conversation kinds.
#[derive(Default)]
struct Caches {
    crons: HashMap<String, Option<Cron>>,
    kinds: HashMap<String, ConversationKind>,
}

/// What became of one due job.
enum Outcome {
    Fired,
    Skipped,
    Lost,
    Nothing,
}

impl Schedules {
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
            outbox_key: crate::agent::reply_key(&event.id.0),
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
        let configured_group = target.parse::<ConversationRef>().ok().is_some_and(|c| self.access.group(&c).is_some());
        let kind = if configured_group {
            ConversationKind::Group
        } else {
            self.store.conversation_get(target).await?.map_or(ConversationKind::Direct, |c| c.kind)
        };
        caches.kinds.insert(target.to_string(), kind);
        Ok(kind)
    }
}

/// The event of one run: from the owner, in the target conversation, carrying the prompt (and
/// for heartbeats how to say "nothing"), id `schedule:<id>:<fire_at_ms>`.
pub fn event_for(row: &ScheduleRow, fire_at: i64, kind: RunKind, conv_kind: ConversationKind) -> InboundEvent {
    let tz = parse_tz(&row.tz).unwrap_or(chrono_tz::UTC);
    let fire = rfc3339(fire_at, tz);
    let mut text = format!(
        "[Scheduled job #{} \"{}\", due {fire} ({}){}]\n\n{}",
        row.id,
        row.name,
        row.tz,
        if kind == RunKind::CatchUp { ", run late after downtime" } else { "" },
        row.prompt
    );
    if row.mode == ScheduleMode::Heartbeat {
        text.push_str("\n\n");
        text.push_str(HEARTBEAT_NOTE);
    }
    let owner = row.owner.parse::<Identity>().unwrap_or_else(|_| Identity::new("cli", "local"));
    let conversation =
        row.target.parse::<ConversationRef>().unwrap_or_else(|_| ConversationRef::new("web", "schedules"));
    InboundEvent {
        id: EventId(format!("{SOURCE}:{}:{fire_at}", row.id)),
        actor: Actor::new(owner),
        conversation,
        kind: conv_kind,
        addressed: true,
        reply_to: None,
        message_id: None,
        body: EventBody::Trigger {
            source: SOURCE.to_string(),
            text,
            payload: json!({
                "schedule": row.id,
                "name": row.name,
                "fire_at": fire,
                "fire_at_ms": fire_at,
                "mode": row.mode.as_str(),
                "kind": kind.as_str(),
            }),
        },
        at_ms: fire_at,
    }
}
