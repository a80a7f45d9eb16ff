//! Who may approve, per context, and how long an approval waits.
//! Decisions only: nothing is created on disk.

use super::*;
use crate::config::{ContextKind, Mode, PermissionContext};
use std::time::Duration;
use ConversationKind::{Direct as Dm, Group};
use UserRole::{Guest, Member, Owner};

fn ctx(
    channel: Option<&str>,
    kind: Option<ContextKind>,
    role: Option<&str>,
    approvers: Option<&[&str]>,
) -> PermissionContext {
    PermissionContext {
        channel: channel.map(Into::into),
        kind,
        role: role.map(Into::into),
        mode: approvers.is_none().then_some(Mode::Plan),
        approvers: approvers.map(|a| a.iter().map(|s| s.to_string()).collect()),
        conversation: None,
    }
}

#[test]
fn the_requester_approves_by_default() {
    let f = Fixture::new(PermissionsConfig::default());
    for channel in CHANNELS {
        for kind in KINDS {
            for role in ROLES {
                assert_eq!(f.policy.approvers(channel, *kind, *role), vec!["requester".to_string()]);
            }
        }
    }
    assert_eq!(f.policy.approval_timeout(), Duration::from_secs(600));
}

#[test]
fn approvers_come_from_the_first_matching_context_that_sets_them() {
    let cfg = PermissionsConfig {
        approvers: vec!["requester".into(), "role:owner".into()],
        approval_timeout_secs: 90,
        contexts: vec![
            // 0: mode only; skipped for approvers.
            ctx(Some("telegram"), None, None, None),
            // 1: telegram groups: only owners.
            ctx(Some("telegram"), Some(ContextKind::Group), None, Some(&["role:owner"])),
            // 2: guests anywhere: a named user or an identity.
            ctx(None, None, Some("guest"), Some(&["user:alice", "slack:U2CERLKJA"])),
            // 3: empty list (validation rejects it): the requester.
            ctx(Some("cli"), None, None, Some(&[])),
        ],
        ..PermissionsConfig::default()
    };
    let f = Fixture::new(cfg);
    let cases: &[(&str, ConversationKind, UserRole, &[&str])] = &[
        ("telegram", Group, Member, &["role:owner"]),
        ("telegram", Group, Guest, &["role:owner"]),
        ("telegram", Dm, Guest, &["user:alice", "slack:U2CERLKJA"]),
        ("telegram", Dm, Member, &["requester", "role:owner"]),
        ("web", Group, Guest, &["user:alice", "slack:U2CERLKJA"]),
        ("web", Dm, Owner, &["requester", "role:owner"]),
        ("cli", Dm, Owner, &["requester"]),
        ("cli", Dm, Guest, &["user:alice", "slack:U2CERLKJA"]),
    ];
    for (channel, kind, role, want) in cases {
        let got = f.policy.approvers(channel, *kind, *role);
        assert_eq!(got, want.iter().map(|s| s.to_string()).collect::<Vec<_>>(), "{channel} {kind:?} {role:?}");
    }
    assert_eq!(f.policy.approval_timeout(), Duration::from_secs(90));
}
