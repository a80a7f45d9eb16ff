//! The statements of a turn's hot path (the web page's lines, the inbox row, the claim's
//! neighbours, the turn's start and commit, the outbox, the two reads of every message), shared by the sqlx path (the
//! per-concern macros of the sibling files) and SQLite's writer (`lite_ops.rs`), so
//! that each is written once.
//!
//! A write that returns a row has two forms: with `RETURNING` (the sqlx path) and without
//! (`_WRITE`, for SQLite's writer, which reads the row after it in the same transaction, by its
//! key). In SQLite a `RETURNING` clause fills a temporary table on every execution: measured,
//! about 12,800 instructions more than the write alone plus the read (`rusqlite`, an `UPDATE`
//! of one row of `inbox`).
//!
//! Fixed SQL only: this file must never build a statement from input, and holds no code.

/// A statement's text as a macro, so that its two forms share it.
macro_rules! write_sql {
    (web_insert) => {
        "INSERT INTO web_messages (conversation, key, role, author, text, buttons, created_ms, updated_ms) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $7) ON CONFLICT (key) DO NOTHING"
    };
    (inbox_settle) => {
        "UPDATE inbox SET status = $2, updated_ms = $3 WHERE id = $1 AND status IN ('pending', 'processing')"
    };
    (session_reserve) => {
        "UPDATE sessions SET version = version + 1, last_seq = last_seq + $3, updated_ms = $2 WHERE id = $1"
    };
    (outbox_upsert) => {
        "INSERT INTO outbox (key, channel, conversation, text, buttons, reply_to, status, platform_ids, \
         attempts, next_attempt_ms, created_ms, updated_ms, private_to, file, title) \
         VALUES ($1, $2, $3, $4, $5, $6, 'pending', '[]', 0, 0, $7, $7, $8, $9, $10) \
         ON CONFLICT (key) DO UPDATE SET status = 'pending', text = excluded.text, \
         title = COALESCE(excluded.title, outbox.title), \
         buttons = excluded.buttons, reply_to = COALESCE(excluded.reply_to, outbox.reply_to), \
         updated_ms = excluded.updated_ms WHERE outbox.status = 'draft'"
    };
    (outbox_sent) => {
        "UPDATE outbox SET status = 'sent', attempts = attempts + 1, \
         updated_ms = $2, platform_ids = $3 WHERE id = $1 AND status <> 'sent' AND text = $4"
    };
    (outbox_failed) => {
        "UPDATE outbox SET status = 'failed', attempts = attempts + 1, \
         last_error = $3, updated_ms = $2 WHERE id = $1 AND status <> 'sent'"
    };
}

/// `$1` conversation, `$2` key, `$3` role, `$4` author, `$5` text, `$6` buttons, `$7` now; no
/// row when the key is already stored.
pub(crate) const SQL_WEB_INSERT: &str =
    concat!(write_sql!(web_insert), " RETURNING ", crate::store::sql::rows::cols!(web));
/// [`SQL_WEB_INSERT`] without its `RETURNING`.
pub(crate) const SQL_WEB_INSERT_WRITE: &str = write_sql!(web_insert);

/// `$1` key.
pub(crate) const SQL_WEB_BY_KEY: &str =
    concat!("SELECT ", crate::store::sql::rows::cols!(web), " FROM web_messages WHERE key = $1");

/// `$1` id, `$2` channel, `$3` conversation, `$4` event, `$5` now; nothing when the id is stored.
pub(crate) const SQL_INBOX_INSERT: &str =
    "INSERT INTO inbox (id, channel, conversation, event, status, attempts, next_attempt_ms, \
     created_ms, updated_ms) VALUES ($1, $2, $3, $4, 'pending', 0, 0, $5, $5) \
     ON CONFLICT (id) DO NOTHING";

/// `$1` id, `$2` worker, `$3` now.
pub(crate) const SQL_INBOX_START: &str =
    "UPDATE inbox SET started_ms = $3 WHERE id = $1 AND status = 'processing' AND claimed_by = $2";

/// `$1` fence key, `$2` token: locks the fence row, no row when the token is no longer newest.
pub(crate) const SQL_FENCE_HOLD: &str = "UPDATE session_fences SET token = token WHERE key = $1 AND token = $2";

/// `$1` inbox id, `$2` status, `$3` now: the conversation, when the row was still open.
pub(crate) const SQL_INBOX_SETTLE: &str = concat!(write_sql!(inbox_settle), " RETURNING conversation");
/// [`SQL_INBOX_SETTLE`] without its `RETURNING`.
pub(crate) const SQL_INBOX_SETTLE_WRITE: &str = write_sql!(inbox_settle);

/// `$1` inbox id.
pub(crate) const SQL_INBOX_CONVERSATION: &str = "SELECT conversation FROM inbox WHERE id = $1";

/// `$1` inbox id.
pub(crate) const SQL_INBOX_STATUS: &str = "SELECT status FROM inbox WHERE id = $1";

/// `$1`..`$11`: one usage row.
pub(crate) const SQL_USAGE_INSERT: &str =
    "INSERT INTO usage (user_id, session_id, event_id, model, input_tokens, output_tokens, \
     cost_usd, iterations, created_ms, kind, context_tokens) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)";

/// `$1` session, `$2` now, `$3` how many messages: reserves their seqs (the last one returned)
/// and bumps the version.
pub(crate) const SQL_SESSION_RESERVE: &str = concat!(write_sql!(session_reserve), " RETURNING last_seq");
/// [`SQL_SESSION_RESERVE`] without its `RETURNING`.
pub(crate) const SQL_SESSION_RESERVE_WRITE: &str = write_sql!(session_reserve);

/// `$1` session.
pub(crate) const SQL_SESSION_LAST_SEQ: &str = "SELECT last_seq FROM sessions WHERE id = $1";

/// A multi-row insert into `messages` up to its `VALUES`: each row's eleven values in this
/// order (the sqlx path binds them with a query builder, SQLite's writer with `?`s).
pub(crate) const SQL_MESSAGES_INSERT_HEAD: &str =
    "INSERT INTO messages (session_id, seq, role, content, name, tool_calls, tool_call_id, is_error, event_id, \
     created_ms, images) ";

/// `$1` key, `$2` channel, `$3` conversation, `$4` text, `$5` buttons, `$6` reply_to, `$7` now,
/// `$8` private_to, `$9` file, `$10` title: a new row is pending; a draft becomes pending with
/// the final text; any other existing row is left alone (no row returned).
pub(crate) const SQL_OUTBOX_UPSERT: &str =
    concat!(write_sql!(outbox_upsert), " RETURNING ", crate::store::sql::rows::cols!(outbox));
/// [`SQL_OUTBOX_UPSERT`] without its `RETURNING`.
pub(crate) const SQL_OUTBOX_UPSERT_WRITE: &str = write_sql!(outbox_upsert);

/// `$1` key.
pub(crate) const SQL_OUTBOX_BY_KEY: &str =
    concat!("SELECT ", crate::store::sql::rows::cols!(outbox), " FROM outbox WHERE key = $1");

/// `$1` id, `$2` now, `$3` platform ids, `$4` the text delivered.
pub(crate) const SQL_OUTBOX_SENT: &str = concat!(write_sql!(outbox_sent), " RETURNING key, conversation");
/// [`SQL_OUTBOX_SENT`] without its `RETURNING`.
pub(crate) const SQL_OUTBOX_SENT_WRITE: &str = write_sql!(outbox_sent);

/// `$1` id, `$2` now, `$3` error.
pub(crate) const SQL_OUTBOX_FAILED: &str = concat!(write_sql!(outbox_failed), " RETURNING key, conversation");
/// [`SQL_OUTBOX_FAILED`] without its `RETURNING`.
pub(crate) const SQL_OUTBOX_FAILED_WRITE: &str = write_sql!(outbox_failed);

/// `$1` outbox id.
pub(crate) const SQL_OUTBOX_KEY_OF: &str = "SELECT key, conversation FROM outbox WHERE id = $1";

/// `$1` id, `$2` now, `$3` error, `$4` next attempt, `$5` 1 to count the attempt.
pub(crate) const SQL_OUTBOX_RETRY: &str = "UPDATE outbox SET status = 'pending', attempts = attempts + $5, \
     last_error = $3, next_attempt_ms = $4, updated_ms = $2 WHERE id = $1 AND status IN ('pending', 'failed')";

/// `$1`..`$23`: one approval, as `approval_insert_on` binds it; an existing id is left alone.
pub(crate) const SQL_APPROVAL_INSERT: &str =
    "INSERT INTO approvals (id, session_id, session_key, conversation, event_id, tool_call_id, tool, \
     args_hash, summary, requester, requester_user, approvers, status, scope, decided_by, decided_ms, \
     created_ms, expires_ms, kind, options, answer, detail_kind, detail) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, \
     $21, $22, $23) ON CONFLICT (id) DO NOTHING";

/// `$1` conversation, `$2` requester, `$3` now: the oldest pending, unexpired question asked of
/// the requester there.
pub(crate) const SQL_QUESTION_WAITING: &str = concat!(
    "SELECT ",
    crate::store::sql::rows::cols!(approval),
    " FROM approvals WHERE status = 'pending' AND expires_ms > $3 AND conversation = $1 \
     AND kind = 'question' AND requester = $2 ORDER BY created_ms, id LIMIT 1"
);
