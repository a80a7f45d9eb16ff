//! Picks the store backend from the database URL and opens its pool.
//!
//! It must never migrate (that is `butler migrate` / `Store::migrate`) and never show the URL's
//! password in an error.

use super::sql::{PgStore, SqliteStore};
use super::{redact_url, Result, Store, StoreError};
use std::sync::Arc;

/// Connects to `url` (`sqlite://path` or `postgres://...`). Does not migrate.
pub async fn connect(url: &str, max_connections: u32) -> Result<Arc<dyn Store>> {
    if url.starts_with("sqlite:") {
        Ok(Arc::new(SqliteStore::connect(url, max_connections).await?))
    } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
        Ok(Arc::new(PgStore::connect(url, max_connections).await?))
    } else {
        Err(StoreError::Config(format!(
            "database.url must start with sqlite:// or postgres://, got `{}`",
            redact_url(url)
        )))
    }
}
