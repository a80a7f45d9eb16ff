//! Sessions and their append-only transcripts
//! ([`SessionStore`](crate::store::SessionStore)), written once for both backends, plus the
//! transcript append that [`finish_event`](crate::store::TurnStore::finish_event) reuses inside
//! its own transaction.
//!
//! It must never delete or rewrite a stored message, and never let two open sessions share a
//! key (the unique partial index `sessions_open_key` enforces it; this code resolves the race).

/// Rows per multi-row `INSERT` into `messages` (10 parameters each, far below both limits).
pub(crate) const MESSAGE_BATCH: usize = 500;

/// Implements `SessionStore` for `$store` over database `$db`, and the inherent
/// `append_messages_on` helper.
macro_rules! impl_sessions {
    ($store:ty, $db:ty) => {
        impl $store {
            /// Appends `msgs` on `conn` (inside the caller's transaction). One UPDATE locks the
            /// session row, bumps `version` and reserves the seqs (`last_seq`), so concurrent
            /// appends to one session serialize instead of colliding. Returns the last seq (the
            /// current one when `msgs` is empty).
            async fn append_messages_on(
                conn: &mut <$db as sqlx::Database>::Connection,
                session_id: &str,
                msgs: &[$crate::store::NewMessage],
                now: i64,
                embed: bool,
            ) -> $crate::store::Result<i64> {
                use $crate::store::sql::error::db_err;
                if msgs.is_empty() {
                    let last: Option<i64> = sqlx::query_scalar($crate::store::sql::hot::SQL_SESSION_LAST_SEQ)
                        .bind(session_id)
                        .fetch_optional(&mut *conn)
                        .await
                        .map_err(db_err)?;
                    return last.ok_or_else(|| $crate::store::StoreError::Conflict(format!("no session `{session_id}`")));
                }
                // One statement reserves the seqs and bumps the version.
                let reserved: Option<i64> = sqlx::query_scalar($crate::store::sql::hot::SQL_SESSION_RESERVE)
                .bind(session_id)
                .bind(now)
                .bind(msgs.len() as i64)
                .fetch_optional(&mut *conn)
                .await
                .map_err(db_err)?;
                let Some(end) = reserved else {
                    return Err($crate::store::StoreError::Conflict(format!("no session `{session_id}`")));
                };
                let mut seq = end - msgs.len() as i64;
                for chunk in msgs.chunks($crate::store::sql::sessions::MESSAGE_BATCH) {
                    let mut rows = Vec::with_capacity(chunk.len());
                    for m in chunk {
                        seq += 1;
                        rows.push((
                            seq,
                            m,
                            $crate::store::sql::rows::tool_calls_json(m)?,
                            $crate::store::sql::rows::images_json(m)?,
                        ));
                    }
                    let mut qb = sqlx::QueryBuilder::<$db>::new($crate::store::sql::hot::SQL_MESSAGES_INSERT_HEAD);
                    qb.push_values(rows, |mut b, (seq, m, calls, images)| {
                        b.push_bind(session_id)
                            .push_bind(seq)
                            .push_bind(m.role().as_str())
                            .push_bind(m.content.as_str())
                            .push_bind(m.name.as_deref())
                            .push_bind(calls)
                            .push_bind(m.tool_call_id.as_deref())
                            .push_bind(m.is_error)
                            .push_bind(m.event_id.as_deref())
                            .push_bind(now)
                            .push_bind(images);
                    });
                    qb.build().execute(&mut *conn).await.map_err(db_err)?;
                }
                if embed {
                    // What transcript search will find by meaning, queued with the messages.
                    let first = end - msgs.len() as i64;
                    for (n, m) in msgs.iter().enumerate() {
                        if !$crate::store::sql::queue::searchable(m.role().as_str(), &m.content) {
                            continue;
                        }
                        let key = $crate::store::EmbedRef::Message { session_id: session_id.to_string(), seq: first + 1 + n as i64 }.key();
                        sqlx::query($crate::store::sql::queue::SQL_QUEUE_MESSAGE)
                            .bind(key)
                            .bind(session_id)
                            .execute(&mut *conn)
                            .await
                            .map_err(db_err)?;
                    }
                }
                Ok(seq)
            }
        }

        #[async_trait::async_trait]
        impl $crate::store::SessionStore for $store {
            async fn session_active(&self, key: &str) -> $crate::store::Result<Option<$crate::store::SessionRow>> {
                let raw: Option<$crate::store::sql::rows::SessionRaw> = sqlx::query_as(concat!(
                    "SELECT ",
                    $crate::store::sql::rows::cols!(session),
                    " FROM sessions WHERE key = $1 AND closed_ms IS NULL"
                ))
                .bind(key)
                .fetch_optional(self.reader())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                Ok(raw.map(Into::into))
            }

            /// Inserts the session; when another open session already holds the key (a race or
            /// a stale caller), returns that one instead. `Conflict` only if the id is taken by a
            /// closed session.
            async fn session_open(&self, new: &$crate::store::NewSession) -> $crate::store::Result<$crate::store::SessionRow> {
                for _ in 0..3 {
                    let now = $crate::store::now_ms();
                    let raw: Option<$crate::store::sql::rows::SessionRaw> = sqlx::query_as(concat!(
                        "INSERT INTO sessions (id, key, user_id, conversation, system_prompt, version, created_ms, \
                         updated_ms) VALUES ($1, $2, $3, $4, $5, 0, $6, $6) ON CONFLICT DO NOTHING RETURNING ",
                        $crate::store::sql::rows::cols!(session)
                    ))
                    .bind(new.id.as_str())
                    .bind(new.key.as_str())
                    .bind(new.user_id.as_str())
                    .bind(new.conversation.as_str())
                    .bind(new.system_prompt.as_str())
                    .bind(now)
                    .fetch_optional(self.writer())
                    .await
                    .map_err($crate::store::sql::error::db_err)?;
                    if let Some(raw) = raw {
                        return Ok(raw.into());
                    }
                    // Lost to an open session with the key (use it), or the id is taken.
                    if let Some(open) = self.session_active(&new.key).await? {
                        return Ok(open);
                    }
                }
                Err($crate::store::StoreError::Conflict(format!(
                    "cannot open session `{}` for key `{}`: the id is taken",
                    new.id, new.key
                )))
            }

            /// Sets `closed_ms`; the transcript stays. Closing a closed session is a no-op.
            async fn session_close(&self, id: &str) -> $crate::store::Result<()> {
                sqlx::query("UPDATE sessions SET closed_ms = $2, updated_ms = $2 WHERE id = $1 AND closed_ms IS NULL")
                    .bind(id)
                    .bind($crate::store::now_ms())
                    .execute(self.writer())
                    .await
                    .map_err($crate::store::sql::error::db_err)?;
                Ok(())
            }

            /// The last `limit` messages by seq, returned oldest first.
            async fn messages_recent(
                &self,
                session_id: &str,
                limit: usize,
            ) -> $crate::store::Result<Vec<$crate::store::StoredMessage>> {
                let raw: Vec<$crate::store::sql::rows::MessageRaw> = sqlx::query_as(concat!(
                    "SELECT ",
                    $crate::store::sql::rows::cols!(message),
                    " FROM messages WHERE session_id = $1 ORDER BY seq DESC LIMIT $2"
                ))
                .bind(session_id)
                .bind($crate::store::sql::rows::sql_limit(limit))
                .fetch_all(self.reader())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                let mut out: Vec<$crate::store::StoredMessage> = $crate::store::sql::rows::convert_all(raw)?;
                out.reverse();
                Ok(out)
            }

            /// In one transaction: seq continues from the session's max, the session's version
            /// and `updated_ms` are bumped once; returns the last seq. `Conflict` if the session
            /// does not exist.
            async fn messages_append(&self, session_id: &str, msgs: &[$crate::store::NewMessage]) -> $crate::store::Result<i64> {
                let mut tx = self.begin_write().await?;
                let last = Self::append_messages_on(&mut tx, session_id, msgs, $crate::store::now_ms(), self.embed_switch().on()).await?;
                tx.commit().await.map_err($crate::store::sql::error::db_err)?;
                Ok(last)
            }

            /// The seq of the user message that came from `event_id` in this session.
            async fn message_seq_for_event(&self, session_id: &str, event_id: &str) -> $crate::store::Result<Option<i64>> {
                sqlx::query_scalar(
                    "SELECT seq FROM messages WHERE session_id = $1 AND event_id = $2 AND role = 'user' \
                     ORDER BY seq LIMIT 1",
                )
                .bind(session_id)
                .bind(event_id)
                .fetch_optional(self.reader())
                .await
                .map_err($crate::store::sql::error::db_err)
            }
        }
    };
}
pub(crate) use impl_sessions;
