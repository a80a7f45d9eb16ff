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
    /// Events this store settled, announced to listeners in this process.
    settled: crate::store::SettledFeed,
    /// Whether writes queue their texts for embedding.
    embed: crate::store::EmbedSwitch,
}

/// What to run when the role or the database is missing (or the password is wrong): the
/// commands of the README's Postgres set-up, for the names in the URL.
fn setup_hint(role: &str, database: &str) -> String {
    format!(
        " (if the role or the database is missing, create them: `sudo -u postgres createuser --pwprompt {role}` and \
         `sudo -u postgres createdb --owner {role} {database}`, then \
         url = \"postgres://{role}:PASSWORD@127.0.0.1:5432/{database}\")"
    )
}

impl PgStore {
    /// Connects a pool of up to `max_connections` to `url` (`postgres://...`). Does not
    /// migrate. A server that cannot be reached is `Unavailable`; a wrong URL, database name
    /// or password is `Config`.
    pub async fn connect(url: &str, max_connections: u32) -> Result<Self> {
        let options = PgConnectOptions::from_str(url)
            .map_err(|e| StoreError::Config(format!("bad Postgres URL `{}`: {e}", redact_url(url))))?;
        let (role, database) = (
            options.get_username().to_string(),
            options.get_database().map_or_else(|| options.get_username().to_string(), str::to_string),
        );
        let pool = PgPoolOptions::new()
            .max_connections(max_connections.max(1))
            .acquire_timeout(Duration::from_secs(10))
            .idle_timeout(Duration::from_secs(600))
            .connect_with(options)
            .await
            .map_err(|e| match db_err(e) {
                StoreError::Config(m) => {
                    StoreError::Config(format!("{}: {m}{}", redact_url(url), setup_hint(&role, &database)))
                }
                other => StoreError::Unavailable(format!("cannot connect to {}: {other}", redact_url(url))),
            })?;
        Ok(Self { pool, settled: crate::store::SettledFeed::default(), embed: crate::store::EmbedSwitch::default() })
    }

    const BACKEND: Backend = Backend::Postgres;

    fn migrator() -> &'static Migrator {
        &MIGRATOR
    }

    fn embed_switch(&self) -> &crate::store::EmbedSwitch {
        &self.embed
    }

    fn settled_feed(&self) -> &crate::store::SettledFeed {
        &self.settled
    }

    fn reader(&self) -> &PgPool {
        &self.pool
    }

    fn writer(&self) -> &PgPool {
        &self.pool
    }

    /// Postgres has no SQLite writer: every write goes through sqlx.
    fn lite(&self) -> Option<&super::lite::Lite> {
        None
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

    super::expand::channel_sql!("channel = ANY($1)", " FOR UPDATE SKIP LOCKED", "claimed_by = ANY($1)");

    /// `tsv @@ query` over this user's rows (GIN index), best `ts_rank` first, then newest.
    const SQL_MEMORY_SEARCH: &'static str = "SELECT id, user_id, scope, text, source, created_ms \
         FROM memories, to_tsquery('english', $2) AS q \
         WHERE user_id = $1 AND scope = $4 AND tsv @@ q \
         ORDER BY ts_rank(tsv, q) DESC, created_ms DESC, id DESC LIMIT $3";

    /// The person's (`$1`) direct sessions except `$4`, their user and assistant messages whose
    /// tsvector matches: the expression and role condition are those of the GIN index of
    /// migration 0022. Best `ts_rank` first, then newest.
    const SQL_TRANSCRIPT_PRIVATE: &'static str =
        "SELECT m.session_id, s.key AS session_key, s.conversation, m.seq, m.role, m.content, m.created_ms, \
         s.created_ms AS session_created_ms \
         FROM sessions s JOIN messages m ON m.session_id = s.id, to_tsquery('english', $2) AS q \
         WHERE s.user_id = $1 AND substr(s.key, 1, 3) = 'dm:' AND s.id <> $4 \
         AND m.role IN ('user', 'assistant') AND to_tsvector('english', left(m.content, 100000)) @@ q \
         ORDER BY ts_rank(to_tsvector('english', left(m.content, 100000)), q) DESC, m.created_ms DESC, m.seq DESC \
         LIMIT $3";

    /// As [`Self::SQL_TRANSCRIPT_PRIVATE`], `$1` one group session key.
    const SQL_TRANSCRIPT_GROUP: &'static str =
        "SELECT m.session_id, s.key AS session_key, s.conversation, m.seq, m.role, m.content, m.created_ms, \
         s.created_ms AS session_created_ms \
         FROM sessions s JOIN messages m ON m.session_id = s.id, to_tsquery('english', $2) AS q \
         WHERE s.key = $1 AND substr(s.key, 1, 6) = 'group:' AND s.id <> $4 \
         AND m.role IN ('user', 'assistant') AND to_tsvector('english', left(m.content, 100000)) @@ q \
         ORDER BY ts_rank(to_tsvector('english', left(m.content, 100000)), q) DESC, m.created_ms DESC, m.seq DESC \
         LIMIT $3";

    /// `'a' | 'b'`: every term is a quoted tsquery lexeme (terms hold only letters and digits,
    /// so no quote or backslash can appear inside), joined with OR.
    fn fts_query(terms: &[String]) -> String {
        terms.iter().map(|t| format!("'{t}'")).collect::<Vec<_>>().join(" | ")
    }
}

super::expand::impl_store!(PgStore, sqlx::Postgres);
