//! The record of triage decisions and of permission decisions on tool calls
//! ([`AuditStore`](crate::store::AuditStore)), written once for both backends: append-only rows,
//! the latest ones, and counts per triage decision.
//!
//! It must never update or delete a decision or an audit row, and its orderings must not depend
//! on the backend (ties are broken by insertion order, names are sorted in byte order).

/// Implements `AuditStore` for `$store` over database `$db`.
macro_rules! impl_audit {
    ($store:ty, $db:ty) => {
        #[async_trait::async_trait]
        impl $crate::store::AuditStore for $store {
            /// Appends the decision as given (its `at_ms` is kept, not replaced by now).
            async fn decision_add(&self, d: &$crate::store::DecisionRow) -> $crate::store::Result<()> {
                sqlx::query(
                    "INSERT INTO decisions (at_ms, event_id, actor, conversation, decision, reason) \
                     VALUES ($1, $2, $3, $4, $5, $6)",
                )
                .bind(d.at_ms)
                .bind(d.event_id.as_str())
                .bind(d.actor.as_str())
                .bind(d.conversation.as_str())
                .bind(d.decision.as_str())
                .bind(d.reason.as_str())
                .execute(self.writer())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                Ok(())
            }

            /// The last `limit` decisions by `at_ms`, most recent first; equal times in reverse
            /// insertion order.
            async fn decisions_recent(&self, limit: usize) -> $crate::store::Result<Vec<$crate::store::DecisionRow>> {
                let raw: Vec<$crate::store::sql::rows::DecisionRaw> = sqlx::query_as(concat!(
                    "SELECT ",
                    $crate::store::sql::rows::cols!(decision),
                    " FROM decisions ORDER BY at_ms DESC, id DESC LIMIT $1"
                ))
                .bind($crate::store::sql::rows::sql_limit(limit))
                .fetch_all(self.reader())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                Ok(raw.into_iter().map(Into::into).collect())
            }

            /// `(decision, count)` over decisions with `at_ms >= since_ms`, sorted by decision in
            /// byte order; decisions with no rows in the window are absent.
            async fn decisions_since(&self, since_ms: i64) -> $crate::store::Result<Vec<(String, i64)>> {
                let mut counts: Vec<(String, i64)> =
                    sqlx::query_as("SELECT decision, COUNT(*) FROM decisions WHERE at_ms >= $1 GROUP BY decision")
                        .bind(since_ms)
                        .fetch_all(self.reader())
                        .await
                        .map_err($crate::store::sql::error::db_err)?;
                counts.sort();
                Ok(counts)
            }

            /// Appends the permission decision as given (its `at_ms` is kept, not replaced by now).
            async fn audit_add(&self, row: &$crate::store::AuditRow) -> $crate::store::Result<()> {
                sqlx::query(
                    "INSERT INTO audit (at_ms, actor, user_id, session_id, tool, args_hash, outcome, reason) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                )
                .bind(row.at_ms)
                .bind(row.actor.as_str())
                .bind(row.user_id.as_str())
                .bind(row.session_id.as_str())
                .bind(row.tool.as_str())
                .bind(row.args_hash.as_str())
                .bind(row.outcome.as_str())
                .bind(row.reason.as_str())
                .execute(self.writer())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                Ok(())
            }

            /// The last `limit` audit rows by `at_ms`, most recent first; equal times in reverse
            /// insertion order.
            async fn audit_recent(&self, limit: usize) -> $crate::store::Result<Vec<$crate::store::AuditRow>> {
                let raw: Vec<$crate::store::sql::rows::AuditRaw> = sqlx::query_as(concat!(
                    "SELECT ",
                    $crate::store::sql::rows::cols!(audit),
                    " FROM audit ORDER BY at_ms DESC, id DESC LIMIT $1"
                ))
                .bind($crate::store::sql::rows::sql_limit(limit))
                .fetch_all(self.reader())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                Ok(raw.into_iter().map(Into::into).collect())
            }
        }
    };
}
pub(crate) use impl_audit;
