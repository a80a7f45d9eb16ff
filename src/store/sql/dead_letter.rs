//! Dead letters ([`DeadLetterStore`](crate::store::DeadLetterStore)), written once for both
//! backends: listing and counting events by status, re-queueing a failed event for
//! `butler inbox retry`, and releasing a claim without counting the try.
//!
//! This code must never touch an event that another worker is processing, except through
//! `inbox_release` by the worker that holds it.

/// Implements `DeadLetterStore` for `$store` over database `$db`.
macro_rules! impl_dead_letter {
    ($store:ty, $db:ty) => {
        #[async_trait::async_trait]
        impl $crate::store::DeadLetterStore for $store {
            /// Back to `pending`, due at now + `delay_ms`; the claim's `attempts + 1` is undone.
            async fn inbox_release(&self, id: &str, delay_ms: i64) -> $crate::store::Result<()> {
                let now = $crate::store::now_ms();
                sqlx::query(
                    "UPDATE inbox SET status = 'pending', claimed_by = NULL, next_attempt_ms = $2, started_ms = NULL, \
                     attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END, updated_ms = $3 \
                     WHERE id = $1 AND status = 'processing'",
                )
                .bind(id)
                .bind(now.saturating_add(delay_ms.max(0)))
                .bind(now)
                .execute(self.writer())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                Ok(())
            }

            async fn inbox_list(
                &self,
                status: Option<$crate::store::InboxStatus>,
                limit: usize,
            ) -> $crate::store::Result<Vec<$crate::store::InboxRow>> {
                let raw: Vec<$crate::store::sql::rows::InboxRaw> = sqlx::query_as(concat!(
                    "SELECT ",
                    $crate::store::sql::rows::cols!(inbox),
                    " FROM inbox WHERE ($1 IS NULL OR status = $1) ORDER BY seq DESC LIMIT $2"
                ))
                .bind(status.map(|s| s.as_str()))
                .bind($crate::store::sql::rows::sql_limit(limit))
                .fetch_all(self.reader())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                $crate::store::sql::rows::convert_all(raw)
            }

            async fn inbox_count(&self, status: $crate::store::InboxStatus) -> $crate::store::Result<i64> {
                let (n,): (i64,) = sqlx::query_as($crate::store::sql::dead_letter::inbox_count_sql(status))
                    .fetch_one(self.reader())
                    .await
                    .map_err($crate::store::sql::error::db_err)?;
                Ok(n)
            }

            /// `failed` -> `pending`, due now, attempts and crashes 0 (the error is kept until it
            /// is retried).
            async fn inbox_requeue(&self, id: &str) -> $crate::store::Result<bool> {
                let done = sqlx::query(
                    "UPDATE inbox SET status = 'pending', claimed_by = NULL, attempts = 0, crashes = 0, \
                     started_ms = NULL, next_attempt_ms = 0, updated_ms = $2 WHERE id = $1 AND status = 'failed'",
                )
                .bind(id)
                .bind($crate::store::now_ms())
                .execute(self.writer())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                Ok(done.rows_affected() == 1)
            }
        }
    };
}
pub(crate) use impl_dead_letter;

/// Counts the inbox's events of `status` with the status written into the statement: SQLite's
/// stable plans (`sqlite::stable_plans`) never look at a bound value, so `status = $1` read the
/// whole inbox (every `/metrics` scrape, growing with every message ever received, and filling
/// the readers' page caches); a literal lets the count read only that status's partial index.
pub(crate) fn inbox_count_sql(status: crate::store::InboxStatus) -> &'static str {
    use crate::store::InboxStatus;
    match status {
        InboxStatus::Pending => "SELECT COUNT(*) FROM inbox WHERE status = 'pending'",
        InboxStatus::Processing => "SELECT COUNT(*) FROM inbox WHERE status = 'processing'",
        InboxStatus::Failed => "SELECT COUNT(*) FROM inbox WHERE status = 'failed'",
        InboxStatus::Done => "SELECT COUNT(*) FROM inbox WHERE status = 'done'",
        InboxStatus::Dropped => "SELECT COUNT(*) FROM inbox WHERE status = 'dropped'",
    }
}
