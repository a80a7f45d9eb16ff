//! `[[hooks]]`: commands or HTTP endpoints called around tool calls, sessions and compaction.
//! Only the shape of the configuration lives here (checked in `validate.rs`, run by
//! `crate::hooks`); this file must never start processes or make requests.

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

impl HookEvent {
    /// Every event, in the order of the documentation.
    pub const ALL: [HookEvent; 6] = [
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::SessionStart,
        HookEvent::SessionEnd,
        HookEvent::PreCompact,
        HookEvent::PostCompact,
    ];

    /// The name used in the configuration and in the payload's `event` field.
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "pre_tool_use",
            HookEvent::PostToolUse => "post_tool_use",
            HookEvent::SessionStart => "session_start",
            HookEvent::SessionEnd => "session_end",
            HookEvent::PreCompact => "pre_compact",
            HookEvent::PostCompact => "post_compact",
        }
    }

    /// Events about one tool call: only these look at `matcher`.
    pub fn is_tool_event(self) -> bool {
        matches!(self, HookEvent::PreToolUse | HookEvent::PostToolUse)
    }
}

impl std::fmt::Display for HookEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
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
    /// Tool name glob for tool events (`shell`, `file_*`); `*` matches every tool. Ignored for
    /// the other events.
    #[serde(default = "any_tool")]
    pub matcher: String,
    /// Seconds the hook may take (1 to 3600); a command is then killed with its process group.
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
    /// When the hook fails (non-zero exit, non-2xx, timeout, crash): block the call (pre_tool_use)
    /// instead of carrying on.
    #[serde(default)]
    pub block_on_failure: bool,
    /// Command hooks only: run the command in the bubblewrap sandbox the shell uses (an empty
    /// scratch directory as its working directory, the system read-only, none of Butler's
    /// files or processes). Off by default: hooks are the operator's own commands.
    #[serde(default)]
    pub sandbox: bool,
    /// With `sandbox = true` only: let the sandboxed command use the network (off: a network
    /// namespace with nothing in it). Unsandboxed commands always have the network.
    #[serde(default)]
    pub network: bool,
}

impl HookConfig {
    /// The longest `timeout_secs` accepted.
    pub const MAX_TIMEOUT_SECS: u64 = 3600;
}

fn any_tool() -> String {
    "*".into()
}

fn default_timeout() -> u64 {
    5
}
