//! `[[hooks]]`: commands or HTTP endpoints called around tool calls, sessions and compaction.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HookEvent {
    PreToolUse,
    PostToolUse,
    SessionStart,
    SessionEnd,
    PreCompact,
    PostCompact,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HookKind {
    /// Run `command` with `sh -c`; the JSON payload on stdin and in `BUTLER_HOOK_PAYLOAD`; exit 0 = ok.
    Command,
    /// POST the JSON payload to `url`; 2xx = ok.
    Http,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HookConfig {
    pub event: HookEvent,
    #[serde(rename = "type")]
    pub kind: HookKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Tool name glob for tool events (`shell`, `file_*`); `*` matches every tool.
    #[serde(default = "any_tool")]
    pub matcher: String,
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
    /// When the hook fails (non-zero exit, non-2xx, timeout, crash): block the call (pre_tool_use)
    /// instead of carrying on.
    #[serde(default)]
    pub block_on_failure: bool,
}

fn any_tool() -> String {
    "*".into()
}

fn default_timeout() -> u64 {
    5
}
