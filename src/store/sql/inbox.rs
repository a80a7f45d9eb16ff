//! The inbox ([`InboxStore`](crate::store::InboxStore)), written once for both backends: every
//! inbound event is stored under its stable id before it is acknowledged, then claimed by one
//! worker, finished, retried or recovered.
//!
//! Backend-specific SQL (claiming and recovering over a list of channels) comes from the store
//! type's `SQL_*` constants. This code must never hand one event to two claimers, and never
//! reset an event that another live worker holds except through `inbox_recover`.

/// Implements `InboxStore` for `$store` over database `$db`.
macro_rules! impl_inbox {
    ($store:ty, $db:ty) => {
        #[async_trait::async_trait]
        impl $crate::store::InboxStore for $store {
            /// `INSERT ... ON CONFLICT (id) DO NOTHING`: `false` when the id is already stored.
            /// The row is `pending` and due at once (`next_attempt_ms = 0`, so that clock skew
            /// between replicas never delays a fresh event).
            async fn inbox_insert(&self, event: &butler_channel::InboundEvent) -> $crate::store::Result<bool> {
                let now = $crate::store::now_ms();
                let json = $crate::store::sql::rows::to_json("inbound event", event)?;
                if let Some(lite) = self.lite() {
                    let row =
                        [event.id.0.clone(), event.conversation.channel.clone(), event.conversation.to_string(), json];
                    return lite.run(move |c| $crate::store::sql::lite_ops::inbox_insert(c, &row, now)).await;
                }
                let done = sqlx::query($crate::store::sql::hot::SQL_INBOX_INSERT)
                    .bind(event.id.0.as_str())
                    .bind(event.conversation.channel.as_str())
                    .bind(event.conversation.to_string())
                    .bind(json)
                    .bind(now)
                    .execute(self.writer())
                    .await
                    .map_err($crate::store::sql::error::db_err)?;
                Ok(done.rows_affected() == 1)
            }

            /// Atomically marks up to `limit` pending, due rows of `channels` as `processing` by
            /// `worker` (attempts + 1) and returns them ordered by `seq`. Concurrent claimers
            /// never get the same row. No channels or a zero limit claim nothing.
            async fn inbox_claim(
                &self,
                channels: &[String],
                worker: &str,
                limit: usize,
            ) -> $crate::store::Result<Vec<$crate::store::InboxRow>> {
                if channels.is_empty() || limit == 0 {
                    return Ok(Vec::new());
                }
                let now = $crate::store::now_ms();
                let limit = $crate::store::sql::rows::sql_limit(limit);
                let mut rows: Vec<$crate::store::InboxRow> = if let Some(lite) = self.lite() {
                    // The writer is SQLite's: its channel list is a JSON array (`json_each`).
                    let channels = $crate::store::sql::rows::to_json("channels", channels)?;
                    let worker = worker.to_string();
                    lite.run(move |c| {
                        $crate::store::sql::lite_ops::inbox_claim(
                            c,
                            Self::SQL_INBOX_CLAIM,
                            &channels,
                            &worker,
                            now,
                            limit,
                        )
                    })
                    .await?
                } else {
                    let raw: Vec<$crate::store::sql::rows::InboxRaw> = sqlx::query_as(Self::SQL_INBOX_CLAIM)
                        .bind(Self::channels_arg(channels))
                        .bind(worker)
                        .bind(now)
                        .bind(limit)
                        .fetch_all(self.writer())
                        .await
                        .map_err($crate::store::sql::error::db_err)?;
                    $crate::store::sql::rows::convert_all(raw)?
                };
                rows.sort_by_key(|r| r.seq);
                Ok(rows)
            }

            /// Sets the final status (done, dropped, failed) and the error (`None` clears it), and
            /// announces the settled event.
            async fn inbox_finish(
                &self,
                id: &str,
                status: $crate::store::InboxStatus,
                error: Option<&str>,
            ) -> $crate::store::Result<()> {
                let conversation: Option<String> = sqlx::query_scalar(
                    "UPDATE inbox SET status = $2, error = $3, updated_ms = $4 WHERE id = $1 RETURNING conversation",
                )
                .bind(id)
                .bind(status.as_str())
                .bind(error)
                .bind($crate::store::now_ms())
                .fetch_optional(self.writer())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                let last =
                    !matches!(status, $crate::store::InboxStatus::Pending | $crate::store::InboxStatus::Processing);
                if let (true, Some(conversation)) = (last, conversation) {
                    self.settled_feed().announce(id, &conversation);
                }
                Ok(())
            }

            /// Back to `pending`, due at now + `delay_ms`, releasing the claim; the try ended
            /// without a crash, so the crash streak starts over.
            async fn inbox_retry(&self, id: &str, delay_ms: i64, error: Option<&str>) -> $crate::store::Result<()> {
                let now = $crate::store::now_ms();
                sqlx::query(
                    "UPDATE inbox SET status = 'pending', claimed_by = NULL, next_attempt_ms = $2, error = $3, \
                     started_ms = NULL, crashes = 0, updated_ms = $4 WHERE id = $1",
                )
                .bind(id)
                .bind(now.saturating_add(delay_ms.max(0)))
                .bind(error)
                .bind(now)
                .execute(self.writer())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                Ok(())
            }

            /// Every `processing` row of `channels` becomes `pending` again, charged as a crash
            /// only if its turn had begun (`RecoveryStore::inbox_start`); returns how many.
            /// Only for start-up of a single node (or after the owner's lease is known dead).
            async fn inbox_recover(&self, channels: &[String]) -> $crate::store::Result<u64> {
                if channels.is_empty() {
                    return Ok(0);
                }
                let done = sqlx::query(Self::SQL_INBOX_RECOVER)
                    .bind(Self::channels_arg(channels))
                    .bind($crate::store::now_ms())
                    .execute(self.writer())
                    .await
                    .map_err($crate::store::sql::error::db_err)?;
                Ok(done.rows_affected())
            }

            async fn inbox_get(&self, id: &str) -> $crate::store::Result<Option<$crate::store::InboxRow>> {
                let raw: Option<$crate::store::sql::rows::InboxRaw> = sqlx::query_as(concat!(
                    "SELECT ",
                    $crate::store::sql::rows::cols!(inbox),
                    " FROM inbox WHERE id = $1"
                ))
                .bind(id)
                .fetch_optional(self.reader())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                raw.map(TryInto::try_into).transpose()
            }
        }
    };
}
pub(crate) use impl_inbox;
