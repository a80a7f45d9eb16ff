//! Past conversations ([`TranscriptStore`](crate::store::TranscriptStore)), written once for
//! both backends: the full-text search over transcripts (its SQL and query syntax come from the
//! backend: `SQL_TRANSCRIPT_PRIVATE`, `SQL_TRANSCRIPT_GROUP`, `fts_query`), a person's direct
//! conversations, and resuming one of them.
//!
//! Every statement is scoped: a private search reads only the person's direct sessions, a group
//! search only that group key's; this code must never return another person's direct messages,
//! never search tool output, and never let two open sessions share a key.

use super::error::corrupt;
use crate::store::{Result, Role, SessionSummary, StoreError, TranscriptHit};

/// A search hit as both databases return it.
#[derive(sqlx::FromRow)]
pub(crate) struct TranscriptHitRaw {
    session_id: String,
    session_key: String,
    conversation: String,
    seq: i64,
    role: String,
    content: String,
    created_ms: i64,
    session_created_ms: i64,
}

impl TryFrom<TranscriptHitRaw> for TranscriptHit {
    type Error = StoreError;
    fn try_from(r: TranscriptHitRaw) -> Result<Self> {
        Ok(TranscriptHit {
            session_id: r.session_id,
            session_key: r.session_key,
            conversation: r.conversation,
            seq: r.seq,
            role: Role::parse(&r.role).ok_or_else(|| corrupt("messages.role", &r.role))?,
            content: r.content,
            created_ms: r.created_ms,
            session_created_ms: r.session_created_ms,
        })
    }
}

/// A conversation list entry as both databases return it.
#[derive(sqlx::FromRow)]
pub(crate) struct SessionSummaryRaw {
    id: String,
    key: String,
    conversation: String,
    created_ms: i64,
    updated_ms: i64,
    last_ms: i64,
    closed_ms: Option<i64>,
    messages: i64,
    title: Option<String>,
}

impl From<SessionSummaryRaw> for SessionSummary {
    fn from(r: SessionSummaryRaw) -> Self {
        SessionSummary {
            id: r.id,
            key: r.key,
            conversation: r.conversation,
            created_ms: r.created_ms,
            updated_ms: r.updated_ms,
            last_ms: r.last_ms,
            closed_ms: r.closed_ms,
            messages: r.messages,
            title: r.title,
        }
    }
}

/// `$1` user, `$2` limit: the person's direct sessions with messages, latest message first; the
/// title (the start of the first user message) is read for the listed ones only.
pub(crate) const SQL_SESSIONS_RECENT: &str = "SELECT t.id, t.key, t.conversation, t.created_ms, t.updated_ms, \
       t.last_ms, t.closed_ms, t.messages, \
       (SELECT substr(m.content, 1, 200) FROM messages m WHERE m.session_id = t.id AND m.role = 'user' \
         ORDER BY m.seq LIMIT 1) AS title \
     FROM (SELECT s.id, s.key, s.conversation, s.created_ms, s.updated_ms, s.closed_ms, s.last_seq AS messages, \
             COALESCE((SELECT m.created_ms FROM messages m WHERE m.session_id = s.id ORDER BY m.seq DESC LIMIT 1), \
               s.updated_ms) AS last_ms \
           FROM sessions s WHERE s.user_id = $1 AND substr(s.key, 1, 3) = 'dm:' AND s.last_seq > 0 \
           ORDER BY last_ms DESC, s.created_ms DESC, s.id DESC LIMIT $2) t \
     ORDER BY t.last_ms DESC, t.created_ms DESC, t.id DESC";

/// `$1` session, `$2` user, `$3` key: the session may be resumed under the key (a direct
/// session of the user, closed or already the key's, and no one else's session open there).
pub(crate) const SQL_RESUMABLE: &str = "SELECT s.id FROM sessions s WHERE s.id = $1 AND s.user_id = $2 \
     AND substr(s.key, 1, 3) = 'dm:' AND (s.closed_ms IS NOT NULL OR s.key = $3) \
     AND NOT EXISTS (SELECT 1 FROM sessions o WHERE o.key = $3 AND o.closed_ms IS NULL AND o.user_id <> $2)";

/// Implements `TranscriptStore` for `$store`.
macro_rules! impl_transcripts {
    ($store:ty, $db:ty) => {
        #[async_trait::async_trait]
        impl $crate::store::TranscriptStore for $store {
            async fn transcript_search(
                &self,
                user_id: &str,
                within: &$crate::store::TranscriptScope,
                query: &str,
                except_session: Option<&str>,
                limit: usize,
            ) -> $crate::store::Result<Vec<$crate::store::TranscriptHit>> {
                use $crate::store::TranscriptScope;
                let terms = $crate::store::sql::memory::search_terms(query);
                if terms.is_empty() || limit == 0 {
                    return Ok(Vec::new());
                }
                // `$1` is whose sessions: the person's, or the one group key's.
                let (sql, whose) = match within {
                    TranscriptScope::Private => (Self::SQL_TRANSCRIPT_PRIVATE, user_id),
                    TranscriptScope::Group(key) if key.starts_with($crate::store::GROUP_KEY_PREFIX) => {
                        (Self::SQL_TRANSCRIPT_GROUP, key.as_str())
                    }
                    TranscriptScope::Group(_) => return Ok(Vec::new()),
                };
                // Not a cached prepared statement, as for memory search: Postgres plans it with
                // the values (one person's few sessions, or the index for a rare word).
                let raw: Vec<$crate::store::sql::transcripts::TranscriptHitRaw> = sqlx::query_as(sql)
                    .persistent(false)
                    .bind(whose)
                    .bind(Self::fts_query(&terms))
                    .bind($crate::store::sql::rows::sql_limit(limit))
                    .bind(except_session.unwrap_or(""))
                    .fetch_all(self.reader())
                    .await
                    .map_err($crate::store::sql::error::db_err)?;
                raw.into_iter().map(TryInto::try_into).collect()
            }

            async fn sessions_recent(
                &self,
                user_id: &str,
                limit: usize,
            ) -> $crate::store::Result<Vec<$crate::store::SessionSummary>> {
                let raw: Vec<$crate::store::sql::transcripts::SessionSummaryRaw> =
                    sqlx::query_as($crate::store::sql::transcripts::SQL_SESSIONS_RECENT)
                        .bind(user_id)
                        .bind($crate::store::sql::rows::sql_limit(limit))
                        .fetch_all(self.reader())
                        .await
                        .map_err($crate::store::sql::error::db_err)?;
                Ok(raw.into_iter().map(Into::into).collect())
            }

            /// Checks, closes the key's open session, then reopens the resumed one under the
            /// key (the unique index on open keys holds at every statement); all or nothing.
            async fn session_resume(
                &self,
                user_id: &str,
                session_id: &str,
                key: &str,
            ) -> $crate::store::Result<Option<$crate::store::SessionRow>> {
                use $crate::store::sql::error::db_err;
                if !key.starts_with($crate::store::DIRECT_KEY_PREFIX) {
                    return Ok(None);
                }
                let now = $crate::store::now_ms();
                let mut tx = self.begin_write().await?;
                let resumable: Option<String> = sqlx::query_scalar($crate::store::sql::transcripts::SQL_RESUMABLE)
                    .bind(session_id)
                    .bind(user_id)
                    .bind(key)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(db_err)?;
                if resumable.is_none() {
                    return Ok(None);
                }
                sqlx::query(
                    "UPDATE sessions SET closed_ms = $2, updated_ms = $2 WHERE key = $1 AND closed_ms IS NULL \
                     AND id <> $3",
                )
                .bind(key)
                .bind(now)
                .bind(session_id)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
                let raw: Option<$crate::store::sql::rows::SessionRaw> = sqlx::query_as(concat!(
                    "UPDATE sessions SET key = $3, closed_ms = NULL, updated_ms = $4 WHERE id = $1 AND user_id = $2 \
                     AND substr(key, 1, 3) = 'dm:' AND (closed_ms IS NOT NULL OR key = $3) RETURNING ",
                    $crate::store::sql::rows::cols!(session)
                ))
                .bind(session_id)
                .bind(user_id)
                .bind(key)
                .bind(now)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db_err)?;
                // Changed meanwhile (another resume): the rollback undoes the close too.
                let Some(raw) = raw else { return Ok(None) };
                tx.commit().await.map_err(db_err)?;
                Ok(Some(raw.into()))
            }
        }
    };
}
pub(crate) use impl_transcripts;
