//! The web chat's conversation list ([`WebConversationStore`](crate::store::WebConversationStore)),
//! written once for both backends: titles (the user's rename, else the start of the first
//! message), deleting as hiding, the "Butler wrote here on its own" mark, and the buttons a
//! click may still press.
//!
//! Deleting never removes rows: the transcript, outbox, audit and approvals refer to the
//! conversation, and the web log's unique keys are what keep a re-delivered reply from showing
//! twice. It must never list another owner's conversations, and never show hidden messages.

use crate::store::sql::error::corrupt;
use crate::store::{Result, WebConversation};
use butler_channel::Button;

/// A list entry as both databases return it.
#[derive(sqlx::FromRow)]
pub(crate) struct WebConversationRaw {
    id: String,
    owner: String,
    created_ms: i64,
    title: Option<String>,
    butler_ms: Option<i64>,
    hidden_upto: Option<i64>,
    first_text: Option<String>,
    last_ms: i64,
}

impl From<WebConversationRaw> for WebConversation {
    fn from(r: WebConversationRaw) -> Self {
        WebConversation {
            id: r.id,
            owner: r.owner,
            title: r.title,
            first_text: r.first_text,
            created_ms: r.created_ms,
            last_ms: r.last_ms,
            butler_ms: r.butler_ms,
            hidden_upto: r.hidden_upto,
        }
    }
}

/// The buttons of every row, flattened in row order.
pub(crate) fn decode_buttons(rows: Vec<String>) -> Result<Vec<Button>> {
    let mut all = Vec::new();
    for text in rows {
        let buttons: Vec<Button> = serde_json::from_str(&text).map_err(|e| corrupt("web_messages.buttons", e))?;
        all.extend(buttons);
    }
    Ok(all)
}

/// One entry per conversation of `conversations c` (joined with its `web_conversations m`):
/// only messages after `hidden_upto` count for the title and the last activity; `last_id` is
/// the newest message, hidden or not.
macro_rules! entry_sql {
    () => {
        "SELECT c.id, c.owner, c.created_ms, m.title, m.butler_ms, m.hidden_upto, \
           COALESCE( \
             (SELECT SUBSTR(w.text, 1, 200) FROM web_messages w \
               WHERE w.conversation = c.id AND w.id > COALESCE(m.hidden_upto, 0) AND w.role = 'user' \
               ORDER BY w.id LIMIT 1), \
             (SELECT SUBSTR(w.text, 1, 200) FROM web_messages w \
               WHERE w.conversation = c.id AND w.id > COALESCE(m.hidden_upto, 0) ORDER BY w.id LIMIT 1) \
           ) AS first_text, \
           COALESCE((SELECT MAX(w.updated_ms) FROM web_messages w \
             WHERE w.conversation = c.id AND w.id > COALESCE(m.hidden_upto, 0)), c.created_ms) AS last_ms, \
           (SELECT MAX(w.id) FROM web_messages w WHERE w.conversation = c.id) AS last_id \
         FROM conversations c LEFT JOIN web_conversations m ON m.conversation = c.id"
    };
}
pub(crate) use entry_sql;

/// Implements `WebConversationStore` for `$store` over database `$db`.
macro_rules! impl_web_conversations {
    ($store:ty, $db:ty) => {
        #[async_trait::async_trait]
        impl $crate::store::WebConversationStore for $store {
            async fn web_conversations(
                &self,
                owner: &str,
                limit: usize,
            ) -> $crate::store::Result<Vec<$crate::store::WebConversation>> {
                let raw: Vec<$crate::store::sql::web_conversations::WebConversationRaw> = sqlx::query_as(concat!(
                    "SELECT * FROM (",
                    $crate::store::sql::web_conversations::entry_sql!(),
                    " WHERE c.id LIKE 'web:%' AND (c.owner = $1 OR c.owner IN (SELECT i2.channel || ':' || \
                     i2.platform_user_id FROM identities i1 JOIN identities i2 ON i2.user_id = i1.user_id \
                     WHERE i1.channel = $3 AND i1.platform_user_id = $4))) t \
                     WHERE t.hidden_upto IS NULL OR t.last_id > t.hidden_upto \
                     ORDER BY t.last_ms DESC, COALESCE(t.last_id, 0) DESC, t.id DESC LIMIT $2"
                ))
                .bind(owner)
                .bind($crate::store::sql::rows::sql_limit(limit))
                .bind(owner.split_once(':').map_or("", |(c, _)| c))
                .bind(owner.split_once(':').map_or("", |(_, u)| u))
                .fetch_all(self.reader())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                Ok(raw.into_iter().map(Into::into).collect())
            }

            async fn web_conversation(
                &self,
                id: &str,
            ) -> $crate::store::Result<Option<$crate::store::WebConversation>> {
                let raw: Option<$crate::store::sql::web_conversations::WebConversationRaw> =
                    sqlx::query_as(concat!($crate::store::sql::web_conversations::entry_sql!(), " WHERE c.id = $1"))
                        .bind(id)
                        .fetch_optional(self.reader())
                        .await
                        .map_err($crate::store::sql::error::db_err)?;
                Ok(raw.map(Into::into))
            }

            /// Upserts the title of an existing conversation (nothing happens for an unknown id).
            async fn web_rename(&self, id: &str, title: Option<&str>) -> $crate::store::Result<bool> {
                let done = sqlx::query(
                    "INSERT INTO web_conversations (conversation, title) \
                     SELECT c.id, $2 FROM conversations c WHERE c.id = $1 \
                     ON CONFLICT (conversation) DO UPDATE SET title = excluded.title",
                )
                .bind(id)
                .bind(title)
                .execute(self.writer())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                Ok(done.rows_affected() > 0)
            }

            /// Hides up to the newest message now (0 when there is none), and forgets the title
            /// and the mark: a conversation that comes back starts afresh.
            async fn web_hide(&self, id: &str) -> $crate::store::Result<bool> {
                let done = sqlx::query(
                    "INSERT INTO web_conversations (conversation, hidden_upto) \
                     SELECT c.id, COALESCE((SELECT MAX(w.id) FROM web_messages w WHERE w.conversation = c.id), 0) \
                     FROM conversations c WHERE c.id = $1 \
                     ON CONFLICT (conversation) DO UPDATE \
                     SET hidden_upto = excluded.hidden_upto, title = NULL, butler_ms = NULL",
                )
                .bind(id)
                .execute(self.writer())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                Ok(done.rows_affected() > 0)
            }

            async fn web_mark_unprompted(&self, id: &str, at_ms: i64) -> $crate::store::Result<()> {
                sqlx::query(
                    "INSERT INTO web_conversations (conversation, butler_ms) VALUES ($1, $2) \
                     ON CONFLICT (conversation) DO UPDATE SET butler_ms = CASE \
                       WHEN web_conversations.butler_ms IS NULL OR web_conversations.butler_ms < excluded.butler_ms \
                       THEN excluded.butler_ms ELSE web_conversations.butler_ms END",
                )
                .bind(id)
                .bind(at_ms)
                .execute(self.writer())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                Ok(())
            }

            async fn web_live_buttons(&self, id: &str) -> $crate::store::Result<Vec<butler_channel::Button>> {
                let rows: Vec<String> = sqlx::query_scalar(
                    "SELECT buttons FROM web_messages WHERE conversation = $1 AND buttons <> '[]' ORDER BY id",
                )
                .bind(id)
                .fetch_all(self.reader())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                $crate::store::sql::web_conversations::decode_buttons(rows)
            }
        }
    };
}
pub(crate) use impl_web_conversations;
