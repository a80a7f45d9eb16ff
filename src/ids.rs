//! The names Butler gives its own channels and event sources: the `channel` of identities and
//! conversations that no platform owns (`system`, `hook`, `web`) and the `source` of scheduled
//! and background-task trigger events; the keys of an event's session, reply and failure
//! notice. One home, so that the scheduler, triage, ingress, the sessions, the store and the web
//! chat agree.
//!
//! This module sits at the bottom of the crate: it must never import anything of Butler (the
//! channel crate's event type is all it reads), and a name or key here must never change (they
//! are stored in identities, conversations, event ids and outbox keys).

/// The identity channel of Butler's own events (approval expiry).
pub const SYSTEM_CHANNEL: &str = "system";
/// The channel name of signed webhook triggers.
pub const HOOK_CHANNEL: &str = "hook";
/// The web channel's name in identities and conversations.
pub const WEB_CHANNEL: &str = "web";
/// The source name of scheduled events.
pub const SCHEDULE_SOURCE: &str = "schedule";
/// The source name of the events that carry a background task's result (`task:<id>`).
pub const TASK_SOURCE: &str = "task";

/// `dm:<channel>:<conversation>:<user>` or `group:<channel>:<conversation>[/<thread>]`.
pub fn session_key(event: &butler_channel::InboundEvent) -> String {
    match event.kind {
        butler_channel::ConversationKind::Direct => {
            format!("dm:{}:{}", event.conversation, event.actor.identity.user_id)
        }
        butler_channel::ConversationKind::Group => format!("group:{}", event.conversation),
    }
}

/// The outbox key of the reply to event `event_id`: the same logical reply always has the same
/// key, so a re-run upserts it instead of sending a second one.
pub fn reply_key(event_id: &str) -> String {
    format!("{event_id}:reply")
}

/// The event whose reply `key` is, when it is a reply's key.
pub fn reply_of(key: &str) -> Option<&str> {
    key.strip_suffix(":reply")
}

/// The outbox key of the notice sent when event `event_id` failed for good.
pub fn failed_key(event_id: &str) -> String {
    format!("{event_id}:failed")
}

#[cfg(test)]
mod tests {
    use super::*;
    use butler_channel::{Actor, ConversationKind, ConversationRef, EventBody, EventId, Identity, InboundEvent};

    fn ev(conv: &str, user: &str, kind: ConversationKind) -> InboundEvent {
        InboundEvent {
            id: EventId("x".into()),
            actor: Actor::new(Identity::new("telegram", user)),
            conversation: conv.parse::<ConversationRef>().unwrap(),
            kind,
            addressed: true,
            reply_to: None,
            message_id: None,
            body: EventBody::Message { text: "hi".into() },
            at_ms: 0,
            attachments: Vec::new(),
        }
    }

    #[test]
    fn keys_table() {
        use ConversationKind::*;
        let cases = [
            (ev("telegram:42", "42", Direct), "dm:telegram:42:42"),
            (ev("web:c1", "alice", Direct), "dm:web:c1:alice"),
            (ev("web:c1", "bob", Direct), "dm:web:c1:bob"),
            (ev("telegram:-100/7", "1", Group), "group:telegram:-100/7"),
            (ev("telegram:-100/7", "2", Group), "group:telegram:-100/7"),
            (ev("telegram:-100", "1", Group), "group:telegram:-100"),
        ];
        for (e, want) in cases {
            assert_eq!(session_key(&e), want);
        }
    }

    #[test]
    fn keys_of_an_events_reply_and_failure() {
        let cases = [("web:e1", "web:e1:reply", "web:e1:failed"), ("tg:9", "tg:9:reply", "tg:9:failed")];
        for (event, reply, failed) in cases {
            assert_eq!((reply_key(event).as_str(), failed_key(event).as_str()), (reply, failed));
            assert_eq!(reply_of(&reply_key(event)), Some(event));
            assert_eq!(reply_of(&failed_key(event)), None);
        }
    }
}
