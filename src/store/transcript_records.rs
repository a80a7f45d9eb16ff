//! Rows of past conversations ([`TranscriptStore`](super::TranscriptStore)): where a search
//! looks ([`TranscriptScope`]), what it finds ([`TranscriptHit`]), and one entry of a person's
//! conversation list ([`SessionSummary`]). Times are Unix milliseconds.
//!
//! Plain data: nothing here reads the database. A scope must never widen on its own: the store
//! decides from it whose sessions a search may read.

use super::records::Role;

/// Whose conversations a transcript search reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TranscriptScope {
    /// Every direct session (key `dm:...`) of the person, on every channel and account linked to
    /// them; never a group's, never anyone else's.
    Private,
    /// Only the sessions of this one group session key (`group:...`), whoever spoke there.
    Group(String),
}

/// The session key prefix of direct conversations.
pub const DIRECT_KEY_PREFIX: &str = "dm:";
/// The session key prefix of group conversations.
pub const GROUP_KEY_PREFIX: &str = "group:";

/// One message a transcript search found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TranscriptHit {
    pub session_id: String,
    pub session_key: String,
    /// The conversation the session was opened in: `channel:id[/thread]`.
    pub conversation: String,
    pub seq: i64,
    /// `User` or `Assistant` (tool output is never searched).
    pub role: Role,
    /// The message's text (the search layer cuts it to an excerpt).
    pub content: String,
    /// When the message was written.
    pub created_ms: i64,
    /// When its session (the conversation) started.
    pub session_created_ms: i64,
}

impl TranscriptHit {
    /// `telegram` of `telegram:42`.
    pub fn channel(&self) -> &str {
        channel_of(&self.conversation)
    }
}

/// One of a person's direct conversations, for `/sessions`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionSummary {
    pub id: String,
    pub key: String,
    /// The conversation the session was opened in: `channel:id[/thread]`.
    pub conversation: String,
    pub created_ms: i64,
    pub updated_ms: i64,
    /// Its latest activity: when its last message was written.
    pub last_ms: i64,
    /// `None` while it is the open session of its key.
    pub closed_ms: Option<i64>,
    /// How many messages its transcript holds (tool calls and results included).
    pub messages: i64,
    /// The start of its first user message.
    pub title: Option<String>,
}

impl SessionSummary {
    /// `telegram` of `telegram:42`.
    pub fn channel(&self) -> &str {
        channel_of(&self.conversation)
    }

    pub fn is_open(&self) -> bool {
        self.closed_ms.is_none()
    }
}

fn channel_of(conversation: &str) -> &str {
    conversation.split_once(':').map_or(conversation, |(c, _)| c)
}
