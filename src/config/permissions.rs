//! `[permissions]`: how tool calls are decided (allow / ask / deny), per context. These are only
//! the configurable rules: the built-in hard deny list (`crate::permissions`) is deliberately not
//! here, and no key may ever be added that reaches it.

use serde::{Deserialize, Serialize};

/// What happens to a mutating tool call when nothing more specific decides.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Read-only tools run; mutating tools ask for approval.
    #[default]
    Default,
    /// Read-only tools run; mutating tools are denied.
    Plan,
    /// Everything not denied runs without asking.
    FullAuto,
}

/// DM or group, for context rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ContextKind {
    Dm,
    Group,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct PermissionsConfig {
    pub mode: Mode,
    /// Tool name globs that are always denied.
    pub denied_tools: Vec<String>,
    /// Tool name globs that run without asking (unless denied).
    pub allowed_tools: Vec<String>,
    /// Path globs file tools may change without asking: absolute, `~/...`, or relative to each
    /// user's workspace (a directory covers everything inside it).
    pub allow_paths: Vec<String>,
    /// Path globs that are always denied, on top of the built-in list (a directory covers
    /// everything inside it; relative patterns match at any depth).
    pub deny_paths: Vec<String>,
    /// Shell command globs that are always denied (`*rm -rf*`, `*curl*|*sh*`).
    pub denied_commands: Vec<String>,
    /// Who may approve: `requester` (the person whose turn it is), `role:owner`, `user:<id>`,
    /// or an identity such as `slack:U2CERLKJA`.
    pub approvers: Vec<String>,
    /// An unanswered approval is denied after this long.
    pub approval_timeout_secs: u64,
    /// Hosts (`api.example.com`, `*.example.com`) a tool call's URL may carry a secret-looking
    /// value to without asking; the http tool's `allowed_hosts` and each secret's `hosts` count
    /// too. A call that would send one anywhere else asks first, in every mode.
    pub trusted_hosts: Vec<String>,
    /// Per-context overrides; for `mode` and `approvers` separately, the first matching entry
    /// that sets it wins.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub contexts: Vec<PermissionContext>,
}

impl Default for PermissionsConfig {
    fn default() -> Self {
        Self {
            mode: Mode::Default,
            denied_tools: Vec::new(),
            allowed_tools: Vec::new(),
            allow_paths: Vec::new(),
            deny_paths: Vec::new(),
            denied_commands: Vec::new(),
            approvers: vec!["requester".into()],
            approval_timeout_secs: 600,
            trusted_hosts: Vec::new(),
            contexts: Vec::new(),
        }
    }
}

/// `[[permissions.contexts]]`: a mode and approvers for calls matching channel, kind and role.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionContext {
    /// Channel name (`web`, `telegram`, ...); any when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<ContextKind>,
    /// `owner`, `member` or `guest`; any when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approvers: Option<Vec<String>>,
    /// One conversation (`slack:C024BE91L`, which also covers its threads, or one thread
    /// `slack:C024BE91L/1355517523.000005`); any when absent. Such an entry only chooses
    /// approvers (modes are chosen by channel, kind and role).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<butler_channel::ConversationRef>,
}
