//! The statements of a turn's hot path (the web page's lines, the inbox row, the claim's
//! neighbours, the turn's start and commit, the outbox, the two reads of every message), shared by the sqlx path (the
//! per-concern macros of the sibling files) and SQLite's writer (`lite_ops.rs`), so
//! that each is written once.
//!
//! Fixed SQL only: this file must never build a statement from input, and holds no code.

/// `$1` conversation, `$2` key, `$3` role, `$4` author, `$5` text, `$6` buttons, `$7` now; no
/// row when the key is already stored.
pub(crate) const SQL_WEB_INSERT: &str = concat!(
    "INSERT INTO web_messages (conversation, key, role, author, text, buttons, created_ms, updated_ms) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $7) ON CONFLICT (key) DO NOTHING RETURNING ",
    crate::store::sql::rows::cols!(web)
);

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
pub(crate) const SQL_INBOX_SETTLE: &str = "UPDATE inbox SET status = $2, updated_ms = $3 WHERE id = $1 \
     AND status IN ('pending', 'processing') RETURNING conversation";

/// `$1` inbox id.
pub(crate) const SQL_INBOX_STATUS: &str = "SELECT status FROM inbox WHERE id = $1";

/// `$1`..`$11`: one usage row.
pub(crate) const SQL_USAGE_INSERT: &str =
    "INSERT INTO usage (user_id, session_id, event_id, model, input_tokens, output_tokens, \
     cost_usd, iterations, created_ms, kind, context_tokens) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)";

/// `$1` session, `$2` now, `$3` how many messages: reserves their seqs (the last one returned)
/// and bumps the version.
pub(crate) const SQL_SESSION_RESERVE: &str = "UPDATE sessions SET version = version + 1, last_seq = last_seq + $3, \
     updated_ms = $2 WHERE id = $1 RETURNING last_seq";

/// `$1`..`$11`: one message, the columns of `append_messages_on`'s batch in order.
pub(crate) const SQL_MESSAGE_INSERT: &str =
    "INSERT INTO messages (session_id, seq, role, content, name, tool_calls, tool_call_id, is_error, event_id, \
     created_ms, images) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)";

/// `$1` key, `$2` channel, `$3` conversation, `$4` text, `$5` buttons, `$6` reply_to, `$7` now,
/// `$8` private_to, `$9` file, `$10` title: a new row is pending; a draft becomes pending with
/// the final text; any other existing row is left alone (no row returned).
pub(crate) const SQL_OUTBOX_UPSERT: &str = concat!(
    "INSERT INTO outbox (key, channel, conversation, text, buttons, reply_to, status, platform_ids, \
     attempts, next_attempt_ms, created_ms, updated_ms, private_to, file, title) \
     VALUES ($1, $2, $3, $4, $5, $6, 'pending', '[]', 0, 0, $7, $7, $8, $9, $10) \
     ON CONFLICT (key) DO UPDATE SET status = 'pending', text = excluded.text, \
     title = COALESCE(excluded.title, outbox.title), \
     buttons = excluded.buttons, reply_to = COALESCE(excluded.reply_to, outbox.reply_to), \
     updated_ms = excluded.updated_ms WHERE outbox.status = 'draft' RETURNING ",
    crate::store::sql::rows::cols!(outbox)
);

/// `$1` key.
pub(crate) const SQL_OUTBOX_BY_KEY: &str =
    concat!("SELECT ", crate::store::sql::rows::cols!(outbox), " FROM outbox WHERE key = $1");

/// `$1` id, `$2` now, `$3` platform ids, `$4` the text delivered.
pub(crate) const SQL_OUTBOX_SENT: &str = "UPDATE outbox SET status = 'sent', attempts = attempts + 1, \
     updated_ms = $2, platform_ids = $3 WHERE id = $1 AND status <> 'sent' AND text = $4 RETURNING key, conversation";

/// `$1` id, `$2` now, `$3` error.
pub(crate) const SQL_OUTBOX_FAILED: &str = "UPDATE outbox SET status = 'failed', attempts = attempts + 1, \
     last_error = $3, updated_ms = $2 WHERE id = $1 AND status <> 'sent' RETURNING key, conversation";

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
