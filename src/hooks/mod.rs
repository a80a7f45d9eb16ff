//! Hooks: the user's own commands and HTTP endpoints, called around tool calls, sessions and
//! compaction (`[[hooks]]` in the configuration). A `pre_tool_use` hook may veto a tool call;
//! every other event is only observed. This module must never let a hook hang, crash or panic
//! the turn that calls it, never wait longer than the hooks' timeouts (plus a short grace to
//! kill them), and never hand Butler's environment (its secrets) to a hook process.
//!
//! # What [`Hooks::run`] does
//!
//! - It selects every hook configured for the event, in configuration order. For the tool
//!   events (`pre_tool_use`, `post_tool_use`) the hook's `matcher` must match the tool name as a
//!   glob (`*` any run of characters, `?` one character: `shell`, `file_*`, `*`; no tool name
//!   counts as the empty name, which only `*`-only patterns match). For the other events the
//!   matcher is ignored.
//! - It sends them all the same JSON object, concurrently, each in its own task with its own
//!   `timeout_secs` (the configured value, kept within 1..=3600): the payload's own fields,
//!   then `"event": "<event name>"` and `"tool": "<name>"` or `null` (these two always win over
//!   payload fields of the same name). A payload that is not an object goes under `"data"`.
//! - Each hook ends in one of three ways: ok, an explicit block (with a reason), or a failure
//!   (with a reason saying what went wrong, e.g. ``hook `./check.sh` timed out after 5s``).
//!
//! # Command hooks (`type = "command"`)
//!
//! `/bin/sh -c <command>` in Butler's working directory, in a process group of its own, with:
//! - the JSON on stdin (then closed) and in `BUTLER_HOOK_PAYLOAD` (left out when the JSON is
//!   longer than 64 KiB, which the system would refuse; stdin always has all of it);
//! - `BUTLER_HOOK_EVENT` (the event name) and `BUTLER_HOOK_TOOL` (the tool name, empty for
//!   events without a tool);
//! - otherwise only `PATH`, `HOME` and `LANG` from Butler's environment: never its keys, tokens
//!   or database URLs. A hook that needs a secret reads it from its own file.
//!
//! With `sandbox = true` the same `/bin/sh -c <command>` runs inside the shell tool's bubblewrap
//! sandbox (`crate::tools::sandbox`): its own PID, mount, IPC and UTS namespaces, no network
//! unless the hook's `network = true`, the system read-only, and as working directory and `HOME`
//! a fresh empty scratch directory (removed afterwards) instead of Butler's: none of Butler's
//! files, config, database or `/proc`. Its environment is `PATH` (`/usr/local/bin:/usr/bin:/bin`),
//! `HOME`, Butler's `LANG` and `BUTLER_HOOK_EVENT`/`BUTLER_HOOK_TOOL`; the JSON is on stdin only
//! (`BUTLER_HOOK_PAYLOAD` would sit on `bwrap`'s command line, visible to every local user).
//! Whatever it left running ends with it. Without `bwrap`, [`Hooks::try_new`] refuses and such a
//! hook built with [`Hooks::new`] fails each time: it never runs unsandboxed.
//!
//! The outcome, once the process has exited and closed its output:
//! - exit 0: ok, unless stdout (its first 8 KiB) is exactly a JSON object with
//!   `"decision": "block"`: then an explicit block, the reason being its `"reason"` string;
//! - exit 2: an explicit block, the reason being stderr (trimmed; else the JSON reason on
//!   stdout; else "hook `...` blocked the call");
//! - any other exit code, death by a signal, or a command that cannot start: a failure (exit 127
//!   is "command not found"; the first line of stderr is quoted);
//! - still running at the timeout (also when a background child keeps stdout open): the whole
//!   process group is killed with SIGKILL, and the hook failed.
//!
//! # HTTP hooks (`type = "http"`)
//!
//! `POST url` with the JSON body (`content-type: application/json`, header `x-butler-hook-event`),
//! no redirects followed, the whole exchange bounded by the timeout. A 2xx answer is ok, unless
//! its body (first 8 KiB) is a JSON object with `"decision": "block"`: an explicit block, as
//! above. Any other status, a connection error or the timeout is a failure. Messages name the
//! hook as `POST scheme://host:port/…`, never the URL's path or query (they may hold a token).
//!
//! # The outcome
//!
//! - `pre_tool_use`: [`HookOutcome::Block`] when any hook blocked explicitly, or failed while it
//!   has `block_on_failure = true`; the reasons of all such hooks, in configuration order, joined
//!   with "; ". Otherwise [`HookOutcome::Continue`]; failures are logged (`tracing::warn`).
//! - every other event: always [`HookOutcome::Continue`]. Failures are logged as warnings and an
//!   explicit block as info ("only pre_tool_use hooks can block"); `block_on_failure` has no
//!   effect there.
//!
//! `run` returns within the longest selected timeout plus 5 s (time to kill), whatever the hooks
//! do. A hook whose task panics counts as a failure ("crashed"). If the caller drops the future of
//! `run`, running hooks are aborted and their process groups killed.

mod command;
mod http;
mod sandbox;
mod verdict;

pub use sandbox::{doctor, HooksError};

pub use crate::permissions::glob_match;

use crate::config::{HookConfig, HookEvent, HookKind};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinSet;
use verdict::{HookError, HookResult, Payload, Verdict};

/// What the hooks decided about an event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HookOutcome {
    Continue,
    /// A pre_tool_use hook refused the call, with its reason.
    Block(String),
}

/// The configured hooks, ready to run. Cheap to clone (shared).
#[derive(Clone, Default)]
pub struct Hooks {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    hooks: Vec<Hook>,
    /// Built only when some hook is an HTTP hook; an error fails those hooks, with its text.
    http: Option<Result<reqwest::Client, HookError>>,
}

/// One `[[hooks]]` entry with what is worked out once.
struct Hook {
    cfg: HookConfig,
    /// How messages and logs name the hook: ``hook `./check.sh` `` or ``hook `POST https://h/…` ``.
    label: String,
    timeout: Duration,
    /// For command hooks: unsandboxed, in bubblewrap, or (`bwrap` missing) never started.
    isolation: sandbox::Isolation,
}

/// Time given to kill a timed-out hook and collect its task, on top of its timeout (killing
/// waits at most 2 s for the killed shell).
const KILL_GRACE: Duration = Duration::from_secs(5);

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let labels: Vec<String> = self.inner.hooks.iter().map(|h| format!("{} on {}", h.label, h.cfg.event)).collect();
        f.debug_struct("Hooks").field("hooks", &labels).finish()
    }
}

impl Hooks {
    pub fn new(cfg: &[HookConfig]) -> Self {
        let hooks: Vec<Hook> = cfg
            .iter()
            .map(|c| Hook {
                label: label(c),
                timeout: Duration::from_secs(c.timeout_secs.clamp(1, HookConfig::MAX_TIMEOUT_SECS)),
                isolation: sandbox::Isolation::for_hook(c),
                cfg: c.clone(),
            })
            .collect();
        let http = hooks.iter().any(|h| h.cfg.kind == HookKind::Http).then(http::client);
        Self { inner: Arc::new(Inner { hooks, http }) }
    }

    /// Like [`new`](Self::new), but refuses hooks that cannot run as configured: a hook with
    /// `sandbox = true` while `bwrap` is not on PATH (`butler serve` stops with this error
    /// rather than run the hook unsandboxed or fail it on every event).
    pub fn try_new(cfg: &[HookConfig]) -> Result<Self, HooksError> {
        sandbox::check(cfg)?;
        Ok(Self::new(cfg))
    }

    /// Whether no hook is configured at all.
    pub fn is_empty(&self) -> bool {
        self.inner.hooks.is_empty()
    }

    /// Whether [`run`](Self::run) would call any hook for this event and tool (so a caller can
    /// skip building a payload).
    pub fn wants(&self, event: HookEvent, tool: Option<&str>) -> bool {
        self.selected(event, tool).next().is_some()
    }

    /// Runs every hook for `event` (and `tool`, for tool events) concurrently and combines what
    /// they said; see the module documentation. Returns within the longest selected timeout plus
    /// a few seconds, whatever the hooks do.
    pub async fn run(&self, event: HookEvent, tool: Option<&str>, payload: &serde_json::Value) -> HookOutcome {
        let selected: Vec<usize> = self.selected(event, tool).collect();
        let Some(longest) = selected.iter().map(|&i| self.inner.hooks[i].timeout).max() else {
            return HookOutcome::Continue;
        };
        let payload =
            Arc::new(Payload { event, tool: tool.map(str::to_owned), json: payload_json(event, tool, payload) });
        let mut tasks = JoinSet::new();
        let mut index_of = HashMap::new();
        for &i in &selected {
            let (inner, payload) = (self.inner.clone(), payload.clone());
            let handle = tasks.spawn(async move { inner.call(i, &payload).await });
            index_of.insert(handle.id(), i);
        }
        let deadline = tokio::time::Instant::now() + longest + KILL_GRACE;
        let mut results: BTreeMap<usize, HookResult> = BTreeMap::new();
        loop {
            let next = tokio::time::timeout_at(deadline, tasks.join_next_with_id()).await;
            match next {
                Ok(Some(Ok((id, result)))) => {
                    results.insert(index_of[&id], result);
                }
                Ok(Some(Err(e))) => {
                    let i = index_of[&e.id()];
                    let how = if e.is_panic() { "crashed" } else { "was cancelled" };
                    results.insert(i, Err(format!("{} {how}", self.inner.hooks[i].label)));
                }
                Ok(None) => break,
                Err(_) => {
                    // Dropping the tasks kills their processes (see `command`).
                    tasks.abort_all();
                    break;
                }
            }
        }
        for &i in &selected {
            results.entry(i).or_insert_with(|| Err(format!("{} did not finish in time", self.inner.hooks[i].label)));
        }
        self.decide(event, tool, results)
    }

    fn selected<'a>(&'a self, event: HookEvent, tool: Option<&'a str>) -> impl Iterator<Item = usize> + 'a {
        self.inner.hooks.iter().enumerate().filter_map(move |(i, h)| {
            let wanted = h.cfg.event == event
                && (!event.is_tool_event() || glob_match(&h.cfg.matcher, tool.unwrap_or_default()));
            wanted.then_some(i)
        })
    }

    fn decide(&self, event: HookEvent, tool: Option<&str>, results: BTreeMap<usize, HookResult>) -> HookOutcome {
        let can_block = event == HookEvent::PreToolUse;
        let tool = tool.unwrap_or_default();
        let mut reasons = Vec::new();
        for (i, result) in results {
            let hook = &self.inner.hooks[i];
            let name = hook.label.as_str();
            match result {
                Ok(Verdict::Ok) => tracing::debug!(event = %event, tool, hook = name, "hook ok"),
                Ok(Verdict::Block(reason)) if can_block => {
                    tracing::info!(event = %event, tool, hook = name, reason = %reason, "hook blocked the tool call");
                    reasons.push(reason);
                }
                Ok(Verdict::Block(reason)) => tracing::info!(
                    event = %event, tool, hook = name, reason = %reason,
                    "hook asked to block, but only pre_tool_use hooks can block; carrying on"
                ),
                Err(error) if can_block && hook.cfg.block_on_failure => {
                    tracing::warn!(event = %event, tool, hook = name, error = %error, "hook failed; blocking the tool call (block_on_failure)");
                    reasons.push(error);
                }
                Err(error) => {
                    tracing::warn!(event = %event, tool, hook = name, error = %error, "hook failed; carrying on")
                }
            }
        }
        if reasons.is_empty() {
            HookOutcome::Continue
        } else {
            HookOutcome::Block(reasons.join("; "))
        }
    }
}

impl Inner {
    async fn call(&self, i: usize, payload: &Payload) -> HookResult {
        let hook = &self.hooks[i];
        match hook.cfg.kind {
            HookKind::Command => match &hook.cfg.command {
                Some(command) => command::run(command, &hook.label, hook.timeout, payload, &hook.isolation).await,
                None => Err(format!("{} has no `command`", hook.label)),
            },
            HookKind::Http => match (&hook.cfg.url, &self.http) {
                (Some(url), Some(Ok(client))) => http::run(client, url, &hook.label, hook.timeout, payload).await,
                (Some(_), Some(Err(e))) => Err(format!("{} could not run: {e}", hook.label)),
                _ => Err(format!("{} has no `url`", hook.label)),
            },
        }
    }
}

/// The JSON every hook of one run receives: the payload's fields, then `event` and `tool`.
fn payload_json(event: HookEvent, tool: Option<&str>, payload: &serde_json::Value) -> String {
    use serde_json::Value;
    let mut map = match payload {
        Value::Object(fields) => fields.clone(),
        Value::Null => serde_json::Map::new(),
        other => serde_json::Map::from_iter([("data".to_string(), other.clone())]),
    };
    map.insert("event".into(), event.as_str().into());
    map.insert("tool".into(), tool.map_or(Value::Null, Value::from));
    Value::Object(map).to_string()
}

/// ``hook `<command>` `` (cut to 60 characters) or ``hook `POST scheme://host:port/…` ``.
fn label(cfg: &HookConfig) -> String {
    match cfg.kind {
        HookKind::Command => {
            let command = cfg.command.as_deref().unwrap_or_default().trim();
            let one_line = command.lines().next().unwrap_or_default();
            let mut shown: String = one_line.chars().take(60).collect();
            if shown.len() < command.len() {
                shown.push('…');
            }
            format!("hook `{shown}`")
        }
        HookKind::Http => format!("hook `POST {}`", http::origin(cfg.url.as_deref().unwrap_or_default())),
    }
}
