//! Raw rows as both databases return them (`FromRow`, plain column types) and their conversion
//! into the store's record types, plus the column lists every query selects.
//!
//! Shared by both backends. It must never run a query itself, and never guess when stored data
//! does not decode: that is reported as [`StoreError::Corrupt`].

use super::error::corrupt;
use crate::store::{
    ApprovalKind, ApprovalRow, ApprovalStatus, AuditRow, CodeKind, CodeRow, ConversationRow, DecisionRow, Detail,
    DetailKind, InboxRow, InboxStatus, MemoryRow, NewMessage, OutboxRow, OutboxStatus, Result, Role, SessionRow,
    StoreError, StoredMessage, UserRole, UserRow, WebMessage,
};
use butler_channel::{Button, ConversationKind};

/// Column lists, as literals so that queries can be built with `concat!` and stay `'static`.
macro_rules! cols {
    (inbox) => {
        "seq, event, status, attempts, crashes, error, created_ms"
    };
    (session) => {
        "id, key, user_id, conversation, system_prompt, version, created_ms, updated_ms"
    };
    (message) => {
        "seq, role, content, name, tool_calls, tool_call_id, is_error, event_id, created_ms, images"
    };
    (outbox) => {
        "id, key, channel, conversation, text, buttons, reply_to, status, platform_ids, attempts, \
         next_attempt_ms, last_error, created_ms, updated_ms, private_to, file, title"
    };
    (memory) => {
        "id, user_id, scope, text, source, created_ms"
    };
    (user) => {
        "id, display_name, role, timezone, created_ms"
    };
    (conversation) => {
        "id, kind, owner, created_ms"
    };
    (web) => {
        "id, conversation, key, role, author, text, buttons, created_ms, updated_ms"
    };
    (code) => {
        "kind, code, identity, user_id, display_name, conversation, created_ms, expires_ms"
    };
    (decision) => {
        "at_ms, event_id, actor, conversation, decision, reason"
    };
    (approval) => {
        "id, session_id, session_key, conversation, event_id, tool_call_id, tool, args_hash, summary, requester, \
         requester_user, approvers, kind, options, answer, status, scope, decided_by, decided_ms, created_ms, \
         expires_ms, detail_kind, detail"
    };
    (audit) => {
        "at_ms, actor, user_id, session_id, tool, args_hash, outcome, reason"
    };
}
pub(crate) use cols;

pub(crate) fn to_json<T: serde::Serialize + ?Sized>(what: &str, value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|e| StoreError::Corrupt(format!("cannot encode {what}: {e}")))
}

pub(crate) fn from_json<T: serde::de::DeserializeOwned>(what: &str, text: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| corrupt(what, e))
}

/// `telegram:123/4` -> `telegram`.
pub(crate) fn channel_of(conversation: &str) -> &str {
    conversation.split_once(':').map_or(conversation, |(c, _)| c)
}

pub(crate) fn kind_str(kind: ConversationKind) -> &'static str {
    match kind {
        ConversationKind::Direct => "direct",
        ConversationKind::Group => "group",
    }
}

/// Converts a `usize` limit into a SQL `LIMIT` value.
pub(crate) fn sql_limit(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

#[derive(sqlx::FromRow)]
pub(crate) struct InboxRaw {
    seq: i64,
    event: String,
    status: String,
    attempts: i32,
    crashes: i32,
    error: Option<String>,
    created_ms: i64,
}

impl InboxRaw {
    /// The row as SQLite's writer connection reads it (columns in `cols!(inbox)` order).
    pub(crate) fn from_lite(r: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            seq: r.get(0)?,
            event: r.get(1)?,
            status: r.get(2)?,
            attempts: r.get(3)?,
            crashes: r.get(4)?,
            error: r.get(5)?,
            created_ms: r.get(6)?,
        })
    }
}

impl TryFrom<InboxRaw> for InboxRow {
    type Error = StoreError;
    fn try_from(r: InboxRaw) -> Result<Self> {
        Ok(InboxRow {
            seq: r.seq,
            event: from_json("inbox.event", &r.event)?,
            status: InboxStatus::parse(&r.status).ok_or_else(|| corrupt("inbox.status", &r.status))?,
            attempts: r.attempts,
            crashes: r.crashes,
            error: r.error,
            created_ms: r.created_ms,
        })
    }
}

#[derive(sqlx::FromRow)]
pub(crate) struct SessionRaw {
    id: String,
    key: String,
    user_id: String,
    conversation: String,
    system_prompt: String,
    version: i64,
    created_ms: i64,
    updated_ms: i64,
}

impl From<SessionRaw> for SessionRow {
    fn from(r: SessionRaw) -> Self {
        SessionRow {
            id: r.id,
            key: r.key,
            user_id: r.user_id,
            conversation: r.conversation,
            system_prompt: r.system_prompt,
            version: r.version,
            created_ms: r.created_ms,
            updated_ms: r.updated_ms,
        }
    }
}

#[derive(sqlx::FromRow)]
pub(crate) struct MessageRaw {
    seq: i64,
    role: String,
    content: String,
    name: Option<String>,
    tool_calls: Option<String>,
    tool_call_id: Option<String>,
    is_error: bool,
    event_id: Option<String>,
    created_ms: i64,
    images: Option<String>,
}

impl TryFrom<MessageRaw> for StoredMessage {
    type Error = StoreError;
    fn try_from(r: MessageRaw) -> Result<Self> {
        let tool_calls = match r.tool_calls.as_deref() {
            None | Some("") => Vec::new(),
            Some(j) => from_json("messages.tool_calls", j)?,
        };
        let images = match r.images.as_deref() {
            None | Some("") => Vec::new(),
            Some(j) => from_json("messages.images", j)?,
        };
        Ok(StoredMessage {
            seq: r.seq,
            msg: NewMessage {
                role: Some(Role::parse(&r.role).ok_or_else(|| corrupt("messages.role", &r.role))?),
                content: r.content,
                name: r.name,
                tool_calls,
                tool_call_id: r.tool_call_id,
                is_error: r.is_error,
                event_id: r.event_id,
                images,
            },
            created_ms: r.created_ms,
        })
    }
}

/// `images` as stored: `NULL` when there are none.
pub(crate) fn images_json(msg: &NewMessage) -> Result<Option<String>> {
    if msg.images.is_empty() {
        Ok(None)
    } else {
        to_json("images", &msg.images).map(Some)
    }
}

/// `tool_calls` as stored: `NULL` when there are none.
pub(crate) fn tool_calls_json(msg: &NewMessage) -> Result<Option<String>> {
    if msg.tool_calls.is_empty() {
        Ok(None)
    } else {
        to_json("tool calls", &msg.tool_calls).map(Some)
    }
}

#[derive(sqlx::FromRow)]
pub(crate) struct OutboxRaw {
    id: i64,
    key: String,
    channel: String,
    conversation: String,
    text: String,
    buttons: String,
    reply_to: Option<String>,
    status: String,
    platform_ids: String,
    attempts: i32,
    next_attempt_ms: i64,
    last_error: Option<String>,
    created_ms: i64,
    updated_ms: i64,
    private_to: Option<String>,
    file: Option<String>,
    title: Option<String>,
}

impl OutboxRaw {
    /// The row as SQLite's writer connection reads it (columns in `cols!(outbox)` order).
    pub(crate) fn from_lite(r: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: r.get(0)?,
            key: r.get(1)?,
            channel: r.get(2)?,
            conversation: r.get(3)?,
            text: r.get(4)?,
            buttons: r.get(5)?,
            reply_to: r.get(6)?,
            status: r.get(7)?,
            platform_ids: r.get(8)?,
            attempts: r.get(9)?,
            next_attempt_ms: r.get(10)?,
            last_error: r.get(11)?,
            created_ms: r.get(12)?,
            updated_ms: r.get(13)?,
            private_to: r.get(14)?,
            file: r.get(15)?,
            title: r.get(16)?,
        })
    }
}

impl TryFrom<OutboxRaw> for OutboxRow {
    type Error = StoreError;
    fn try_from(r: OutboxRaw) -> Result<Self> {
        Ok(OutboxRow {
            id: r.id,
            key: r.key,
            channel: r.channel,
            conversation: r.conversation,
            text: r.text,
            buttons: from_json::<Vec<Button>>("outbox.buttons", &r.buttons)?,
            reply_to: r.reply_to,
            status: OutboxStatus::parse(&r.status).ok_or_else(|| corrupt("outbox.status", &r.status))?,
            platform_ids: from_json("outbox.platform_ids", &r.platform_ids)?,
            attempts: r.attempts,
            next_attempt_ms: r.next_attempt_ms,
            last_error: r.last_error,
            created_ms: r.created_ms,
            updated_ms: r.updated_ms,
            private_to: r.private_to.as_deref().map(|p| from_json("outbox.private_to", p)).transpose()?,
            file: r.file.as_deref().map(|f| from_json("outbox.file", f)).transpose()?,
            title: r.title,
        })
    }
}

#[derive(sqlx::FromRow)]
pub(crate) struct MemoryRaw {
    id: i64,
    user_id: String,
    scope: String,
    text: String,
    source: Option<String>,
    created_ms: i64,
}

impl MemoryRaw {
    /// The row as the SQLite writer's connection reads it (columns in `cols!(memory)` order).
    pub(crate) fn from_lite(r: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: r.get(0)?,
            user_id: r.get(1)?,
            scope: r.get(2)?,
            text: r.get(3)?,
            source: r.get(4)?,
            created_ms: r.get(5)?,
        })
    }
}

impl From<MemoryRaw> for MemoryRow {
    fn from(r: MemoryRaw) -> Self {
        MemoryRow {
            id: r.id,
            user_id: r.user_id,
            scope: r.scope,
            text: r.text,
            source: r.source,
            created_ms: r.created_ms,
        }
    }
}

#[derive(sqlx::FromRow)]
pub(crate) struct UserRaw {
    id: String,
    display_name: Option<String>,
    role: String,
    timezone: String,
    created_ms: i64,
}

impl TryFrom<UserRaw> for UserRow {
    type Error = StoreError;
    fn try_from(r: UserRaw) -> Result<Self> {
        Ok(UserRow {
            role: UserRole::parse(&r.role).ok_or_else(|| corrupt("users.role", &r.role))?,
            id: r.id,
            display_name: r.display_name,
            timezone: r.timezone,
            created_ms: r.created_ms,
        })
    }
}

#[derive(sqlx::FromRow)]
pub(crate) struct ConversationRaw {
    id: String,
    kind: String,
    owner: String,
    created_ms: i64,
}

impl TryFrom<ConversationRaw> for ConversationRow {
    type Error = StoreError;
    fn try_from(r: ConversationRaw) -> Result<Self> {
        let kind = match r.kind.as_str() {
            "direct" => ConversationKind::Direct,
            "group" => ConversationKind::Group,
            other => return Err(corrupt("conversations.kind", other)),
        };
        Ok(ConversationRow { id: r.id, kind, owner: r.owner, created_ms: r.created_ms })
    }
}

#[derive(sqlx::FromRow)]
pub(crate) struct WebRaw {
    id: i64,
    conversation: String,
    key: String,
    role: String,
    author: String,
    text: String,
    buttons: String,
    created_ms: i64,
    updated_ms: i64,
}

impl WebRaw {
    /// The row as SQLite's writer connection reads it (columns in `cols!(web)` order).
    pub(crate) fn from_lite(r: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: r.get(0)?,
            conversation: r.get(1)?,
            key: r.get(2)?,
            role: r.get(3)?,
            author: r.get(4)?,
            text: r.get(5)?,
            buttons: r.get(6)?,
            created_ms: r.get(7)?,
            updated_ms: r.get(8)?,
        })
    }
}

impl TryFrom<WebRaw> for WebMessage {
    type Error = StoreError;
    fn try_from(r: WebRaw) -> Result<Self> {
        Ok(WebMessage {
            buttons: from_json("web_messages.buttons", &r.buttons)?,
            id: r.id,
            conversation: r.conversation,
            key: r.key,
            role: r.role,
            author: r.author,
            text: r.text,
            created_ms: r.created_ms,
            updated_ms: r.updated_ms,
        })
    }
}

#[derive(sqlx::FromRow)]
pub(crate) struct CodeRaw {
    kind: String,
    code: String,
    identity: String,
    user_id: Option<String>,
    display_name: Option<String>,
    conversation: String,
    created_ms: i64,
    expires_ms: i64,
}

impl TryFrom<CodeRaw> for CodeRow {
    type Error = StoreError;
    fn try_from(r: CodeRaw) -> Result<Self> {
        let kind = match r.kind.as_str() {
            "pair" => CodeKind::Pair,
            "link" => CodeKind::Link,
            other => return Err(corrupt("codes.kind", other)),
        };
        Ok(CodeRow {
            kind,
            code: r.code,
            identity: r.identity,
            user_id: r.user_id,
            display_name: r.display_name,
            conversation: r.conversation,
            created_ms: r.created_ms,
            expires_ms: r.expires_ms,
        })
    }
}

#[derive(sqlx::FromRow)]
pub(crate) struct DecisionRaw {
    at_ms: i64,
    event_id: String,
    actor: String,
    conversation: String,
    decision: String,
    reason: String,
}

impl From<DecisionRaw> for DecisionRow {
    fn from(r: DecisionRaw) -> Self {
        DecisionRow {
            at_ms: r.at_ms,
            event_id: r.event_id,
            actor: r.actor,
            conversation: r.conversation,
            decision: r.decision,
            reason: r.reason,
        }
    }
}

#[derive(sqlx::FromRow)]
pub(crate) struct ApprovalRaw {
    id: String,
    session_id: String,
    session_key: String,
    conversation: String,
    event_id: String,
    tool_call_id: String,
    tool: String,
    args_hash: String,
    summary: String,
    requester: String,
    requester_user: String,
    approvers: String,
    kind: String,
    options: Option<String>,
    answer: Option<String>,
    status: String,
    scope: Option<String>,
    decided_by: Option<String>,
    decided_ms: Option<i64>,
    created_ms: i64,
    expires_ms: i64,
    detail_kind: Option<String>,
    detail: Option<String>,
}

impl ApprovalRaw {
    /// The row as the SQLite writer's connection reads it (columns in `cols!(approval)` order).
    pub(crate) fn from_lite(r: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: r.get(0)?,
            session_id: r.get(1)?,
            session_key: r.get(2)?,
            conversation: r.get(3)?,
            event_id: r.get(4)?,
            tool_call_id: r.get(5)?,
            tool: r.get(6)?,
            args_hash: r.get(7)?,
            summary: r.get(8)?,
            requester: r.get(9)?,
            requester_user: r.get(10)?,
            approvers: r.get(11)?,
            kind: r.get(12)?,
            options: r.get(13)?,
            answer: r.get(14)?,
            status: r.get(15)?,
            scope: r.get(16)?,
            decided_by: r.get(17)?,
            decided_ms: r.get(18)?,
            created_ms: r.get(19)?,
            expires_ms: r.get(20)?,
            detail_kind: r.get(21)?,
            detail: r.get(22)?,
        })
    }
}

impl TryFrom<ApprovalRaw> for ApprovalRow {
    type Error = StoreError;
    fn try_from(r: ApprovalRaw) -> Result<Self> {
        Ok(ApprovalRow {
            approvers: from_json("approvals.approvers", &r.approvers)?,
            kind: ApprovalKind::parse(&r.kind).ok_or_else(|| corrupt("approvals.kind", &r.kind))?,
            options: match &r.options {
                Some(json) => from_json("approvals.options", json)?,
                None => Vec::new(),
            },
            answer: r.answer,
            detail: match (r.detail_kind, r.detail) {
                (Some(kind), Some(text)) => Some(Detail {
                    kind: DetailKind::parse(&kind).ok_or_else(|| corrupt("approvals.detail_kind", &kind))?,
                    text,
                }),
                _ => None,
            },
            status: ApprovalStatus::parse(&r.status).ok_or_else(|| corrupt("approvals.status", &r.status))?,
            id: r.id,
            session_id: r.session_id,
            session_key: r.session_key,
            conversation: r.conversation,
            event_id: r.event_id,
            tool_call_id: r.tool_call_id,
            tool: r.tool,
            args_hash: r.args_hash,
            summary: r.summary,
            requester: r.requester,
            requester_user: r.requester_user,
            scope: r.scope,
            decided_by: r.decided_by,
            decided_ms: r.decided_ms,
            created_ms: r.created_ms,
            expires_ms: r.expires_ms,
        })
    }
}

#[derive(sqlx::FromRow)]
pub(crate) struct AuditRaw {
    at_ms: i64,
    actor: String,
    user_id: String,
    session_id: String,
    tool: String,
    args_hash: String,
    outcome: String,
    reason: String,
}

impl From<AuditRaw> for AuditRow {
    fn from(r: AuditRaw) -> Self {
        AuditRow {
            at_ms: r.at_ms,
            actor: r.actor,
            user_id: r.user_id,
            session_id: r.session_id,
            tool: r.tool,
            args_hash: r.args_hash,
            outcome: r.outcome,
            reason: r.reason,
        }
    }
}

/// Converts every raw row, failing on the first that does not decode.
pub(crate) fn convert_all<R, T>(rows: Vec<R>) -> Result<Vec<T>>
where
    T: TryFrom<R, Error = StoreError>,
{
    rows.into_iter().map(T::try_from).collect()
}
