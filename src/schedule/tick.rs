//! The tick's parts: the event of one run ([`event_for`]), what a tick reports, and the
//! limits and caches [`Schedules::tick`](super::Schedules::tick) works with (the claiming,
//! run-now and the recovery of runs claimed by a process that died before handing them over
//! are `impl Schedules` in `schedule/mod.rs`).
//!
//! Claiming is one store transaction (advance `next_fire_ms` by compare-and-swap, insert the run
//! under UNIQUE(schedule_id, fire_at_ms)), so any number of processes may tick at once: each
//! (job, fire time) has one winner, and only the winner queues the event `schedule:<id>:<ms>`
//! (the inbox would drop a repeat anyway). Nothing here runs a turn or sends anything.

use super::cron::{parse_tz, rfc3339};
use crate::config::ScheduleMode;
use crate::ids::{SCHEDULE_SOURCE, WEB_CHANNEL};
use crate::store::{RunKind, ScheduleRow};
use butler_channel::{Actor, ConversationKind, ConversationRef, EventBody, EventId, Identity, InboundEvent};
use croner::Cron;
use serde_json::json;
use std::collections::HashMap;

/// Due jobs read per query.
pub(super) const BATCH: usize = 512;
/// A tick stops after this many full batches (the next tick goes on).
pub(super) const MAX_BATCHES: usize = 64;
/// Due jobs claimed at once.
pub(super) const CONCURRENCY: usize = 8;
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
pub(super) struct Caches {
    pub(super) crons: HashMap<String, Option<Cron>>,
    pub(super) kinds: HashMap<String, ConversationKind>,
}

/// What became of one due job.
pub(super) enum Outcome {
    Fired,
    Skipped,
    Lost,
    Nothing,
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
        row.target.parse::<ConversationRef>().unwrap_or_else(|_| ConversationRef::new(WEB_CHANNEL, "schedules"));
    InboundEvent {
        id: EventId(format!("{SCHEDULE_SOURCE}:{}:{fire_at}", row.id)),
        actor: Actor::new(owner),
        conversation,
        kind: conv_kind,
        addressed: true,
        reply_to: None,
        message_id: None,
        body: EventBody::Trigger {
            source: SCHEDULE_SOURCE.to_string(),
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
        attachments: Vec::new(),
    }
}
