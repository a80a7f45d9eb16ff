//! `[[schedules]]`: cron-scheduled jobs from the config file.

use butler_channel::{ConversationRef, Identity};
use serde::{Deserialize, Serialize};

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
}

fn utc() -> String {
    "UTC".into()
}
