//! The store operations of a turn's hot path as SQLite's writer (`lite.rs`) runs them:
//! the web page's line, the inbox row, the claim, the turn's start, the turn's commit and the
//! outbox mark. The SQL is the text the sqlx path runs (`hot.rs`), except that a write that
//! returns a row runs without its `RETURNING` and reads the row after it (cheaper in SQLite,
//! and the same answer inside the writer's transaction). Each function runs inside the
//! writer's open transaction and returns what the sqlx path computes, so the store methods do
//! the rest (announcements, counters) the same way for both.
//!
//! It must never commit, begin or roll back a transaction itself (the writer does), and never
//! build SQL from its arguments (a statement's shape may follow how many rows it writes).

use super::hot;
use super::lite::{execute, execute_positional, query, query_one};
use super::rows::{InboxRaw, OutboxRaw, WebRaw};
use crate::store::{
    ApprovalKind, ApprovalRow, InboxRow, NewOutbox, NewWebMessage, OutboxMark, OutboxRow, Result, StoreError,
    TurnCommit, WebMessage,
};
use rusqlite::Connection;

/// `WebStore::web_insert`: the row for `new.key`, inserted now or already there.
pub(crate) fn web_insert(c: &Connection, new: &NewWebMessage, buttons: &str, now: i64) -> Result<WebMessage> {
    let values: [&dyn rusqlite::ToSql; 7] =
        [&new.conversation, &new.key, &new.role, &new.author, &new.text, &buttons, &now];
    execute(c, hot::SQL_WEB_INSERT_WRITE, &values)?;
    let raw = query_one(c, hot::SQL_WEB_BY_KEY, &[&new.key], WebRaw::from_lite)?
        .ok_or_else(|| StoreError::Corrupt(format!("web message `{}` vanished", new.key)))?;
    raw.try_into()
}

/// `InboxStore::inbox_insert`: whether the row is new. `row` is id, channel, conversation, event.
pub(crate) fn inbox_insert(c: &Connection, row: &[String; 4], now: i64) -> Result<bool> {
    let [id, channel, conversation, event] = row;
    Ok(execute(c, hot::SQL_INBOX_INSERT, &[id, channel, conversation, event, &now])? == 1)
}

/// `InboxStore::inbox_claim` with the backend's claim statement `sql`.
pub(crate) fn inbox_claim(
    c: &Connection,
    sql: &str,
    channels: &str,
    worker: &str,
    now: i64,
    limit: i64,
) -> Result<Vec<InboxRow>> {
    let raw = query(c, sql, &[&channels, &worker, &now, &limit], InboxRaw::from_lite)?;
    super::rows::convert_all(raw)
}

/// `RecoveryStore::inbox_start`: whether `worker` still held the event.
pub(crate) fn inbox_start(c: &Connection, id: &str, worker: &str, now: i64) -> Result<bool> {
    Ok(execute(c, hot::SQL_INBOX_START, &[&id, &worker, &now])? == 1)
}

/// What a turn's commit did: the settled conversation (when this commit moved the inbox row),
/// whether it was a re-run (the event was already finished), and the reply's outbox row.
pub(crate) type Committed = (Option<String>, bool, Option<OutboxRow>);

/// `TurnStore::finish_event`, the statements in the order the sqlx path runs them (see there
/// for what each step means).
pub(crate) fn finish_event(c: &Connection, commit: &TurnCommit, now: i64, embed: bool) -> Result<Committed> {
    if let Some(fence) = &commit.fence {
        if execute(c, hot::SQL_FENCE_HOLD, &[&fence.key, &fence.token])? == 0 {
            return Err(StoreError::Fenced { key: fence.key.clone() });
        }
    }
    let status = commit.inbox_status.as_str();
    let settled = execute(c, hot::SQL_INBOX_SETTLE_WRITE, &[&commit.inbox_id, &status, &now])?;
    let updated: Option<String> =
        read_if_changed(c, settled, hot::SQL_INBOX_CONVERSATION, &commit.inbox_id, |r| r.get(0))?;
    let rerun = updated.is_none()
        && query_one(c, hot::SQL_INBOX_STATUS, &[&commit.inbox_id], |r| r.get::<_, String>(0))?.is_some();
    let reply = commit.reply.as_ref().map(|r| outbox_upsert(c, r, now)).transpose()?;
    if !rerun {
        for notice in &commit.notices {
            outbox_upsert(c, notice, now)?;
        }
        for approval in &commit.approvals {
            approval_insert(c, approval)?;
        }
        for u in commit.usage.iter().flat_map(|u| &u.rows) {
            let values: [&dyn rusqlite::ToSql; 11] = [
                &u.user_id,
                &u.session_id,
                &u.event_id,
                &u.model,
                &u.input_tokens,
                &u.output_tokens,
                &u.cost_usd,
                &u.iterations,
                &now,
                &u.kind,
                &u.context_tokens,
            ];
            execute(c, hot::SQL_USAGE_INSERT, &values)?;
        }
        // Last, so that the full-text index takes the turn's messages as one segment at the
        // commit (see `MESSAGE_ROWS`).
        if let Some(session_id) = commit.session_id.as_deref().filter(|_| !commit.messages.is_empty()) {
            append_messages(c, session_id, commit, now, embed)?;
        }
    }
    Ok((updated, rerun, reply))
}

/// Rows per `INSERT` into `messages` on the writer. SQLite's full-text index (`messages_fts`,
/// filled by a trigger) writes what it holds as a new segment of the index at the start of
/// every later write statement of the transaction (FTS5's savepoint), so one statement per
/// message wrote a segment per message, each later merged; a turn's messages in one statement,
/// after the commit's other writes, make one segment per commit. The sqlx path inserts them in
/// one statement as well (`append_messages_on`).
const MESSAGE_ROWS: usize = 16;

/// The insert of `rows` messages (1 to [`MESSAGE_ROWS`]), eleven `?`s a row.
fn messages_insert_sql(rows: usize) -> &'static str {
    static SQL: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    let all = SQL.get_or_init(|| {
        let row = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
        (1..=MESSAGE_ROWS)
            .map(|n| format!("{}VALUES {}", hot::SQL_MESSAGES_INSERT_HEAD, vec![row; n].join(", ")))
            .collect()
    });
    &all[rows - 1]
}

fn append_messages(c: &Connection, session_id: &str, commit: &TurnCommit, now: i64, embed: bool) -> Result<()> {
    let msgs = &commit.messages;
    let count = msgs.len() as i64;
    let reserved = execute(c, hot::SQL_SESSION_RESERVE_WRITE, &[&session_id, &now, &count])?;
    let end: i64 = read_if_changed(c, reserved, hot::SQL_SESSION_LAST_SEQ, &session_id, |r| r.get(0))?
        .ok_or_else(|| StoreError::Conflict(format!("no session `{session_id}`")))?;
    let first = end - count + 1;
    // What each row binds beyond the message's own fields, alive while the rows are bound.
    let mut derived = Vec::with_capacity(msgs.len());
    for (n, m) in msgs.iter().enumerate() {
        let role = m.role().as_str();
        derived.push((first + n as i64, role, super::rows::tool_calls_json(m)?, super::rows::images_json(m)?));
    }
    for (chunk, extra) in msgs.chunks(MESSAGE_ROWS).zip(derived.chunks(MESSAGE_ROWS)) {
        let mut values: Vec<&dyn rusqlite::ToSql> = Vec::with_capacity(chunk.len() * 11);
        for (m, (seq, role, calls, images)) in chunk.iter().zip(extra) {
            values.extend_from_slice(&[
                &session_id as &dyn rusqlite::ToSql,
                seq,
                role,
                &m.content,
                &m.name,
                calls,
                &m.tool_call_id,
                &m.is_error,
                &m.event_id,
                &now,
                images,
            ]);
        }
        execute_positional(c, messages_insert_sql(chunk.len()), &values)?;
    }
    if embed {
        for ((seq, role, _, _), m) in derived.iter().zip(msgs) {
            if super::queue::searchable(role, &m.content) {
                let key = crate::store::EmbedRef::Message { session_id: session_id.to_string(), seq: *seq }.key();
                execute(c, super::queue::SQL_QUEUE_MESSAGE, &[&key, &session_id])?;
            }
        }
    }
    Ok(())
}

fn outbox_upsert(c: &Connection, new: &NewOutbox, now: i64) -> Result<OutboxRow> {
    let buttons = super::rows::to_json("buttons", &new.buttons)?;
    let private_to = new.private_to.as_ref().map(|p| super::rows::to_json("private_to", p)).transpose()?;
    let file = new.file.as_ref().map(|f| super::rows::to_json("file", f)).transpose()?;
    let values: [&dyn rusqlite::ToSql; 10] = [
        &new.key,
        &super::rows::channel_of(&new.conversation),
        &new.conversation,
        &new.text,
        &buttons,
        &new.reply_to,
        &now,
        &private_to,
        &file,
        &new.title,
    ];
    execute(c, hot::SQL_OUTBOX_UPSERT_WRITE, &values)?;
    let raw = query_one(c, hot::SQL_OUTBOX_BY_KEY, &[&new.key], OutboxRaw::from_lite)?
        .ok_or_else(|| StoreError::Corrupt(format!("outbox row `{}` vanished", new.key)))?;
    raw.try_into()
}

fn approval_insert(c: &Connection, row: &ApprovalRow) -> Result<()> {
    let approvers = super::rows::to_json("approvers", &row.approvers)?;
    let options = match row.kind {
        ApprovalKind::Tool => None,
        ApprovalKind::Question => Some(super::rows::to_json("options", &row.options)?),
    };
    let detail_kind = row.detail.as_ref().map(|d| d.kind.as_str());
    let detail = row.detail.as_ref().map(|d| d.text.as_str());
    let values: [&dyn rusqlite::ToSql; 23] = [
        &row.id,
        &row.session_id,
        &row.session_key,
        &row.conversation,
        &row.event_id,
        &row.tool_call_id,
        &row.tool,
        &row.args_hash,
        &row.summary,
        &row.requester,
        &row.requester_user,
        &approvers,
        &row.status.as_str(),
        &row.scope,
        &row.decided_by,
        &row.decided_ms,
        &row.created_ms,
        &row.expires_ms,
        &row.kind.as_str(),
        &options,
        &row.answer,
        &detail_kind,
        &detail,
    ];
    execute(c, hot::SQL_APPROVAL_INSERT, &values)?;
    Ok(())
}

/// `OutboxStore::outbox_mark`: the row's key and conversation when it reached its end (sent or
/// failed), for the settled announcement.
pub(crate) fn outbox_mark(c: &Connection, id: i64, mark: &OutboxMark, now: i64) -> Result<Option<(String, String)>> {
    let ended = match mark {
        OutboxMark::Sent { platform_ids, text } => {
            let ids = serde_json::to_string(platform_ids).unwrap_or_else(|_| "[]".into());
            execute(c, hot::SQL_OUTBOX_SENT_WRITE, &[&id, &now, &ids, text])?
        }
        OutboxMark::Failed { error } => execute(c, hot::SQL_OUTBOX_FAILED_WRITE, &[&id, &now, error])?,
        OutboxMark::Retry { next_attempt_ms, error, count_attempt } => {
            let count = i32::from(*count_attempt);
            execute(c, hot::SQL_OUTBOX_RETRY, &[&id, &now, error, next_attempt_ms, &count])?;
            return Ok(None);
        }
    };
    read_if_changed(c, ended, hot::SQL_OUTBOX_KEY_OF, &id, |r| Ok((r.get(0)?, r.get(1)?)))
}

/// What a write would have returned with its `RETURNING` (see the module's doc): the row `read`
/// selects by `key` when the write changed one (`changed`, its count of rows), else `None`.
fn read_if_changed<T>(
    c: &Connection,
    changed: usize,
    read: &str,
    key: &dyn rusqlite::ToSql,
    row: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> Result<Option<T>> {
    match changed {
        0 => Ok(None),
        _ => query_one(c, read, &[key], row),
    }
}
