//! Modes per context: the first matching `[[permissions.contexts]]` entry that sets a mode
//! decides (channel, DM or group, role; absent fields match anything), else `[permissions] mode`.
//! Decisions only: nothing is created on disk.

use super::*;
use crate::config::{ContextKind, Mode, PermissionContext};
use ConversationKind::{Direct as Dm, Group};
use UserRole::{Guest, Member, Owner};

fn ctx(channel: Option<&str>, kind: Option<ContextKind>, role: Option<&str>, mode: Option<Mode>) -> PermissionContext {
    PermissionContext {
        channel: channel.map(Into::into),
        kind,
        role: role.map(Into::into),
        mode,
        approvers: mode.is_none().then(|| vec!["role:owner".into()]),
        conversation: None,
    }
}

#[test]
fn the_global_mode_applies_without_contexts() {
    // (mode, read-only, expected answer)
    let cases: &[(Mode, bool, &str)] = &[
        (Mode::Default, true, "allow"),
        (Mode::Default, false, "ask"),
        (Mode::Plan, true, "allow"),
        (Mode::Plan, false, "deny"),
        (Mode::FullAuto, true, "allow"),
        (Mode::FullAuto, false, "allow"),
    ];
    for (mode, read_only, want) in cases {
        let f = Fixture::new(PermissionsConfig { mode: *mode, ..PermissionsConfig::default() });
        let tool = spec(if *read_only { "file_read" } else { "file_write" }, *read_only);
        for channel in CHANNELS {
            for kind in KINDS {
                for role in ROLES {
                    let got = f.decide_in(&tool, &files(&[&f.at("a.md")]), false, channel, *kind, *role);
                    let kind_of = match &got {
                        Permission::Allow(_) => "allow",
                        Permission::Ask(_) => "ask",
                        Permission::Deny(_) => "deny",
                    };
                    assert_eq!(kind_of, *want, "{mode:?} read_only={read_only} {channel} {kind:?} {role:?}: {got:?}");
                    assert!(!got.reason().contains("contexts"), "{got:?}");
                }
            }
        }
    }
}

#[test]
fn contexts_choose_the_mode_by_channel_kind_and_role() {
    let cfg = PermissionsConfig {
        mode: Mode::Default,
        contexts: vec![
            // 0: approvers only; never decides the mode.
            ctx(None, Some(ContextKind::Dm), Some("owner"), None),
            // 1: groups on telegram plan.
            ctx(Some("telegram"), Some(ContextKind::Group), None, Some(Mode::Plan)),
            // 2: guests plan anywhere.
            ctx(None, None, Some("guest"), Some(Mode::Plan)),
            // 3: the owner at the terminal runs everything.
            ctx(Some("cli"), None, Some("owner"), Some(Mode::FullAuto)),
            // 4: owners in web DMs too.
            ctx(Some("web"), Some(ContextKind::Dm), Some("owner"), Some(Mode::FullAuto)),
            // 5: never reached for telegram groups (entry 1 comes first).
            ctx(Some("telegram"), None, None, Some(Mode::FullAuto)),
            // 6: an unknown role matches nothing.
            ctx(None, None, Some("admin"), Some(Mode::FullAuto)),
        ],
        ..PermissionsConfig::default()
    };
    let f = Fixture::new(cfg);
    let write = spec("file_write", false);
    let read = spec("file_read", true);
    // (channel, kind, role, read-only, expected answer and reason)
    let cases: &[(&str, ConversationKind, UserRole, bool, Permission)] = &[
        ("telegram", Group, Owner, false, deny("plan mode: `file_write` changes things (permissions.contexts[1])")),
        (
            "telegram",
            Group,
            Member,
            true,
            allow("plan mode: `file_read` changes nothing outside Butler (permissions.contexts[1])"),
        ),
        (
            "telegram",
            Dm,
            Owner,
            false,
            allow("full_auto mode: `file_write` runs without asking (permissions.contexts[5])"),
        ),
        ("telegram", Dm, Guest, false, deny("plan mode: `file_write` changes things (permissions.contexts[2])")),
        ("web", Group, Guest, false, deny("plan mode: `file_write` changes things (permissions.contexts[2])")),
        (
            "web",
            Dm,
            Guest,
            true,
            allow("plan mode: `file_read` changes nothing outside Butler (permissions.contexts[2])"),
        ),
        ("cli", Dm, Owner, false, allow("full_auto mode: `file_write` runs without asking (permissions.contexts[3])")),
        (
            "cli",
            Group,
            Owner,
            false,
            allow("full_auto mode: `file_write` runs without asking (permissions.contexts[3])"),
        ),
        ("cli", Dm, Member, false, ask("default mode: `file_write` changes things")),
        ("web", Dm, Owner, false, allow("full_auto mode: `file_write` runs without asking (permissions.contexts[4])")),
        ("web", Group, Owner, false, ask("default mode: `file_write` changes things")),
        ("web", Dm, Member, false, ask("default mode: `file_write` changes things")),
        ("web", Dm, Member, true, allow("default mode: `file_read` changes nothing outside Butler")),
        ("slack", Group, Member, false, ask("default mode: `file_write` changes things")),
    ];
    for (channel, kind, role, read_only, want) in cases {
        let tool = if *read_only { &read } else { &write };
        let got = f.decide_in(tool, &files(&[&f.at("a.md")]), false, channel, *kind, *role);
        assert_eq!(&got, want, "{channel} {kind:?} {role:?} read_only={read_only}");
    }
}

#[test]
fn a_plan_context_still_lets_the_earlier_rules_decide() {
    // Contexts pick only the mode: a grant or allowed_tools still allows, deny rules still deny.
    let cfg = PermissionsConfig {
        allowed_tools: vec!["memory_*".into()],
        denied_tools: vec!["shell".into()],
        contexts: vec![ctx(None, None, None, Some(Mode::FullAuto))],
        ..PermissionsConfig::default()
    };
    let f = Fixture::new(cfg);
    let got = f.decide_in(&spec("shell", false), &shell("ls"), true, "web", Group, Owner);
    assert_eq!(got, deny("denied_tools: shell"));
    let plan = PermissionsConfig {
        allowed_tools: vec!["memory_*".into()],
        contexts: vec![ctx(None, None, None, Some(Mode::Plan))],
        ..PermissionsConfig::default()
    };
    let f = Fixture::new(plan);
    let got = f.decide_in(&spec("memory_write", false), &Action::default(), false, "web", Group, Guest);
    assert_eq!(got, allow("allowed_tools: memory_*"));
    let got = f.decide_in(&spec("file_write", false), &Action::default(), true, "web", Group, Guest);
    assert_eq!(got, allow("granted: `file_write` was approved for this session"));
}

fn allow(r: &str) -> Permission {
    Permission::Allow(r.into())
}
fn ask(r: &str) -> Permission {
    Permission::Ask(r.into())
}
fn deny(r: &str) -> Permission {
    Permission::Deny(r.into())
}
