//! What a crash leaves behind ([`RecoveryStore`](crate::store::RecoveryStore)), written once for
//! both backends: the marker that a claimed event's turn began, the charge a recovery makes
//! (`charge_running!`, shared by start-up recovery and the takeover of a dead replica's events),
//! and the streamed drafts nobody will finish.
//!
//! A process death must charge a try only to an event that was running its turn, never to one
//! that only waited in a queue; and a draft is settled only once its event can no longer run
//! (never one whose event is pending or processing).

/// The `SET` assignments that return a `processing` row to `pending` after its holder died:
/// an event whose turn had begun (`started_ms` set) keeps the try its claim counted and counts
/// one more crash in a row; one that only waited gets the claim's try back and its crash streak
/// ends (it was not running at this death). Every right-hand side reads the old row.
macro_rules! charge_running {
    () => {
        "attempts = CASE WHEN started_ms IS NULL AND attempts > 0 THEN attempts - 1 ELSE attempts END, \
         crashes = CASE WHEN started_ms IS NULL THEN 0 ELSE crashes + 1 END, started_ms = NULL"
    };
}
pub(crate) use charge_running;

/// Outbox rows that are streamed reply drafts whose event is neither pending nor processing.
macro_rules! orphan_drafts {
    () => {
        "status = 'draft' AND key LIKE '%:reply' AND NOT EXISTS (SELECT 1 FROM inbox i \
         WHERE i.id = substr(outbox.key, 1, length(outbox.key) - 6) AND i.status IN ('pending', 'processing'))"
    };
}

/// Implements `RecoveryStore` for `$store` over database `$db`.
macro_rules! impl_recovery {
    ($store:ty, $db:ty) => {
        #[async_trait::async_trait]
        impl $crate::store::RecoveryStore for $store {
            /// Sets `started_ms`, only while `worker` holds the event.
            async fn inbox_start(&self, id: &str, worker: &str) -> $crate::store::Result<bool> {
                let now = $crate::store::now_ms();
                if let Some(lite) = self.lite() {
                    let (id, worker) = (id.to_string(), worker.to_string());
                    return lite.run(move |c| $crate::store::sql::lite_ops::inbox_start(c, &id, &worker, now)).await;
                }
                let done = sqlx::query($crate::store::sql::hot::SQL_INBOX_START)
                    .bind(id)
                    .bind(worker)
                    .bind(now)
                    .execute(self.writer())
                    .await
                    .map_err($crate::store::sql::error::db_err)?;
                Ok(done.rows_affected() == 1)
            }

            /// One transaction: delete the orphans never shown, then finish the shown ones.
            async fn drafts_settle(&self, text: &str) -> $crate::store::Result<u64> {
                use $crate::store::sql::error::db_err;
                let now = $crate::store::now_ms();
                let mut tx = self.begin_write().await?;
                let deleted = sqlx::query(concat!(
                    "DELETE FROM outbox WHERE platform_ids = '[]' AND ",
                    $crate::store::sql::recovery::orphan_drafts!()
                ))
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
                let finished = sqlx::query(concat!(
                    "UPDATE outbox SET key = key || ':cut:' || CAST(id AS TEXT), status = 'pending', text = $1, \
                     buttons = '[]', next_attempt_ms = 0, updated_ms = $2 WHERE ",
                    $crate::store::sql::recovery::orphan_drafts!()
                ))
                .bind(text)
                .bind(now)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
                tx.commit().await.map_err(db_err)?;
                Ok(deleted.rows_affected() + finished.rows_affected())
            }
        }
    };
}
pub(crate) use impl_recovery;
pub(crate) use orphan_drafts;
