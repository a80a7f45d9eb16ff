//! Plain rows the store reads and writes. Times are Unix milliseconds.

use super::outbox_records::NewOutbox;
use super::usage_records::TurnUsage;
use crate::llm::ToolCall;
use butler_channel::{Button, ConversationKind, InboundEvent};
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InboxStatus {
    Pending,
    Processing,
    Done,
    Dropped,
    Failed,
}

impl InboxStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Processing => "processing",
            Self::Done => "done",
            Self::Dropped => "dropped",
            Self::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "pending" => Self::Pending,
            "processing" => Self::Processing,
            "done" => Self::Done,
            "dropped" => Self::Dropped,
            "failed" => Self::Failed,
            _ => return None,
        })
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct InboxRow {
    pub seq: i64,
    pub event: InboundEvent,
    pub status: InboxStatus,
    /// Tries counted so far: tries that ended in an error, and tries that were running when
    /// their process died (a claim counts one; it is given back if the turn never began).
    pub attempts: i32,
    /// Process deaths in a row during which this event was running its turn (a poison event
    /// reaches `[limits] max_event_attempts`); a try that ends any other way starts it over.
    pub crashes: i32,
    pub error: Option<String>,
    pub created_ms: i64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionRow {
    pub id: String,
    pub key: String,
    pub user_id: String,
    pub conversation: String,
    /// Built once when the session opens and sent byte-for-byte on every turn.
    pub system_prompt: String,
    pub version: i64,
    pub created_ms: i64,
    pub updated_ms: i64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewSession {
    pub id: String,
    pub key: String,
    pub user_id: String,
    pub conversation: String,
    pub system_prompt: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Assistant => "assistant",
            Self::Tool => "tool",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "user" => Self::User,
            "assistant" => Self::Assistant,
            "tool" => Self::Tool,
            _ => return None,
        })
    }
}

/// One transcript entry: a user message, an assistant message (text and/or tool calls) or a
/// tool result.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct NewMessage {
    pub role: Option<Role>,
    pub content: String,
    /// Speaker's name for user messages in groups.
    pub name: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    /// For tool results: the call they answer.
    pub tool_call_id: Option<String>,
    /// For tool results: whether the tool failed.
    pub is_error: bool,
    /// For user messages: the inbound event they came from.
    pub event_id: Option<String>,
    /// For tool results: images the tool returned, shown to vision models.
    pub images: Vec<crate::llm::Image>,
}

impl NewMessage {
    pub fn user(content: impl Into<String>, name: Option<String>, event_id: Option<String>) -> Self {
        Self { role: Some(Role::User), content: content.into(), name, event_id, ..Self::default() }
    }

    pub fn assistant(content: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Self { role: Some(Role::Assistant), content: content.into(), tool_calls, ..Self::default() }
    }

    pub fn tool(call_id: impl Into<String>, content: impl Into<String>, is_error: bool) -> Self {
        Self {
            role: Some(Role::Tool),
            content: content.into(),
            tool_call_id: Some(call_id.into()),
            is_error,
            ..Self::default()
        }
    }

    pub fn role(&self) -> Role {
        self.role.unwrap_or(Role::User)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredMessage {
    pub seq: i64,
    pub msg: NewMessage,
    pub created_ms: i64,
}

/// A summary checkpoint: what a session's messages up to `up_to_seq` said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SummaryRow {
    pub up_to_seq: i64,
    pub text: String,
    pub created_ms: i64,
}

/// What ends one inbound event, applied in one transaction.
#[derive(Clone, Debug, PartialEq)]
pub struct TurnCommit {
    pub inbox_id: String,
    pub inbox_status: InboxStatus,
    /// Transcript entries to append (may be empty, e.g. for a command).
    pub session_id: Option<String>,
    pub messages: Vec<NewMessage>,
    /// The reply; if a draft with the same key exists it becomes this final text, `pending`.
    pub reply: Option<NewOutbox>,
    pub usage: Option<TurnUsage>,
    /// Approvals the turn asks for (it parks until they are decided).
    pub approvals: Vec<ApprovalRow>,
    /// Further messages to deliver (e.g. the approval requests with their buttons).
    pub notices: Vec<NewOutbox>,
    /// With several replicas: the session's fencing token this replica took with its lease.
    /// The commit is refused ([`StoreError::Fenced`](super::StoreError::Fenced)) if another
    /// replica has taken a newer one since.
    pub fence: Option<Fence>,
}

/// A session key's fencing token, from [`ReplicaStore::fence_take`](super::ReplicaStore::fence_take).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fence {
    pub key: String,
    pub token: i64,
}

/// Whose memory, and in which scope: a user's own memory (DMs) or what they keep inside one
/// group conversation. Scopes never see each other.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MemoryScope {
    pub user_id: String,
    /// `""` for the user's own memory, `group:<conversation>` inside a group.
    pub scope: String,
}

impl MemoryScope {
    pub fn personal(user_id: impl Into<String>) -> Self {
        Self { user_id: user_id.into(), scope: String::new() }
    }

    pub fn group(user_id: impl Into<String>, conversation: &str) -> Self {
        Self { user_id: user_id.into(), scope: format!("group:{conversation}") }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryRow {
    pub id: i64,
    pub user_id: String,
    pub scope: String,
    pub text: String,
    pub source: Option<String>,
    pub created_ms: i64,
}

/// A user's role (its home is [`crate::config`], which names roles in `[access]` and `[permissions]`).
pub use crate::config::UserRole;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserRow {
    pub id: String,
    pub display_name: Option<String>,
    pub role: UserRole,
    /// IANA zone, e.g. `Europe/Berlin`.
    pub timezone: String,
    pub created_ms: i64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewUser {
    pub id: String,
    pub display_name: Option<String>,
    pub role: UserRole,
    pub timezone: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConversationRow {
    /// `channel:id[/thread]`.
    pub id: String,
    pub kind: ConversationKind,
    /// The identity that created it (`web:alice`); for web chat, the only one who may use it.
    pub owner: String,
    pub created_ms: i64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewWebMessage {
    pub conversation: String,
    /// Idempotency key (event id for user messages, outbox key + chunk for replies).
    pub key: String,
    /// `user` or `assistant`.
    pub role: String,
    pub author: String,
    pub text: String,
    pub buttons: Vec<Button>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WebMessage {
    pub id: i64,
    pub conversation: String,
    #[serde(skip)]
    pub key: String,
    pub role: String,
    pub author: String,
    pub text: String,
    pub buttons: Vec<Button>,
    pub created_ms: i64,
    pub updated_ms: i64,
}

/// A web conversation as the page's conversation list shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebConversation {
    /// The stored id, `web:<id>`.
    pub id: String,
    /// The identity that owns it, `web:<user>`.
    pub owner: String,
    /// The user's rename, if any.
    pub title: Option<String>,
    /// The start (at most 200 characters) of the first shown user message, else of the first
    /// shown message.
    pub first_text: Option<String>,
    pub created_ms: i64,
    /// The latest message change, else `created_ms`.
    pub last_ms: i64,
    /// The latest time Butler wrote here on its own (not answering the user), if ever.
    pub butler_ms: Option<i64>,
    /// Messages with an id up to this one are hidden (the conversation was deleted then).
    pub hidden_upto: Option<i64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodeKind {
    /// An unknown identity asks the owner to let it in.
    Pair,
    /// A user links another of their identities to themselves.
    Link,
}

impl CodeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pair => "pair",
            Self::Link => "link",
        }
    }
}

/// A one-time code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeRow {
    pub kind: CodeKind,
    pub code: String,
    /// Pair: the identity asking to be let in. Link: the identity that asked for the code.
    pub identity: String,
    /// Link: the user the new identity joins.
    pub user_id: Option<String>,
    pub display_name: Option<String>,
    /// Where to tell the asker the outcome (`channel:id[/thread]`).
    pub conversation: String,
    pub created_ms: i64,
    pub expires_ms: i64,
}

/// Why an event was dropped, refused, paired or routed (non-routine decisions only).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecisionRow {
    pub at_ms: i64,
    pub event_id: String,
    pub actor: String,
    pub conversation: String,
    /// `drop`, `refused`, `pairing`, `notify`, `agent`, `locked`, ...
    pub decision: String,
    pub reason: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStatus {
    Pending,
    Approved,
    Denied,
    /// Nobody answered in time (counts as a denial).
    Expired,
    /// Stopped with /stop, or superseded by a new message (counts as a denial).
    Cancelled,
}

impl ApprovalStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Denied => "denied",
            Self::Expired => "expired",
            Self::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "pending" => Self::Pending,
            "approved" => Self::Approved,
            "denied" => Self::Denied,
            "expired" => Self::Expired,
            "cancelled" => Self::Cancelled,
            _ => return None,
        })
    }
}

/// What an approval is about: a tool call a person allows or not, or a question the model
/// asked a person (`ask_user`), answered by a clicked option or a typed reply.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalKind {
    #[default]
    Tool,
    Question,
}

impl ApprovalKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tool => "tool",
            Self::Question => "question",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "tool" => Self::Tool,
            "question" => Self::Question,
            _ => return None,
        })
    }
}

/// Which pending request a message answers (see `ApprovalStore::approval_waiting`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Waiting<'a> {
    /// The oldest question asked of this identity: a message from them answers it.
    QuestionFor(&'a str),
    /// The request delivered as this platform message id (a reaction to it, or a numbered
    /// reply quoting it).
    Message(&'a str),
}

/// A risky tool call (or a question to a person) waiting for (or past) a person's decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApprovalRow {
    /// 32 hex characters (128 random bits); the buttons carry only this id.
    pub id: String,
    pub session_id: String,
    pub session_key: String,
    /// Where the request was shown (`channel:id[/thread]`).
    pub conversation: String,
    /// The event whose turn asked.
    pub event_id: String,
    pub tool_call_id: String,
    pub tool: String,
    /// SHA-256 (hex) of the exact argument text the model sent.
    pub args_hash: String,
    /// What will happen, in plain words, secrets masked; for a question, the question.
    pub summary: String,
    /// The identity whose turn asked, and its user.
    pub requester: String,
    pub requester_user: String,
    /// Who may decide: `requester`, `role:owner`, `user:<id>`, or an identity. A question has
    /// exactly the identity it was asked of.
    pub approvers: Vec<String>,
    /// A tool call or a question (`tool` is then `ask_user`).
    pub kind: ApprovalKind,
    /// A question's offered answers (the buttons, in order); empty for tool calls.
    pub options: Vec<String>,
    /// A question's answer once answered: the clicked option's text or the typed reply.
    pub answer: Option<String>,
    /// What exactly the call would do (content, diff, command, request, arguments), secrets
    /// masked; `None` for questions and for tools that say nothing more than the summary.
    pub detail: Option<super::Detail>,
    pub status: ApprovalStatus,
    /// When approved: `once` or `session`.
    pub scope: Option<String>,
    pub decided_by: Option<String>,
    pub decided_ms: Option<i64>,
    pub created_ms: i64,
    pub expires_ms: i64,
}

#[cfg(test)]
impl ApprovalRow {
    /// A pending tool approval of `tool` in `conversation` asked by `requester`, for unit tests.
    pub(crate) fn pending(tool: &str, conversation: &str, requester: (&str, &str), summary: &str) -> Self {
        Self {
            id: "0123456789abcdef0123456789abcdef".into(),
            session_id: "s".into(),
            session_key: "k".into(),
            conversation: conversation.into(),
            event_id: "e".into(),
            tool_call_id: "c1".into(),
            tool: tool.into(),
            args_hash: "h".into(),
            summary: summary.into(),
            requester: requester.0.into(),
            requester_user: requester.1.into(),
            approvers: vec!["requester".into()],
            kind: ApprovalKind::Tool,
            options: Vec::new(),
            answer: None,
            detail: None,
            status: ApprovalStatus::Pending,
            scope: None,
            decided_by: None,
            decided_ms: None,
            created_ms: 0,
            expires_ms: 600_000,
        }
    }
}

/// A decision on a pending approval, and the text its message is edited to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApprovalDecision {
    pub status: ApprovalStatus,
    pub scope: Option<String>,
    pub decided_by: String,
    /// The approval message's new text (its buttons are removed).
    pub message: String,
    /// A question's answer (stored with the decision); `None` for tool calls.
    pub answer: Option<String>,
}

/// One permission decision about one tool call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditRow {
    pub at_ms: i64,
    /// Who: the requester for policy decisions, the approver for approval decisions.
    pub actor: String,
    pub user_id: String,
    pub session_id: String,
    pub tool: String,
    pub args_hash: String,
    /// `allowed`, `denied`, `asked`, `approved`, `approved_session`, `rejected`, `expired`,
    /// `cancelled`, `blocked` (by a hook), ...
    pub outcome: String,
    pub reason: String,
}
