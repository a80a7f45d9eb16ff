//! `schedule` and `schedules_list`: the user's own scheduled jobs ("every weekday at 8, brief me
//! on my calendar", "remind me in 20 minutes"). `schedule` creates a job (a recurring 5-field
//! cron read in a time zone, default the user's, or a one-shot `at` time), pauses, resumes or
//! cancels one; it is mutating, so under the default permission mode the user approves each
//! change. `schedules_list` (read-only) lists them with the next fire time and the last run.
//!
//! A job belongs to the user who asked and runs as them (their tools, memory and permissions).
//! Only they can change it: a job id of anyone else is treated as nonexistent. A job may deliver
//! only where the user may (`schedule::jobs::may_target`). These tools never fire a job.

use super::plain::{mask_text, preview};
use crate::config::{Missed, ScheduleMode, DEFAULT_GRACE_SECS};
use crate::schedule::cron::{human, parse_tz};
use crate::schedule::jobs::{self, JobOwner, JobSpec};
use crate::store::{now_ms, ScheduleChange, ScheduleRow, ScheduleSource, StoreError};
use crate::tools::{parse_args, Action, Tool, ToolCtx, ToolError, ToolSpec};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;

/// Jobs one user may have.
pub const MAX_JOBS_PER_USER: usize = 100;

pub fn schedule_tools() -> Vec<Arc<dyn Tool>> {
    vec![Arc::new(ScheduleTool::new()), Arc::new(SchedulesList::new())]
}

fn store_err(e: StoreError) -> ToolError {
    ToolError::Failed(format!("scheduled jobs are unavailable right now ({e})"))
}

pub struct ScheduleTool(ToolSpec);
pub struct SchedulesList(ToolSpec);

impl ScheduleTool {
    fn new() -> Self {
        Self(ToolSpec {
            name: "schedule".into(),
            description: "Create, pause, resume or cancel the user's scheduled jobs. At each fire time a job runs \
                          `prompt` as a turn of yours (with the user's tools and memory) and delivers your answer. \
                          Recurring: `cron`, 5 fields (minute hour day-of-month month day-of-week) read in `tz` \
                          (default: the user's time zone), e.g. \"0 8 * * 1-5\" = weekdays at 8:00. One-shot \
                          (reminders): `at`, e.g. \"in 20 minutes\", \"2025-03-10 08:00\" (local) or RFC 3339. \
                          Write `prompt` as an instruction for that moment (\"Remind me to stretch.\"). \
                          mode \"heartbeat\": deliver only when something is worth saying. `target`: where to \
                          deliver (default: this conversation). Pause, resume and cancel take the job's `id` \
                          (see schedules_list)."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": ["create", "pause", "resume", "cancel"]},
                    "id": {"type": "integer", "description": "pause/resume/cancel: the job id"},
                    "name": {"type": "string", "description": "create: a short name (default: from the prompt)"},
                    "cron": {"type": "string", "description": "create: 5-field crontab for a recurring job"},
                    "at": {"type": "string", "description": "create: one-shot time (\"in 20 minutes\", local time, RFC 3339)"},
                    "tz": {"type": "string", "description": "create: IANA time zone (default: the user's)"},
                    "prompt": {"type": "string", "description": "create: what to do at each fire time"},
                    "target": {"type": "string", "description": "create: conversation channel:id (default: this one)"},
                    "mode": {"type": "string", "enum": ["always", "heartbeat"]}
                },
                "required": ["action"],
                "additionalProperties": false
            }),
            read_only: false,
        })
    }
}

impl SchedulesList {
    fn new() -> Self {
        Self(ToolSpec {
            name: "schedules_list".into(),
            description: "List the user's scheduled jobs: ids, names, times, target, next fire time and last run."
                .into(),
            parameters: json!({"type": "object", "properties": {}, "additionalProperties": false}),
            read_only: true,
        })
    }
}

#[derive(Deserialize)]
struct Args {
    action: String,
    id: Option<i64>,
    name: Option<String>,
    cron: Option<String>,
    at: Option<String>,
    tz: Option<String>,
    prompt: Option<String>,
    target: Option<String>,
    mode: Option<String>,
}

/// The user's own job `id`; anyone else's is reported as nonexistent.
async fn own_job(ctx: &ToolCtx, id: i64) -> Result<ScheduleRow, ToolError> {
    ctx.store
        .schedule(id)
        .await
        .map_err(store_err)?
        .ok_or_else(|| ToolError::Failed(format!("there is no job #{id} of yours (schedules_list shows them)")))
}

impl ScheduleTool {
    async fn create(&self, ctx: &ToolCtx, args: Args) -> Result<String, ToolError> {
        let mode = match args.mode.as_deref() {
            None => ScheduleMode::Always,
            Some(m) => ScheduleMode::parse(m).ok_or_else(|| ToolError::InvalidArgs(format!("unknown mode `{m}`")))?,
        };
        let spec = JobSpec {
            name: args.name,
            cron: args.cron,
            at: args.at,
            tz: args.tz.unwrap_or_else(|| ctx.user.timezone.clone()),
            prompt: args.prompt.unwrap_or_default(),
            target: args.target.unwrap_or_else(|| ctx.conversation.to_string()),
            mode,
            missed: Missed::RunOnce,
            grace_secs: DEFAULT_GRACE_SECS,
        };
        let named = spec.name.is_some();
        let owner = JobOwner { identity: ctx.identity.clone(), user_id: Some(ctx.user.id.clone()) };
        let mut new = jobs::build(&spec, &owner, ScheduleSource::Tool, now_ms())
            .map_err(|e| ToolError::InvalidArgs(e.to_string()))?;
        let target = jobs::check_target(&new.target).map_err(|e| ToolError::InvalidArgs(e.to_string()))?;
        if let Err(why) = ctx.store.may_target(&target).await.map_err(store_err)? {
            return Err(ToolError::Failed(format!("refused: {why}")));
        }
        let mine = ctx.store.schedules().await.map_err(store_err)?;
        if mine.len() >= MAX_JOBS_PER_USER {
            return Err(ToolError::Failed(format!("you have {MAX_JOBS_PER_USER} jobs already; cancel some first")));
        }
        let taken = |name: &str| mine.iter().find(|r| r.scope == new.scope && r.name == name);
        if let Some(existing) = taken(&new.name) {
            if named {
                return Err(ToolError::Failed(format!(
                    "you already have a job named `{}` (#{}); cancel it first or choose another name",
                    existing.name, existing.id
                )));
            }
            let base = new.name.clone();
            new.name = (2..).map(|n| format!("{base}-{n}")).find(|n| taken(n).is_none()).unwrap_or(base);
        }
        let row = ctx.store.schedule_put(&new).await.map_err(store_err)?;
        tracing::info!(schedule = row.id, user = %ctx.user.id, "scheduled job created");
        let tz = parse_tz(&row.tz).unwrap_or(chrono_tz::UTC);
        let next = row.next_fire_ms.map_or_else(|| "never".to_string(), |t| human(t, tz));
        Ok(format!(
            "Scheduled job #{} `{}`: {}, delivered to {}{}. Next run: {next}.",
            row.id,
            row.name,
            jobs::when(&row),
            row.target,
            if row.mode == ScheduleMode::Heartbeat { " (only when something is worth saying)" } else { "" }
        ))
    }

    async fn change(&self, ctx: &ToolCtx, action: &str, id: Option<i64>) -> Result<String, ToolError> {
        let id = id.ok_or_else(|| ToolError::InvalidArgs(format!("`{action}` needs the job's `id`")))?;
        let row = own_job(ctx, id).await?;
        let (change, done) = match action {
            "pause" => (ScheduleChange::Pause, "paused"),
            "resume" => (ScheduleChange::Resume, "resumed"),
            _ if row.source == ScheduleSource::Config => {
                return Err(ToolError::Failed(format!(
                    "job #{id} comes from the config file; the operator removes it there (you can pause it)"
                )))
            }
            _ => (ScheduleChange::Remove, "cancelled"),
        };
        ctx.store.schedule_set(id, &change).await.map_err(store_err)?;
        tracing::info!(schedule = id, user = %ctx.user.id, action, "scheduled job changed");
        Ok(format!("Job #{id} `{}` {done}.", row.name))
    }
}

#[async_trait]
impl Tool for ScheduleTool {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    fn action(&self, _ctx: &ToolCtx, args: &Value) -> Action {
        let s = |k: &str| args.get(k).and_then(Value::as_str).unwrap_or("");
        let id = args.get("id").and_then(Value::as_i64).map_or_else(|| "?".to_string(), |i| i.to_string());
        let summary = match s("action") {
            "create" => {
                let when = match (s("cron"), s("at")) {
                    ("", at) => format!("once at {at}"),
                    (cron, _) => format!(
                        "every `{cron}`{}",
                        if s("tz").is_empty() { String::new() } else { format!(" ({})", s("tz")) }
                    ),
                };
                let to = if s("target").is_empty() { "this conversation" } else { s("target") };
                format!(
                    "schedule a job for you, {when}, delivered to {to}: \"{}\"",
                    mask_text(&preview(s("prompt"), 200))
                )
            }
            "cancel" => format!("cancel (delete) your scheduled job #{id}"),
            other => format!("{other} your scheduled job #{id}"),
        };
        Action { summary, ..Action::default() }
    }

    async fn call(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let args: Args = parse_args(args)?;
        match args.action.as_str() {
            "create" => self.create(ctx, args).await,
            "pause" | "resume" | "cancel" => {
                let action = args.action.clone();
                self.change(ctx, &action, args.id).await
            }
            other => Err(ToolError::InvalidArgs(format!("unknown action `{other}`"))),
        }
    }
}

#[async_trait]
impl Tool for SchedulesList {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    async fn call(&self, ctx: &ToolCtx, _args: Value) -> Result<String, ToolError> {
        let rows = ctx.store.schedules().await.map_err(store_err)?;
        if rows.is_empty() {
            return Ok("The user has no scheduled jobs.".into());
        }
        let mut lines = Vec::with_capacity(rows.len());
        for row in rows {
            let last = ctx.store.schedule_last_run(row.id).await.map_err(store_err)?;
            lines.push(jobs::describe(&row, last.as_ref()));
        }
        Ok(lines.join("\n"))
    }
}
