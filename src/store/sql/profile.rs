//! What a person sets about themselves ([`ProfileStore`](crate::store::ProfileStore)), written
//! once for both backends: their time zone, and the memories they pinned (always known: they go
//! into the system prompt of each new private session).
//!
//! Only a person's own personal memories can be pinned: this code must never pin, list or
//! unpin another user's memory or one of a group scope.

/// Implements `ProfileStore` for `$store`.
macro_rules! impl_profile {
    ($store:ty, $db:ty) => {
        #[async_trait::async_trait]
        impl $crate::store::ProfileStore for $store {
            /// Sets the user's IANA time zone (checked by the caller); `true` when the user exists.
            async fn user_set_timezone(&self, user_id: &str, timezone: &str) -> $crate::store::Result<bool> {
                let done = sqlx::query("UPDATE users SET timezone = $2 WHERE id = $1")
                    .bind(user_id)
                    .bind(timezone)
                    .execute(self.writer())
                    .await
                    .map_err($crate::store::sql::error::db_err)?;
                Ok(done.rows_affected() > 0)
            }

            /// `false` when the memory is not one of the user's personal memories.
            async fn memory_pin(&self, user_id: &str, memory_id: i64, pinned: bool) -> $crate::store::Result<bool> {
                let mut tx = self.begin_write().await?;
                let mine: Option<i64> =
                    sqlx::query_scalar("SELECT id FROM memories WHERE id = $1 AND user_id = $2 AND scope = ''")
                        .bind(memory_id)
                        .bind(user_id)
                        .fetch_optional(&mut *tx)
                        .await
                        .map_err($crate::store::sql::error::db_err)?;
                if mine.is_none() {
                    return Ok(false);
                }
                let sql = if pinned {
                    "INSERT INTO memory_pins (memory_id, user_id, created_ms) VALUES ($1, $2, $3) \
                     ON CONFLICT (memory_id) DO NOTHING"
                } else {
                    "DELETE FROM memory_pins WHERE memory_id = $1 AND user_id = $2 AND $3 >= 0"
                };
                sqlx::query(sql)
                    .bind(memory_id)
                    .bind(user_id)
                    .bind($crate::store::now_ms())
                    .execute(&mut *tx)
                    .await
                    .map_err($crate::store::sql::error::db_err)?;
                tx.commit().await.map_err($crate::store::sql::error::db_err)?;
                Ok(true)
            }

            /// Pinned first-to-last (a forgotten memory is no longer pinned).
            async fn memory_pins(&self, user_id: &str) -> $crate::store::Result<Vec<$crate::store::MemoryRow>> {
                let raw: Vec<$crate::store::sql::rows::MemoryRaw> = sqlx::query_as(
                    "SELECT m.id, m.user_id, m.scope, m.text, m.source, m.created_ms FROM memory_pins p \
                     JOIN memories m ON m.id = p.memory_id AND m.user_id = p.user_id AND m.scope = '' \
                     WHERE p.user_id = $1 ORDER BY p.created_ms, m.id",
                )
                .bind(user_id)
                .fetch_all(self.reader())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                Ok(raw.into_iter().map(Into::into).collect())
            }
        }
    };
}
pub(crate) use impl_profile;
