//! Channels' read positions ([`CursorStore`](crate::store::CursorStore)), written once for both
//! backends: one row per name, replaced whole.
//!
//! Fixed SQL only: this code must never build a statement from its input.

/// Implements `CursorStore` for `$store`.
macro_rules! impl_cursors {
    ($store:ty, $db:ty) => {
        #[async_trait::async_trait]
        impl $crate::store::CursorStore for $store {
            async fn cursor_get(&self, name: &str) -> $crate::store::Result<Option<String>> {
                sqlx::query_scalar("SELECT token FROM channel_cursors WHERE name = $1")
                    .bind(name)
                    .fetch_optional(self.reader())
                    .await
                    .map_err($crate::store::sql::error::db_err)
            }

            async fn cursor_set(&self, name: &str, cursor: &str) -> $crate::store::Result<()> {
                sqlx::query(
                    "INSERT INTO channel_cursors (name, token, updated_ms) VALUES ($1, $2, $3) \
                     ON CONFLICT (name) DO UPDATE SET token = excluded.token, updated_ms = excluded.updated_ms",
                )
                .bind(name)
                .bind(cursor)
                .bind($crate::store::now_ms())
                .execute(self.writer())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                Ok(())
            }
        }
    };
}
pub(crate) use impl_cursors;
