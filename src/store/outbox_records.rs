//! What the outbox holds: a message to send ([`NewOutbox`], with one constructor per kind of
//! message so the key, the conversation and the quote are always made the same way), a stored
//! row ([`OutboxRow`]), its status and how a delivery attempt ended ([`OutboxMark`]).
//!
//! Plain data: nothing here reads the database or sends anything.

use butler_channel::{Button, EventBody, InboundEvent, OutFile, PrivateTo};
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutboxStatus {
    /// Streaming: the text is not final yet.
    Draft,
    Pending,
    Sent,
    Failed,
}

impl OutboxStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Draft => "draft",
            Self::Pending => "pending",
            Self::Sent => "sent",
            Self::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "draft" => Self::Draft,
            "pending" => Self::Pending,
            "sent" => Self::Sent,
            "failed" => Self::Failed,
            _ => return None,
        })
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewOutbox {
    /// Idempotency key: the same logical reply always has the same key.
    pub key: String,
    /// For one person only (the answer to their click); `None` for ordinary messages.
    pub private_to: Option<PrivateTo>,
    /// `channel:conversation[/thread]`.
    pub conversation: String,
    pub text: String,
    pub buttons: Vec<Button>,
    pub reply_to: Option<String>,
    /// A file to send with the text as its caption (`send_file`).
    pub file: Option<OutFile>,
    /// A heading shown apart from the text where the platform has one (a mail's subject).
    pub title: Option<String>,
}

impl NewOutbox {
    /// The reply to `event`: under its reply key (so a re-run upserts it), in its conversation,
    /// quoting it where the platform shows quotes.
    /// A scheduled job's reply (its briefing) is titled with the job's name.
    pub fn reply(event: &InboundEvent, text: impl Into<String>) -> Self {
        let mut reply = Self::message(crate::ids::reply_key(&event.id.0), event.conversation.to_string(), text)
            .quoting(event.quote_target());
        if let EventBody::Trigger { source, payload, .. } = &event.body {
            if source == crate::ids::SCHEDULE_SOURCE {
                reply.title = payload["name"].as_str().filter(|n| !n.trim().is_empty()).map(str::to_string);
            }
        }
        reply
    }

    /// The one notice telling `event`'s sender that it was given up on.
    pub fn failure(event: &InboundEvent, text: impl Into<String>) -> Self {
        Self::message(crate::ids::failed_key(&event.id.0), event.conversation.to_string(), text)
            .quoting(event.quote_target())
    }

    /// A message that answers no event (an approval request, a welcome, one the agent sends):
    /// `key` makes it idempotent, `conversation` is `channel:id[/thread]`.
    pub fn message(key: impl Into<String>, conversation: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            private_to: None,
            conversation: conversation.into(),
            text: text.into(),
            buttons: Vec::new(),
            reply_to: None,
            file: None,
            title: None,
        }
    }

    /// Shown to one person only.
    pub fn private(mut self, to: Option<PrivateTo>) -> Self {
        self.private_to = to;
        self
    }

    pub fn with_buttons(mut self, buttons: Vec<Button>) -> Self {
        self.buttons = buttons;
        self
    }

    /// Sent as `file`'s caption.
    pub fn with_file(mut self, file: OutFile) -> Self {
        self.file = Some(file);
        self
    }

    /// Quoting the platform message `reply_to` (where the platform shows quotes).
    pub fn quoting(mut self, reply_to: Option<String>) -> Self {
        self.reply_to = reply_to;
        self
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutboxRow {
    pub id: i64,
    pub key: String,
    pub private_to: Option<PrivateTo>,
    pub channel: String,
    pub conversation: String,
    pub text: String,
    pub buttons: Vec<Button>,
    pub reply_to: Option<String>,
    pub status: OutboxStatus,
    /// Platform message ids of the chunks delivered so far (the first is the streamed draft).
    pub platform_ids: Vec<String>,
    pub attempts: i32,
    pub next_attempt_ms: i64,
    pub last_error: Option<String>,
    pub created_ms: i64,
    pub updated_ms: i64,
    pub file: Option<OutFile>,
    pub title: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutboxMark {
    /// Delivered; `platform_ids` are the ids of every chunk (recorded in the same write).
    /// `text` is what was delivered: if the row was revised meanwhile it stays pending.
    Sent {
        platform_ids: Vec<String>,
        text: String,
    },
    Failed {
        error: String,
    },
    /// Try again at `next_attempt_ms`; `count_attempt` is false for rate limits.
    Retry {
        next_attempt_ms: i64,
        error: String,
        count_attempt: bool,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use butler_channel::{Actor, ConversationKind, ConversationRef, EventBody, EventId, Identity};

    fn event(kind: ConversationKind) -> InboundEvent {
        InboundEvent {
            id: EventId("tg:7".into()),
            actor: Actor::new(Identity::new("telegram", "42")),
            conversation: ConversationRef::new("telegram", "-100"),
            kind,
            addressed: true,
            reply_to: None,
            message_id: Some("m9".into()),
            body: EventBody::Message { text: "hi".into() },
            at_ms: 0,
            attachments: Vec::new(),
        }
    }

    #[test]
    fn each_kind_of_message_is_made_one_way() {
        let (group, direct) = (event(ConversationKind::Group), event(ConversationKind::Direct));
        // (made, key, conversation, text, quotes)
        let cases = [
            (NewOutbox::reply(&group, "answer"), "tg:7:reply", "telegram:-100", "answer", Some("m9")),
            (NewOutbox::reply(&direct, "answer"), "tg:7:reply", "telegram:-100", "answer", None),
            (NewOutbox::failure(&group, "sorry"), "tg:7:failed", "telegram:-100", "sorry", Some("m9")),
            (NewOutbox::message("send:1", "web:c1", "hello"), "send:1", "web:c1", "hello", None),
        ];
        for (made, key, conversation, text, quotes) in cases {
            let got = (made.key.as_str(), made.conversation.as_str(), made.text.as_str(), made.reply_to.as_deref());
            assert_eq!(got, (key, conversation, text, quotes));
            assert!(made.private_to.is_none() && made.buttons.is_empty() && made.file.is_none(), "{made:?}");
        }
        let button = Button::new("OK", "a1", butler_channel::ButtonStyle::Primary);
        let file =
            OutFile { path: "/w/a.png".into(), name: "a.png".into(), mime: "image/png".into(), size: 3, photo: true };
        let dressed = NewOutbox::message("k", "web:c1", "")
            .with_buttons(vec![button.clone()])
            .with_file(file.clone())
            .quoting(Some("m1".into()));
        assert_eq!((dressed.buttons, dressed.file, dressed.reply_to), (vec![button], Some(file), Some("m1".into())));
    }
}
