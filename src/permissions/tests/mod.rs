//! Table tests of the permission engine, one module per concern. Policies are built with a
//! temporary HOME (never the real one), and no test changes the process environment.

mod approvers;
mod config;
mod exfil;
mod hard;
mod modes;
mod rules;

use super::{Permission, Policy, Request};
use crate::config::PermissionsConfig;
use crate::store::UserRole;
use crate::tools::{Action, ToolSpec};
use butler_channel::ConversationKind;
use std::path::{Path, PathBuf};

pub(super) const CHANNELS: &[&str] = &["web", "telegram", "slack", "cli"];
pub(super) const KINDS: &[ConversationKind] = &[ConversationKind::Direct, ConversationKind::Group];
pub(super) const ROLES: &[UserRole] = &[UserRole::Owner, UserRole::Member, UserRole::Guest];

pub(super) fn spec(name: &str, read_only: bool) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: String::new(),
        parameters: serde_json::json!({"type": "object"}),
        read_only,
    }
}

pub(super) fn files(paths: &[&Path]) -> Action {
    Action { summary: "files".into(), paths: paths.iter().map(|p| p.to_path_buf()).collect(), ..Action::default() }
}

pub(super) fn shell(command: &str) -> Action {
    Action { summary: format!("run `{command}`"), command: Some(command.into()), ..Action::default() }
}

pub(super) fn url(url: &str) -> Action {
    Action { summary: format!("fetch {url}"), url: Some(url.into()), ..Action::default() }
}

/// A temporary HOME and the policy built on it.
pub(super) struct Fixture {
    pub dir: tempfile::TempDir,
    pub policy: Policy,
}

impl Fixture {
    pub fn new(cfg: PermissionsConfig) -> Self {
        Self::with_protected(cfg, |_| Vec::new())
    }

    /// `protected` gets HOME and returns Butler's own files.
    pub fn with_protected(cfg: PermissionsConfig, protected: impl FnOnce(&Path) -> Vec<PathBuf>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().to_path_buf();
        let policy = Policy::with_home(&cfg, protected(&home), home);
        Self { dir, policy }
    }

    pub fn home(&self) -> &Path {
        self.dir.path()
    }

    /// `rel` below HOME.
    pub fn at(&self, rel: &str) -> PathBuf {
        self.home().join(rel)
    }

    /// The decision for `tool` doing `action` as an owner in a web DM.
    pub fn decide(&self, tool: &ToolSpec, action: &Action, granted: bool) -> Permission {
        self.decide_in(tool, action, granted, "web", ConversationKind::Direct, UserRole::Owner)
    }

    pub fn decide_in(
        &self,
        tool: &ToolSpec,
        action: &Action,
        granted: bool,
        channel: &str,
        kind: ConversationKind,
        role: UserRole,
    ) -> Permission {
        self.policy.decide(&Request { tool, action, channel, kind, role, granted, args: &serde_json::Value::Null })
    }
}

/// A config where everything short of the hard list would run: full_auto, every tool allowed,
/// every path allowed.
pub(super) fn wide_open() -> PermissionsConfig {
    PermissionsConfig {
        mode: crate::config::Mode::FullAuto,
        allowed_tools: vec!["*".into()],
        allow_paths: vec!["/**".into(), "~/**".into()],
        ..PermissionsConfig::default()
    }
}

pub(super) fn assert_hard_deny(got: &Permission, shows: &str, what: &str) {
    match got {
        Permission::Deny(reason) => {
            assert!(reason.starts_with("hard deny: "), "{what}: {reason}");
            assert!(reason.contains(shows), "{what}: reason {reason:?} does not show {shows:?}");
        }
        other => panic!("{what}: expected a hard deny, got {other:?}"),
    }
}
