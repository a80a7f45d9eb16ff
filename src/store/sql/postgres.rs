//! [`PgStore`]: the production backend, safe for several replicas sharing one database.
//!
//! Claims use `FOR UPDATE SKIP LOCKED`, memory search a generated `tsvector` column with a GIN
//! index. This file must never put a password into an error or log line (URLs go through
//! [`redact_url`]) and never put user text into SQL it builds.

use super::error::db_err;
use crate::store::{redact_url, Backend, Result, StoreError};
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{Postgres, Transaction};
use std::str::FromStr;
use std::time::Duration;

static MIGRATOR: Migrator = sqlx::migrate!("./migrations/postgres");

/// The Postgres store.
pub struct PgStore {
    pool: PgPool,
}

impl PgStore {
    /// Connects a pool of up to `max_connections` to `url` (`postgres://...`). Does not
    /// migrate. A server that cannot be reached is `Unavailable`; a wrong URL, database name
    /// or password is `Config`.
    pub async fn connect(url: &str, max_connections: u32) -> Result<Self> {
        let options = PgConnectOptions::from_str(url)
            .map_err(|e| StoreError::Config(format!("bad Postgres URL `{}`: {e}", redact_url(url))))?;
        let pool = PgPoolOptions::new()
            .max_connections(max_connections.max(1))
            .acquire_timeout(Duration::from_secs(10))
            .idle_timeout(Duration::from_secs(600))
            .connect_with(options)
            .await
            .map_err(|e| match db_err(e) {
                StoreError::Config(m) => StoreError::Config(format!("{}: {m}", redact_url(url))),
                other => StoreError::Unavailable(format!("cannot connect to {}: {other}", redact_url(url))),
            })?;
        Ok(Self { pool })
    }

    const BACKEND: Backend = Backend::Postgres;

    fn migrator() -> &'static Migrator {
        &MIGRATOR
    }

    fn reader(&self) -> &PgPool {
        &self.pool
    }

    fn writer(&self) -> &PgPool {
        &self.pool
    }

    async fn begin_write(&self) -> Result<Transaction<'static, Postgres>> {
        self.pool.begin().await.map_err(db_err)
    }

    async fn close_pools(&self) {
        self.pool.close().await;
    }

    /// The channel list is bound as a `text[]`.
    fn channels_arg(channels: &[String]) -> Vec<String> {
        channels.to_vec()
    }

    super::channel_sql!("channel = ANY($1)", " FOR UPDATE SKIP LOCKED");

    /// `tsv @@ query` over this user's rows (GIN index), best `ts_rank` first, then newest.
    const SQL_MEMORY_SEARCH: &'static str = "SELECT id, user_id, scope, text, source, created_ms \
         FROM memories, to_tsquery('english', $2) AS q \
         WHERE user_id = $1 AND scope = $4 AND tsv @@ q \
         ORDER BY ts_rank(tsv, q) DESC, created_ms DESC, id DESC LIMIT $3";

    /// `'a' | 'b'`: every term is a quoted tsquery lexeme (terms hold only letters and digits,
    /// so no quote or backslash can appear inside), joined with OR.
    fn fts_query(terms: &[String]) -> String {
        terms.iter().map(|t| format!("'{t}'")).collect::<Vec<_>>().join(" | ")
    }
}

super::impl_store!(PgStore, sqlx::Postgres);
