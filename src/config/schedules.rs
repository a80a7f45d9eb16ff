//! `[[schedules]]`: cron-scheduled jobs from the config file (briefings, reports, heartbeats).
//!
//! Plain data: parsing the cron and the zone, and checking them, happen in `crate::schedule`
//! (its `check.rs` validates this section). Nothing here may read the clock or the store, or
//! import a component.

use butler_channel::{ConversationRef, Identity};
use serde::{Deserialize, Serialize};

/// How long after a missed fire time a `run_once` job still catches up, by default: an hour.
pub const DEFAULT_GRACE_SECS: u64 = 3600;

/// When a job delivers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ScheduleMode {
    /// Always deliver the answer.
    #[default]
    Always,
    /// Deliver only when the agent finds something worth saying.
    Heartbeat,
}

impl ScheduleMode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Always => "always",
            Self::Heartbeat => "heartbeat",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "always" => Self::Always,
            "heartbeat" => Self::Heartbeat,
            _ => return None,
        })
    }
}

/// What to do about fire times missed while Butler was down.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Missed {
    /// Skip them.
    Skip,
    /// Run once for all of them, if the last one is within the grace period.
    #[default]
    RunOnce,
}

impl Missed {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Skip => "skip",
            Self::RunOnce => "run_once",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "skip" => Self::Skip,
            "run_once" => Self::RunOnce,
            _ => return None,
        })
    }
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleConfig {
    pub name: String,
    /// Standard 5-field crontab (`0 8 * * 1-5`).
    pub cron: String,
    /// IANA time zone the cron is read in.
    #[serde(default = "utc")]
    pub tz: String,
    pub prompt: String,
    /// Where the result goes (`telegram:123456789`, `slack:C024BE91L`, `web:briefings`).
    pub target: ConversationRef,
    /// Whose job it is (tools, memory and permissions); default: the first owner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<Identity>,
    #[serde(default)]
    pub mode: ScheduleMode,
    #[serde(default)]
    pub missed: Missed,
    /// `run_once`: a missed fire time still runs (once) if Butler is back within this many seconds.
    #[serde(default = "default_grace_secs")]
    pub grace_secs: u64,
}

fn utc() -> String {
    "UTC".into()
}

fn default_grace_secs() -> u64 {
    DEFAULT_GRACE_SECS
}
