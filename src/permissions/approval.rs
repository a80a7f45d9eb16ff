//! The approval rules shared by the agent (which asks) and triage (which takes the answer):
//! approval ids, the hash of a call's exact arguments, the outbox key and text of an approval's
//! message, the text it becomes once answered, the audit row of a decision, and who may decide.
//!
//! These are pure functions over store rows: nothing here may read or write the store, send a
//! message or run a tool.

use crate::clock::now_ms;
use crate::store::{ApprovalRow, ApprovalStatus, AuditRow, NewOutbox, UserRow};
use butler_channel::{Button, ButtonStyle};
use sha2::{Digest, Sha256};

/// 128 random bits as 32 hex characters.
pub(crate) fn approval_id() -> String {
    format!("{:032x}", rand::random::<u128>())
}

/// SHA-256 (hex) of a call's exact argument text.
pub fn args_hash(arguments: &str) -> String {
    hex::encode(Sha256::digest(arguments.as_bytes()))
}

/// The outbox key of an approval's message.
pub(crate) fn approval_key(id: &str) -> String {
    format!("approval:{id}")
}

/// The message asking for an approval, with its buttons (or, where a channel has none, the
/// commands that answer it).
pub(crate) fn approval_notice(row: &ApprovalRow, asker: &str, buttons: bool) -> NewOutbox {
    let minutes = ((row.expires_ms - row.created_ms) / 60_000).max(1);
    let mut text = format!(
        "🔐 **Approval needed**: Butler wants to {}.\nAsked by {asker}; this request expires in {minutes} minutes.",
        row.summary
    );
    if !buttons {
        text.push_str(&format!("\nReply `/approve {id}` or `/deny {id}`.", id = row.id));
    }
    NewOutbox {
        private_to: None,
        key: approval_key(&row.id),
        conversation: row.conversation.clone(),
        text,
        buttons: vec![
            Button::new("Approve once", format!("ap:{}:once", row.id), ButtonStyle::Primary),
            Button::new("Always for this session", format!("ap:{}:session", row.id), ButtonStyle::Default),
            Button::new("Deny", format!("ap:{}:deny", row.id), ButtonStyle::Danger),
        ],
        reply_to: None,
    }
}

/// The text an answered approval's message becomes.
pub(crate) fn outcome_text(row: &ApprovalRow, status: ApprovalStatus, scope: Option<&str>, by: &str) -> String {
    match (status, scope) {
        (ApprovalStatus::Approved, Some("session")) => {
            format!(
                "✅ Approved for this session by {by}: {} (and `{}` from now on in this session).",
                row.summary, row.tool
            )
        }
        (ApprovalStatus::Approved, _) => format!("✅ Approved by {by}: {}.", row.summary),
        (ApprovalStatus::Denied, _) => format!("🚫 Denied by {by}: {}.", row.summary),
        (ApprovalStatus::Expired, _) => format!("⌛ Expired without an answer: {}.", row.summary),
        (ApprovalStatus::Cancelled, _) => format!("⏹ Cancelled by {by}: {}.", row.summary),
        (ApprovalStatus::Pending, _) => row.summary.clone(),
    }
}

/// The record of a person's decision (or an expiry) on an approval.
pub(crate) fn decision_audit(row: &ApprovalRow, status: ApprovalStatus, scope: Option<&str>, by: &str) -> AuditRow {
    let outcome = match (status, scope) {
        (ApprovalStatus::Approved, Some("session")) => "approved_session",
        (ApprovalStatus::Approved, _) => "approved",
        (ApprovalStatus::Denied, _) => "rejected",
        (ApprovalStatus::Expired, _) => "expired",
        (ApprovalStatus::Cancelled, _) => "cancelled",
        (ApprovalStatus::Pending, _) => "asked",
    };
    AuditRow {
        at_ms: now_ms(),
        actor: by.to_string(),
        user_id: row.requester_user.clone(),
        session_id: row.session_id.clone(),
        tool: row.tool.clone(),
        args_hash: row.args_hash.clone(),
        outcome: outcome.to_string(),
        reason: format!("approval {}", row.id),
    }
}

/// Whether `user` (speaking as `identity`) may decide `row`.
pub(crate) fn may_decide(row: &ApprovalRow, identity: &str, user: Option<&UserRow>) -> bool {
    row.approvers.iter().any(|a| match a.as_str() {
        "requester" => user.is_some_and(|u| u.id == row.requester_user),
        spec => match spec.split_once(':') {
            Some(("role", role)) => user.is_some_and(|u| u.role.as_str() == role),
            Some(("user", id)) => user.is_some_and(|u| u.id == id),
            _ => spec == identity,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::UserRole;

    fn row(approvers: &[&str]) -> ApprovalRow {
        ApprovalRow {
            id: approval_id(),
            session_id: "s".into(),
            session_key: "k".into(),
            conversation: "web:c".into(),
            event_id: "e".into(),
            tool_call_id: "c1".into(),
            tool: "shell".into(),
            args_hash: args_hash("{}"),
            summary: "run `ls`".into(),
            requester: "web:alice".into(),
            requester_user: "u-alice".into(),
            approvers: approvers.iter().map(|s| s.to_string()).collect(),
            status: ApprovalStatus::Pending,
            scope: None,
            decided_by: None,
            decided_ms: None,
            created_ms: 0,
            expires_ms: 600_000,
        }
    }

    fn user(id: &str, role: UserRole) -> UserRow {
        UserRow { id: id.into(), display_name: None, role, timezone: "UTC".into(), created_ms: 0 }
    }

    #[test]
    fn who_may_decide_table() {
        let alice = user("u-alice", UserRole::Member);
        let bob = user("u-bob", UserRole::Member);
        let owner = user("u-owner", UserRole::Owner);
        let cases: Vec<(Vec<&str>, &str, Option<&UserRow>, bool)> = vec![
            (vec!["requester"], "web:alice", Some(&alice), true),
            (vec!["requester"], "web:bob", Some(&bob), false),
            (vec!["requester"], "web:eve", None, false),
            (vec!["role:owner"], "web:owner", Some(&owner), true),
            (vec!["role:owner"], "web:alice", Some(&alice), false),
            (vec!["user:u-bob"], "web:bob", Some(&bob), true),
            (vec!["slack:U1"], "slack:U1", None, true),
            (vec!["slack:U1"], "slack:U2", None, false),
            (vec!["requester", "role:owner"], "web:owner", Some(&owner), true),
        ];
        for (approvers, identity, u, want) in cases {
            assert_eq!(may_decide(&row(&approvers), identity, u), want, "{approvers:?} {identity}");
        }
    }

    #[test]
    fn ids_are_128_bits_and_buttons_fit_telegram() {
        let a = approval_id();
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, approval_id());
        let notice = approval_notice(&row(&["requester"]), "Alice", true);
        for b in &notice.buttons {
            assert!(b.action.len() <= 64, "{}", b.action);
            assert!(!b.action.contains("ls"), "no arguments in callback data");
        }
        assert!(!notice.text.contains("/approve"));
        assert!(approval_notice(&row(&["requester"]), "Alice", false).text.contains("/approve"));
    }
}
