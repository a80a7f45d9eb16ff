//! Butler's own secrets ([`KeyStore`](crate::store::KeyStore)), written once for both backends:
//! the first writer of a name wins and every later caller reads its secret.
//!
//! Fixed SQL only: this code must never build a statement from its input, nor log a secret.

/// Implements `KeyStore` for `$store`.
macro_rules! impl_keys {
    ($store:ty, $db:ty) => {
        #[async_trait::async_trait]
        impl $crate::store::KeyStore for $store {
            async fn key_get_or_insert(&self, name: &str, fresh: &str) -> $crate::store::Result<String> {
                sqlx::query(
                    "INSERT INTO server_keys (name, secret, created_ms) VALUES ($1, $2, $3) \
                     ON CONFLICT (name) DO NOTHING",
                )
                .bind(name)
                .bind(fresh)
                .bind($crate::store::now_ms())
                .execute(self.writer())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                sqlx::query_scalar("SELECT secret FROM server_keys WHERE name = $1")
                    .bind(name)
                    .fetch_one(self.writer())
                    .await
                    .map_err($crate::store::sql::error::db_err)
            }
        }
    };
}
pub(crate) use impl_keys;
