//! What several replicas need ([`ReplicaStore`](crate::store::ReplicaStore)), written once for
//! both backends: fencing tokens per session key, routing an event to its session's owner,
//! taking back a dead replica's events, claiming an outbox row before sending it.
//!
//! It must never reopen an event that is finished, nor take an event from a live replica.

/// Implements `ReplicaStore` for `$store` over database `$db`.
macro_rules! impl_replicas {
    ($store:ty, $db:ty) => {
        #[async_trait::async_trait]
        impl $crate::store::ReplicaStore for $store {
            /// `INSERT .. ON CONFLICT DO UPDATE SET token = token + 1 RETURNING token`: one row
            /// per session key, its token only ever grows.
            async fn fence_take(&self, key: &str) -> $crate::store::Result<$crate::store::Fence> {
                let token: i64 = sqlx::query_scalar(
                    "INSERT INTO session_fences (key, token) VALUES ($1, 1) \
                     ON CONFLICT (key) DO UPDATE SET token = session_fences.token + 1 RETURNING token",
                )
                .bind(key)
                .fetch_one(self.writer())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                Ok($crate::store::Fence { key: key.to_string(), token })
            }

            /// Back to `pending` for `worker`, the claim's `attempts + 1` undone.
            async fn inbox_route(&self, id: &str, worker: &str) -> $crate::store::Result<bool> {
                let now = $crate::store::now_ms();
                let done = sqlx::query(
                    "UPDATE inbox SET status = 'pending', claimed_by = NULL, routed_to = $2, routed_ms = $3, \
                     next_attempt_ms = 0, started_ms = NULL, attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END, \
                     updated_ms = $3 WHERE id = $1 AND status = 'processing'",
                )
                .bind(id)
                .bind(worker)
                .bind(now)
                .execute(self.writer())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                Ok(done.rows_affected() == 1)
            }

            async fn inbox_takeover(&self, alive: &[String]) -> $crate::store::Result<u64> {
                let done = sqlx::query(Self::SQL_INBOX_TAKEOVER)
                    .bind(Self::channels_arg(alive))
                    .bind($crate::store::now_ms())
                    .execute(self.writer())
                    .await
                    .map_err($crate::store::sql::error::db_err)?;
                Ok(done.rows_affected())
            }

            /// Like `inbox_release` with no delay, but only while `worker` holds the event.
            async fn inbox_yield(&self, id: &str, worker: &str) -> $crate::store::Result<bool> {
                let now = $crate::store::now_ms();
                let done = sqlx::query(
                    "UPDATE inbox SET status = 'pending', claimed_by = NULL, next_attempt_ms = 0, started_ms = NULL, \
                     attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END, updated_ms = $3 \
                     WHERE id = $1 AND status = 'processing' AND claimed_by = $2",
                )
                .bind(id)
                .bind(worker)
                .bind(now)
                .execute(self.writer())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                Ok(done.rows_affected() == 1)
            }

            /// The claim's `attempts + 1` is undone: the event never ran.
            async fn inbox_unclaim(&self, worker: &str, since_ms: i64) -> $crate::store::Result<u64> {
                let done = sqlx::query(
                    "UPDATE inbox SET status = 'pending', claimed_by = NULL, started_ms = NULL, \
                     attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END, updated_ms = $3 \
                     WHERE status = 'processing' AND claimed_by = $1 AND updated_ms >= $2",
                )
                .bind(worker)
                .bind(since_ms)
                .bind($crate::store::now_ms())
                .execute(self.writer())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                Ok(done.rows_affected())
            }

            /// A conditional update: only one replica moves `next_attempt_ms` past now.
            async fn outbox_claim(&self, id: i64, until_ms: i64) -> $crate::store::Result<bool> {
                let done = sqlx::query(
                    "UPDATE outbox SET next_attempt_ms = $3 WHERE id = $1 AND status = 'pending' \
                     AND next_attempt_ms <= $2",
                )
                .bind(id)
                .bind($crate::store::now_ms())
                .bind(until_ms)
                .execute(self.writer())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                Ok(done.rows_affected() == 1)
            }
        }
    };
}
pub(crate) use impl_replicas;

#[cfg(test)]
mod tests {
    use crate::store::sql::{PgStore, SqliteStore};
    use crate::store::ROUTE_GRACE_MS;

    #[test]
    fn the_claim_waits_the_documented_grace_for_routed_events() {
        let want = format!("routed_ms <= $3 - {ROUTE_GRACE_MS}");
        for sql in [PgStore::SQL_INBOX_CLAIM, SqliteStore::SQL_INBOX_CLAIM] {
            assert!(sql.contains(&want), "{sql}");
        }
    }
}
