//! The outbox ([`OutboxStore`](crate::store::OutboxStore)), written once for both backends:
//! replies are stored under an idempotency key before they are sent, then marked sent with the
//! platform's message ids, failed, or rescheduled; replies held while a platform's reply
//! window is closed are released when the person writes again (`HeldStore`).
//!
//! It must never create a second row for one key, never turn a final (pending, sent, failed)
//! reply back into a draft, and never change a row once it is `sent` (the one exception lives in
//! `approvals.rs`: a decided approval's message is revised so that it is edited in place).

/// Implements `OutboxStore` for `$store` over database `$db`, and the inherent
/// `outbox_upsert_on` helper shared with `finish_event`.
macro_rules! impl_outbox {
    ($store:ty, $db:ty) => {
        impl $store {
            /// Inserts `new` as `pending`; if the key exists as a `draft`, that row becomes
            /// `pending` with the final text and buttons (keeping its platform ids); any other
            /// existing row is returned unchanged.
            async fn outbox_upsert_on(
                conn: &mut <$db as sqlx::Database>::Connection,
                new: &$crate::store::NewOutbox,
                now: i64,
            ) -> $crate::store::Result<$crate::store::OutboxRow> {
                Self::outbox_insert_on(
                    conn,
                    new,
                    now,
                    $crate::store::sql::hot::SQL_OUTBOX_UPSERT,
                )
                .await
            }

            /// Runs an outbox INSERT (`sql`, binding `new` as $1..$10) and returns the inserted or
            /// updated row, or the existing row when the statement changed nothing.
            async fn outbox_insert_on(
                conn: &mut <$db as sqlx::Database>::Connection,
                new: &$crate::store::NewOutbox,
                now: i64,
                sql: &'static str,
            ) -> $crate::store::Result<$crate::store::OutboxRow> {
                let raw: Option<$crate::store::sql::rows::OutboxRaw> = sqlx::query_as(sql)
                    .bind(new.key.as_str())
                    .bind($crate::store::sql::rows::channel_of(&new.conversation))
                    .bind(new.conversation.as_str())
                    .bind(new.text.as_str())
                    .bind($crate::store::sql::rows::to_json("buttons", &new.buttons)?)
                    .bind(new.reply_to.as_deref())
                    .bind(now)
                    .bind(
                        new.private_to
                            .as_ref()
                            .map(|p| $crate::store::sql::rows::to_json("private_to", p))
                            .transpose()?,
                    )
                    .bind(new.file.as_ref().map(|f| $crate::store::sql::rows::to_json("file", f)).transpose()?)
                    .bind(new.title.as_deref())
                    .fetch_optional(&mut *conn)
                    .await
                    .map_err($crate::store::sql::error::db_err)?;
                match raw {
                    Some(raw) => raw.try_into(),
                    None => Self::outbox_by_key_on(conn, &new.key).await,
                }
            }

            async fn outbox_by_key_on(
                conn: &mut <$db as sqlx::Database>::Connection,
                key: &str,
            ) -> $crate::store::Result<$crate::store::OutboxRow> {
                let raw: $crate::store::sql::rows::OutboxRaw =
                    sqlx::query_as($crate::store::sql::hot::SQL_OUTBOX_BY_KEY)
                        .bind(key)
                        .fetch_one(&mut *conn)
                        .await
                        .map_err($crate::store::sql::error::db_err)?;
                raw.try_into()
            }
        }

        #[async_trait::async_trait]
        impl $crate::store::OutboxStore for $store {
            /// Inserts a `draft` row if the key is new; otherwise returns the existing row
            /// unchanged, whatever its status.
            async fn outbox_draft(&self, new: &$crate::store::NewOutbox) -> $crate::store::Result<$crate::store::OutboxRow> {
                let mut conn = self.writer().acquire().await.map_err($crate::store::sql::error::db_err)?;
                Self::outbox_insert_on(
                    &mut conn,
                    new,
                    $crate::store::now_ms(),
                    concat!(
                        "INSERT INTO outbox (key, channel, conversation, text, buttons, reply_to, status, platform_ids, \
                         attempts, next_attempt_ms, created_ms, updated_ms, private_to, file, title) \
                         VALUES ($1, $2, $3, $4, $5, $6, 'draft', '[]', 0, 0, $7, $7, $8, $9, $10) \
                         ON CONFLICT (key) DO NOTHING RETURNING ",
                        $crate::store::sql::rows::cols!(outbox)
                    ),
                )
                .await
            }

            /// Inserts a `pending` row; an existing `draft` with the key becomes `pending` with
            /// the new text; any other existing row is returned unchanged.
            async fn outbox_enqueue(&self, new: &$crate::store::NewOutbox) -> $crate::store::Result<$crate::store::OutboxRow> {
                let mut conn = self.writer().acquire().await.map_err($crate::store::sql::error::db_err)?;
                Self::outbox_upsert_on(&mut conn, new, $crate::store::now_ms()).await
            }

            /// Replaces the platform ids delivered so far.
            async fn outbox_progress(&self, id: i64, platform_ids: &[String]) -> $crate::store::Result<()> {
                sqlx::query("UPDATE outbox SET platform_ids = $2, updated_ms = $3 WHERE id = $1")
                    .bind(id)
                    .bind($crate::store::sql::rows::to_json("platform ids", platform_ids)?)
                    .bind($crate::store::now_ms())
                    .execute(self.writer())
                    .await
                    .map_err($crate::store::sql::error::db_err)?;
                Ok(())
            }

            /// `pending` rows of `channels` with `next_attempt_ms <= now_ms`, oldest (lowest id)
            /// first. Reads only: the caller (one delivery worker per channel) marks them.
            async fn outbox_due(
                &self,
                channels: &[String],
                now_ms: i64,
                limit: usize,
            ) -> $crate::store::Result<Vec<$crate::store::OutboxRow>> {
                if channels.is_empty() || limit == 0 {
                    return Ok(Vec::new());
                }
                let raw: Vec<$crate::store::sql::rows::OutboxRaw> = sqlx::query_as(Self::SQL_OUTBOX_DUE)
                    .bind(Self::channels_arg(channels))
                    .bind(now_ms)
                    .bind($crate::store::sql::rows::sql_limit(limit))
                    .fetch_all(self.reader())
                    .await
                    .map_err($crate::store::sql::error::db_err)?;
                $crate::store::sql::rows::convert_all(raw)
            }

            /// `Sent` and `Failed { error }` count one attempt; `Retry` puts a pending or failed
            /// row back to `pending` at `next_attempt_ms` with the error, counting an attempt only
            /// if `count_attempt`. A row that is already `sent` never changes. A reply that ends
            /// sent or failed announces its event's outcome as settled.
            async fn outbox_mark(&self, id: i64, mark: &$crate::store::OutboxMark) -> $crate::store::Result<()> {
                use $crate::store::OutboxMark;
                let now = $crate::store::now_ms();
                let done: Option<(String, String)> = match (self.lite(), mark) {
                    (Some(lite), _) => {
                        let mark = mark.clone();
                        lite.run(move |c| $crate::store::sql::lite_ops::outbox_mark(c, id, &mark, now)).await?
                    }
                    // Only if the row still holds what was delivered: a revision made while it
                    // was being sent (an approval decided meanwhile) keeps it pending, so the
                    // new text goes out too.
                    (None, OutboxMark::Sent { platform_ids, text }) => sqlx::query_as($crate::store::sql::hot::SQL_OUTBOX_SENT)
                    .bind(id)
                    .bind(now)
                    .bind(serde_json::to_string(platform_ids).unwrap_or_else(|_| "[]".into()))
                    .bind(text.as_str())
                    .fetch_optional(self.writer())
                    .await
                    .map_err($crate::store::sql::error::db_err)?,
                    (None, OutboxMark::Failed { error }) => sqlx::query_as($crate::store::sql::hot::SQL_OUTBOX_FAILED)
                    .bind(id)
                    .bind(now)
                    .bind(error.as_str())
                    .fetch_optional(self.writer())
                    .await
                    .map_err($crate::store::sql::error::db_err)?,
                    (None, OutboxMark::Retry { next_attempt_ms, error, count_attempt }) => {
                        sqlx::query($crate::store::sql::hot::SQL_OUTBOX_RETRY)
                        .bind(id)
                        .bind(now)
                        .bind(error.as_str())
                        .bind(*next_attempt_ms)
                        .bind(i32::from(*count_attempt))
                        .execute(self.writer())
                        .await
                        .map_err($crate::store::sql::error::db_err)?;
                        None
                    }
                };
                // A reply that reached its end: its event's outcome moved on.
                if let Some((key, conversation)) = done {
                    if let Some(event_id) = $crate::store::reply_of(&key) {
                        self.settled_feed().announce(event_id, &conversation);
                    }
                }
                Ok(())
            }

            async fn outbox_get(&self, key: &str) -> $crate::store::Result<Option<$crate::store::OutboxRow>> {
                let raw: Option<$crate::store::sql::rows::OutboxRaw> =
                    sqlx::query_as(concat!("SELECT ", $crate::store::sql::rows::cols!(outbox), " FROM outbox WHERE key = $1"))
                        .bind(key)
                        .fetch_optional(self.reader())
                        .await
                        .map_err($crate::store::sql::error::db_err)?;
                raw.map(TryInto::try_into).transpose()
            }
        }

        #[async_trait::async_trait]
        impl $crate::store::HeldStore for $store {
            async fn outbox_release(&self, conversation: &str, notice: &str) -> $crate::store::Result<u64> {
                let now = $crate::store::now_ms();
                let done = sqlx::query(
                    "UPDATE outbox SET next_attempt_ms = $2, updated_ms = $2, text = $3 || text, last_error = NULL \
                     WHERE conversation = $1 AND status = 'pending' AND last_error LIKE 'held:%'",
                )
                .bind(conversation)
                .bind(now)
                .bind(notice)
                .execute(self.writer())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                Ok(done.rows_affected())
            }
        }
    };
}
pub(crate) use impl_outbox;
