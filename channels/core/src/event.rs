//! Inbound side: who spoke, where, and what arrived.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A person (or bot) on one platform, written `channel:platform_user_id` everywhere.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(try_from = "String", into = "String")]
pub struct Identity {
    pub channel: String,
    pub user_id: String,
}

impl Identity {
    pub fn new(channel: impl Into<String>, user_id: impl Into<String>) -> Self {
        Self { channel: channel.into(), user_id: user_id.into() }
    }
}

impl fmt::Display for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.channel, self.user_id)
    }
}

/// Splits `channel:rest`, requiring both parts to be non-empty and the channel to be a plain name.
fn split_channel(s: &str) -> Result<(&str, &str), String> {
    let (channel, rest) =
        s.split_once(':').ok_or_else(|| format!("`{s}` is not of the form channel:id (e.g. telegram:123456789)"))?;
    let plain = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-';
    if channel.is_empty() || !channel.chars().all(plain) {
        return Err(format!("`{s}`: the channel before `:` must be a lowercase name such as telegram"));
    }
    if rest.is_empty() {
        return Err(format!("`{s}`: nothing after `{channel}:`"));
    }
    Ok((channel, rest))
}

impl FromStr for Identity {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (channel, user) = split_channel(s)?;
        Ok(Self::new(channel, user))
    }
}

impl TryFrom<String> for Identity {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

impl From<Identity> for String {
    fn from(i: Identity) -> String {
        i.to_string()
    }
}

/// A place messages are exchanged, written `channel:conversation_id` with an optional `/thread`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(try_from = "String", into = "String")]
pub struct ConversationRef {
    pub channel: String,
    pub id: String,
    pub thread: Option<String>,
}

impl ConversationRef {
    pub fn new(channel: impl Into<String>, id: impl Into<String>) -> Self {
        Self { channel: channel.into(), id: id.into(), thread: None }
    }

    pub fn with_thread(mut self, thread: Option<String>) -> Self {
        self.thread = thread;
        self
    }
}

impl fmt::Display for ConversationRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.channel, self.id)?;
        if let Some(t) = &self.thread {
            write!(f, "/{t}")?;
        }
        Ok(())
    }
}

impl FromStr for ConversationRef {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (channel, rest) = split_channel(s)?;
        let (id, thread) = match rest.split_once('/') {
            Some((id, t)) if !id.is_empty() && !t.is_empty() => (id, Some(t.to_string())),
            Some(_) => return Err(format!("`{s}`: expected channel:conversation/thread")),
            None => (rest, None),
        };
        Ok(Self { channel: channel.to_string(), id: id.to_string(), thread })
    }
}

impl TryFrom<String> for ConversationRef {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

impl From<ConversationRef> for String {
    fn from(c: ConversationRef) -> String {
        c.to_string()
    }
}

/// Whether a conversation is one person with Butler or several people together.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConversationKind {
    Direct,
    Group,
}

/// Who sent an event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Actor {
    pub identity: Identity,
    /// A human-readable name for transcripts ("Alice"); falls back to the platform id.
    pub display_name: Option<String>,
    /// Other bots (and Butler itself) are never answered.
    #[serde(default)]
    pub is_bot: bool,
}

impl Actor {
    pub fn new(identity: Identity) -> Self {
        Self { identity, display_name: None, is_bot: false }
    }

    pub fn name(&self) -> &str {
        self.display_name.as_deref().unwrap_or(&self.identity.user_id)
    }
}

/// The stable, platform-derived id of an inbound event (`telegram:update:123`, `web:<uuid>`).
/// The inbox stores it under a unique constraint, so a redelivery is recognised and dropped.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(transparent)]
pub struct EventId(pub String);

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What arrived.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventBody {
    /// A chat message (already normalized to plain text, with captions and descriptions of
    /// attachments folded in by the adapter).
    Message { text: String },
    /// A button click: `action` is the opaque id the button was sent with; `message` the
    /// platform id of the message it sits on; `interaction` the platform's handle for answering
    /// this very click (a Telegram callback query id, a Slack response URL, a Discord
    /// interaction token), if it has one.
    Action {
        action: String,
        message: Option<String>,
        #[serde(default)]
        interaction: Option<String>,
    },
    /// A scheduled job or signed webhook trigger entering the same path as chat messages.
    /// `payload` carries the structured event (e.g. `{"headers": {...}, "body": {...}}`).
    Trigger {
        source: String,
        text: String,
        #[serde(default)]
        payload: serde_json::Value,
    },
}

/// One normalized inbound event. Every source produces exactly this.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InboundEvent {
    pub id: EventId,
    pub actor: Actor,
    pub conversation: ConversationRef,
    pub kind: ConversationKind,
    /// True when the event is meant for Butler: a DM, a mention, a reply to Butler, a command.
    pub addressed: bool,
    /// The platform message id this one replies to, if any.
    pub reply_to: Option<String>,
    /// The platform message id of this message, if it has one.
    pub message_id: Option<String>,
    pub body: EventBody,
    /// Unix milliseconds when the platform says it happened (or when it was received).
    pub at_ms: i64,
    /// Files attached to a message (photos, voice notes, documents), as the platform describes
    /// them; fetched through the channel's [`crate::FileSource`] once the sender is known.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<crate::Attachment>,
}

impl InboundEvent {
    pub fn channel(&self) -> &str {
        &self.conversation.channel
    }

    /// The text of a message or trigger; `None` for button clicks.
    pub fn text(&self) -> Option<&str> {
        match &self.body {
            EventBody::Message { text } | EventBody::Trigger { text, .. } => Some(text),
            EventBody::Action { .. } => None,
        }
    }

    /// The message a reply to this event should quote: the triggering message in a group, so
    /// readers see what is being answered; nothing in a direct chat, where a quote is noise.
    pub fn quote_target(&self) -> Option<String> {
        match self.kind {
            ConversationKind::Group => self.message_id.clone(),
            ConversationKind::Direct => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_and_conversations_parse_and_print() {
        let cases: &[(&str, Result<&str, &str>)] = &[
            ("telegram:123456789", Ok("telegram:123456789")),
            ("slack:U2CERLKJA", Ok("slack:U2CERLKJA")),
            ("web:alice", Ok("web:alice")),
            ("nocolon", Err("not of the form")),
            (":x", Err("lowercase name")),
            ("Tele:x", Err("lowercase name")),
            ("web:", Err("nothing after")),
        ];
        for (input, want) in cases {
            let got = input.parse::<Identity>().map(|i| i.to_string());
            match (got, want) {
                (Ok(g), Ok(w)) => assert_eq!(&g, w),
                (Err(e), Err(w)) => assert!(e.contains(w), "{input}: {e}"),
                (g, w) => panic!("{input}: got {g:?}, want {w:?}"),
            }
        }
        let c: ConversationRef = "telegram:-1001234567890/42".parse().unwrap();
        assert_eq!((c.id.as_str(), c.thread.as_deref()), ("-1001234567890", Some("42")));
        assert_eq!(c.to_string(), "telegram:-1001234567890/42");
        let s: ConversationRef = "slack:C024BE91L/1355517523.000005".parse().unwrap();
        assert_eq!(s.thread.as_deref(), Some("1355517523.000005"));
        assert!("web:c1/".parse::<ConversationRef>().is_err());
        let j = serde_json::to_string(&s).unwrap();
        assert_eq!(j, "\"slack:C024BE91L/1355517523.000005\"");
        assert_eq!(serde_json::from_str::<ConversationRef>(&j).unwrap(), s);
    }

    #[test]
    fn replies_quote_the_message_only_in_groups() {
        let cases = [(ConversationKind::Group, Some("m1")), (ConversationKind::Direct, None)];
        for (kind, want) in cases {
            let event = InboundEvent {
                id: EventId("telegram:1".into()),
                actor: Actor { identity: "telegram:7".parse().unwrap(), display_name: None, is_bot: false },
                conversation: "telegram:-100".parse().unwrap(),
                kind,
                addressed: true,
                reply_to: None,
                message_id: Some("m1".into()),
                body: EventBody::Message { text: "hi".into() },
                at_ms: 0,
                attachments: Vec::new(),
            };
            assert_eq!(event.quote_target().as_deref(), want, "{kind:?}");
        }
    }
}
