//! Session keys. A DM is keyed by its conversation and the person in it; a group by the
//! conversation and thread. Keys must never let two people share a DM session or a group
//! share a session with a DM.

use butler_channel::{ConversationKind, InboundEvent};

/// `dm:<channel>:<conversation>:<user>` or `group:<channel>:<conversation>[/<thread>]`.
pub fn session_key(event: &InboundEvent) -> String {
    match event.kind {
        ConversationKind::Direct => format!("dm:{}:{}", event.conversation, event.actor.identity.user_id),
        ConversationKind::Group => format!("group:{}", event.conversation),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use butler_channel::{Actor, ConversationRef, EventBody, EventId, Identity};

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
}
