//! Rows of scheduled jobs and their runs. Times are Unix milliseconds. Plain data: nothing here
//! computes a fire time or touches the clock.

use serde::{Deserialize, Serialize};

/// Where a scheduled job was defined.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScheduleSource {
    /// `[[schedules]]` in the config file (upserted at start).
    Config,
    /// The `schedule` tool, for the user who asked.
    Tool,
    /// `butler schedule add`.
    Cli,
}

impl ScheduleSource {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Config => "config",
            Self::Tool => "tool",
            Self::Cli => "cli",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "config" => Self::Config,
            "tool" => Self::Tool,
            "cli" => Self::Cli,
            _ => return None,
        })
    }
}

/// A scheduled job as written: exactly one of `cron` and `at_ms` is set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewSchedule {
    /// Names are unique within a scope: `config`, or `user:<user id>` for the user's own jobs.
    pub scope: String,
    pub name: String,
    pub source: ScheduleSource,
    /// The owner's identity (`telegram:123`); the job runs as this identity's user.
    pub owner: String,
    pub owner_user: Option<String>,
    /// A 5-field crontab read in `tz`.
    pub cron: Option<String>,
    /// A one-shot time.
    pub at_ms: Option<i64>,
    /// IANA zone.
    pub tz: String,
    pub prompt: String,
    /// The conversation the result goes to (`channel:id[/thread]`).
    pub target: String,
    pub mode: crate::config::ScheduleMode,
    pub missed: crate::config::Missed,
    /// `run_once`: how late a missed fire time may still run.
    pub grace_ms: i64,
    /// When it fires next; `None` when nothing is left to fire.
    pub next_fire_ms: Option<i64>,
}

/// A stored job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduleRow {
    pub id: i64,
    pub scope: String,
    pub name: String,
    pub source: ScheduleSource,
    pub owner: String,
    pub owner_user: Option<String>,
    pub cron: Option<String>,
    pub at_ms: Option<i64>,
    pub tz: String,
    pub prompt: String,
    pub target: String,
    pub mode: crate::config::ScheduleMode,
    pub missed: crate::config::Missed,
    pub grace_ms: i64,
    pub paused: bool,
    pub next_fire_ms: Option<i64>,
    pub created_ms: i64,
    pub updated_ms: i64,
}

/// Which jobs to list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScheduleFilter {
    Id(i64),
    /// The jobs of one user (by user id), by id.
    Owner(String),
    /// The jobs of one scope (`config`), by id.
    Scope(String),
    /// Every job, by id.
    All,
    /// Active jobs (not paused, still firing) with `next_fire_ms <= now_ms`, earliest first;
    /// `now_ms = i64::MAX` lists the next ones to fire.
    Due {
        now_ms: i64,
        limit: usize,
    },
}

/// A change to one job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScheduleChange {
    Pause,
    Resume,
    /// Deletes the job and its runs.
    Remove,
    /// Compare-and-swap of `next_fire_ms` from `from` to `to` (`None`: done).
    Advance {
        from: i64,
        to: Option<i64>,
    },
}

/// Why a run happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunKind {
    /// At its fire time.
    Scheduled,
    /// Late, after downtime (`missed = "run_once"`).
    CatchUp,
    /// `butler schedule run-now`.
    Manual,
}

impl RunKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Scheduled => "scheduled",
            Self::CatchUp => "catch_up",
            Self::Manual => "manual",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "scheduled" => Self::Scheduled,
            "catch_up" => Self::CatchUp,
            "manual" => Self::Manual,
            _ => return None,
        })
    }
}

/// Claiming one (schedule, fire time).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunClaim {
    pub schedule_id: i64,
    pub fire_at_ms: i64,
    pub kind: RunKind,
    /// `schedule:<id>:<fire_at_ms>`.
    pub event_id: String,
    /// The outbox key of the reply (`<event id>:reply`).
    pub outbox_key: String,
    pub started_ms: i64,
    /// `(from, to)`: moves `next_fire_ms` in the same transaction; the claim fails (nothing
    /// written) when the job no longer fires at `from`.
    pub advance: Option<(i64, Option<i64>)>,
}

/// Where a run is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Claimed, not yet in the inbox.
    Claimed,
    /// In the inbox, not yet decided.
    Queued,
    /// Its turn runs (or waits for a session).
    Running,
    /// The reply is in the outbox, not delivered yet (`error` holds the last failure).
    Delivering,
    Delivered,
    /// A heartbeat with nothing to say: nothing delivered.
    Silent,
    /// Not run (the reason is the error).
    Dropped,
    Failed,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Claimed => "claimed",
            Self::Queued => "queued",
            Self::Running => "running",
            Self::Delivering => "delivering",
            Self::Delivered => "delivered",
            Self::Silent => "silent",
            Self::Dropped => "dropped",
            Self::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "claimed" => Self::Claimed,
            "queued" => Self::Queued,
            "running" => Self::Running,
            "delivering" => Self::Delivering,
            "delivered" => Self::Delivered,
            "silent" => Self::Silent,
            "dropped" => Self::Dropped,
            "failed" => Self::Failed,
            _ => return None,
        })
    }
}

/// One run of a job, with its delivery read from the inbox and outbox.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunRow {
    pub schedule_id: i64,
    pub fire_at_ms: i64,
    pub kind: RunKind,
    pub event_id: String,
    pub outbox_key: String,
    pub status: RunStatus,
    pub error: Option<String>,
    pub started_ms: i64,
    pub ended_ms: Option<i64>,
    /// The platform id of the delivered message (its first chunk).
    pub delivered_id: Option<String>,
    /// Delivery attempts so far (failures are retried with backoff by the outbox).
    pub delivery_attempts: i32,
}

/// Which runs to list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunQuery {
    /// A job's runs, newest fire time first.
    Of { schedule_id: i64, limit: usize },
    /// Runs claimed at or before `claimed_before_ms` whose event never reached the inbox.
    Unqueued { claimed_before_ms: i64, limit: usize },
}
