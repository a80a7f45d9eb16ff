//! Builders for the rows the contract tests write. Plain data only: no store calls here.

use butler::channel::{Actor, ConversationKind, ConversationRef, EventBody, EventId, Identity, InboundEvent};
use butler::store::{
    ApprovalKind, ApprovalRow, ApprovalStatus, AuditRow, CodeKind, CodeRow, DecisionRow, NewOutbox, NewSession,
    NewUser, UserRole,
};

/// A direct text message `id` in `channel:conv`.
pub fn event(id: &str, channel: &str, conv: &str) -> InboundEvent {
    InboundEvent {
        id: EventId(id.to_string()),
        actor: Actor { identity: Identity::new(channel, "u1"), display_name: Some("Alice".into()), is_bot: false },
        conversation: ConversationRef::new(channel, conv),
        kind: ConversationKind::Direct,
        addressed: true,
        reply_to: None,
        message_id: Some(format!("m-{id}")),
        body: EventBody::Message { text: format!("hello from {id}") },
        at_ms: 1_700_000_000_000,
        attachments: Vec::new(),
    }
}

pub fn session(id: &str, key: &str) -> NewSession {
    NewSession {
        id: id.to_string(),
        key: key.to_string(),
        user_id: "alice".to_string(),
        conversation: "web:c1".to_string(),
        system_prompt: "You are Butler.\nBe brief.".to_string(),
    }
}

pub fn reply(key: &str, conversation: &str, text: &str) -> NewOutbox {
    NewOutbox {
        private_to: None,
        key: key.to_string(),
        conversation: conversation.to_string(),
        text: text.to_string(),
        buttons: vec![],
        reply_to: None,
        file: None,
        title: None,
    }
}

pub fn user(id: &str, name: &str) -> NewUser {
    NewUser {
        id: id.to_string(),
        display_name: Some(name.to_string()),
        role: UserRole::Member,
        timezone: "Europe/Berlin".into(),
    }
}

/// A one-time code asked for by `web:asker` in `web:c1`, alive from `created_ms` until `expires_ms`.
pub fn code(kind: CodeKind, code: &str, created_ms: i64, expires_ms: i64) -> CodeRow {
    CodeRow {
        kind,
        code: code.to_string(),
        identity: "web:asker".to_string(),
        user_id: None,
        display_name: Some("Asker".to_string()),
        conversation: "web:c1".to_string(),
        created_ms,
        expires_ms,
    }
}

/// A triage decision about event `event_id` at `at_ms`.
pub fn decision(at_ms: i64, event_id: &str, decision: &str) -> DecisionRow {
    DecisionRow {
        at_ms,
        event_id: event_id.to_string(),
        actor: "telegram:42".to_string(),
        conversation: "telegram:-100".to_string(),
        decision: decision.to_string(),
        reason: format!("{decision} because of {event_id}"),
    }
}

/// A pending approval `id` of `tool` in `session_id`, asked at `created_ms`, expiring at `expires_ms`.
pub fn approval(id: &str, session_id: &str, tool: &str, created_ms: i64, expires_ms: i64) -> ApprovalRow {
    ApprovalRow {
        id: id.to_string(),
        session_id: session_id.to_string(),
        session_key: format!("key-{session_id}"),
        conversation: "telegram:42".to_string(),
        event_id: format!("e-{id}"),
        tool_call_id: format!("call-{id}"),
        tool: tool.to_string(),
        args_hash: format!("{:0>64}", id.len()),
        summary: format!("run {tool} (secret ***)"),
        requester: "telegram:42".to_string(),
        requester_user: "alice".to_string(),
        approvers: strings(&["requester", "role:owner"]),
        kind: ApprovalKind::Tool,
        options: vec![],
        answer: None,
        detail: None,
        status: ApprovalStatus::Pending,
        scope: None,
        decided_by: None,
        decided_ms: None,
        created_ms,
        expires_ms,
    }
}

/// A permission decision about one call of `tool` at `at_ms`.
pub fn audit(at_ms: i64, tool: &str, outcome: &str) -> AuditRow {
    AuditRow {
        at_ms,
        actor: "telegram:42".to_string(),
        user_id: "alice".to_string(),
        session_id: "s1".to_string(),
        tool: tool.to_string(),
        args_hash: format!("hash-{tool}-{at_ms}"),
        outcome: outcome.to_string(),
        reason: format!("{outcome} by policy"),
    }
}

pub fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}
