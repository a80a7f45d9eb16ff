//! Placeholder contract for the permission engine (replaced by its implementation).

use crate::config::PermissionsConfig;
use crate::store::UserRole;
use crate::tools::{Action, ToolSpec};
use butler_channel::ConversationKind;
use std::path::PathBuf;
use std::time::Duration;

/// The engine's answer, with the reason recorded in the audit trail.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Permission {
    Allow(String),
    Deny(String),
    Ask(String),
}

/// One tool call to decide, in its context.
pub struct Request<'a> {
    pub tool: &'a ToolSpec,
    pub action: &'a Action,
    pub channel: &'a str,
    pub kind: ConversationKind,
    pub role: UserRole,
    /// The tool was approved "always for this session".
    pub granted: bool,
}

pub struct Policy {
    timeout: Duration,
}

impl Policy {
    pub fn new(cfg: &PermissionsConfig, _protected: Vec<PathBuf>) -> Self {
        Self { timeout: Duration::from_secs(cfg.approval_timeout_secs) }
    }

    pub fn decide(&self, req: &Request<'_>) -> Permission {
        if req.tool.read_only || req.granted {
            Permission::Allow("read-only".into())
        } else {
            Permission::Ask("mutating".into())
        }
    }

    pub fn approvers(&self, _channel: &str, _kind: ConversationKind, _role: UserRole) -> Vec<String> {
        vec!["requester".into()]
    }

    pub fn approval_timeout(&self) -> Duration {
        self.timeout
    }
}
