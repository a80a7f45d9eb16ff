//! [`SqliteStore`]: the embedded default backend (one file, WAL, FTS5 for memory search).
//!
//! A turn's hot-path writes run on SQLite's writer (`lite.rs`): whole operations, on the caller's
//! thread when the writer is quiet, else on its thread several to a commit. Other writes go
//! through a pool of exactly one connection, so writers queue in-process (fair, no busy-wait
//! sleeps) instead of contending for SQLite's write lock; reads use a separate pool
//! and run concurrently thanks to WAL. Write transactions start with `BEGIN IMMEDIATE` so that
//! another process (a CLI command) can never turn a reader into a failing writer mid-transaction.
//! This file must never put the database path's secrets or any user text into SQL it builds.

use super::error::db_err;
use crate::store::{redact_url, Backend, Result, StoreError};
use sqlx::migrate::Migrator;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Sqlite, Transaction};
use std::str::FromStr;
use std::time::Duration;

static MIGRATOR: Migrator = sqlx::migrate!("./migrations/sqlite");

/// Page cache per sqlx connection (`PRAGMA cache_size`, negative: KiB). SQLite's default is
/// 2 MiB a connection, which a grown database fills on every one of the pool's readers and
/// keeps while idle (about 18 MiB with 8 readers). A reader gains little from a large cache: in
/// WAL mode its cache is dropped whenever another connection has written since its last read,
/// which on a busy Butler is every turn. The writer (`lite.rs`) keeps the default.
const READER_CACHE_KIB: &str = "-256";
const WRITER_CACHE_KIB: &str = "-512";

/// The SQLite store. Cheap to share behind an `Arc`; cloning the pools is not needed.
pub struct SqliteStore {
    writer: SqlitePool,
    reader: SqlitePool,
    /// The writer that runs a turn's hot-path writes (`lite.rs`).
    lite: super::lite::Lite,
    /// The file behind `sqlite::memory:`, removed on close.
    scratch: Option<std::path::PathBuf>,
    /// Events this store settled, announced to listeners in this process.
    settled: crate::store::SettledFeed,
    /// Whether writes queue their texts for embedding.
    embed: crate::store::EmbedSwitch,
}

impl SqliteStore {
    /// Opens (creating if missing, along with its parent directory) the database at `url`
    /// (`sqlite://path`, `sqlite:path` or `sqlite::memory:`), in WAL mode with
    /// `synchronous = NORMAL`, a 5 s busy timeout and foreign keys on, and starts its writer
    /// thread. `max_connections` bounds the read pool; sqlx's writes use one connection. An
    /// in-memory database is a private file in the temporary directory, removed when the store
    /// closes (the writer and the readers must share it). Does not migrate.
    pub async fn connect(url: &str, max_connections: u32) -> Result<Self> {
        let in_memory = url.contains(":memory:") || url.contains("mode=memory");
        let scratch =
            in_memory.then(|| std::env::temp_dir().join(format!("butler-memory-{}.db", uuid::Uuid::new_v4())));
        let options = match &scratch {
            Some(path) => SqliteConnectOptions::new().filename(path),
            None => SqliteConnectOptions::from_str(url)
                .map_err(|e| StoreError::Config(format!("bad SQLite URL `{}`: {e}", redact_url(url))))?,
        }
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(Duration::from_secs(5))
        .foreign_keys(true);
        let path = options.get_filename().to_path_buf();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| {
                StoreError::Config(format!("cannot create the database directory {}: {e}", dir.display()))
            })?;
        }
        let unavailable =
            |e: sqlx::Error| StoreError::Unavailable(format!("cannot open {}: {}", redact_url(url), db_err(e)));
        let writer = SqlitePoolOptions::new()
            .after_connect(|conn, _| Box::pin(stable_plans(conn)))
            .max_connections(1)
            .idle_timeout(Some(Duration::from_secs(600)))
            .max_lifetime(Some(Duration::from_secs(3600)))
            .connect_with(
                options
                    .clone()
                    .pragma("cache_size", WRITER_CACHE_KIB)
                    .pragma("wal_autocheckpoint", super::lite::WAL_CHECKPOINT_PAGES.to_string()),
            )
            .await
            .map_err(unavailable)?;
        let reader = SqlitePoolOptions::new()
            .after_connect(|conn, _| Box::pin(stable_plans(conn)))
            .max_connections(max_connections.max(1))
            .connect_with(options.pragma("cache_size", READER_CACHE_KIB))
            .await
            .map_err(unavailable)?;
        // The writer pool's first connection created the file and put it in WAL mode.
        let lite = super::lite::Lite::open(&path)?;
        Ok(Self {
            writer,
            reader,
            lite,
            scratch,
            settled: crate::store::SettledFeed::default(),
            embed: crate::store::EmbedSwitch::default(),
        })
    }

    const BACKEND: Backend = Backend::Sqlite;

    /// Gives back the clean page caches of every SQLite connection in this process (SQLite's
    /// caches share one pool, `SQLITE_ENABLE_MEMORY_MANAGEMENT`); the bytes freed. A cache
    /// grows with the database while a burst of turns runs and would keep its peak while Butler
    /// idles; what is freed is read again from the file (the system's page cache) when next
    /// needed. Pages a statement holds or a transaction wrote are left alone.
    pub fn release_page_caches() -> usize {
        // SAFETY: SQLite takes its own cache mutex and frees only unpinned clean pages.
        let freed = unsafe { libsqlite3_sys::sqlite3_release_memory(std::os::raw::c_int::MAX) };
        freed.max(0) as usize
    }

    /// The schema versions this build knows (its migrations), oldest first.
    pub fn known_versions() -> Vec<i64> {
        MIGRATOR.iter().map(|m| m.version).collect()
    }

    /// A consistent copy of the whole database at `dest` (which must not exist), taken while
    /// others read and write: `VACUUM INTO` runs in one read transaction.
    pub async fn copy_to(&self, dest: &std::path::Path) -> Result<()> {
        sqlx::query("VACUUM INTO $1").bind(dest.display().to_string()).execute(&self.reader).await.map_err(db_err)?;
        Ok(())
    }

    fn migrator() -> &'static Migrator {
        &MIGRATOR
    }

    fn embed_switch(&self) -> &crate::store::EmbedSwitch {
        &self.embed
    }

    fn settled_feed(&self) -> &crate::store::SettledFeed {
        &self.settled
    }

    fn reader(&self) -> &SqlitePool {
        &self.reader
    }

    fn writer(&self) -> &SqlitePool {
        &self.writer
    }

    fn lite(&self) -> Option<&super::lite::Lite> {
        Some(&self.lite)
    }

    async fn begin_write(&self) -> Result<Transaction<'static, Sqlite>> {
        self.writer.begin_with("BEGIN IMMEDIATE").await.map_err(db_err)
    }

    async fn close_pools(&self) {
        self.lite.close().await;
        self.reader.close().await;
        self.writer.close().await;
    }

    /// The channel list is bound as one JSON array and read with `json_each`.
    fn channels_arg(channels: &[String]) -> String {
        serde_json::to_string(channels).unwrap_or_else(|_| "[]".to_string())
    }

    super::expand::channel_sql!(
        "channel IN (SELECT value FROM json_each($1))",
        "",
        "claimed_by IN (SELECT value FROM json_each($1))"
    );

    /// FTS5 over `memories_fts` (external content, kept in sync by triggers), best `bm25` of the
    /// text first, then newest. The MATCH asks for the owner token (built exactly as the
    /// generated column `memories.owner` of migration 0007) AND the words, so FTS5 walks only
    /// this user's rows in this scope instead of every user's matches. CROSS JOIN keeps the
    /// FTS table as the outer loop: SQLite's planner otherwise may walk the (user, scope) index
    /// and run the MATCH once per row, which is a hundred times slower.
    const SQL_MEMORY_SEARCH: &'static str = "SELECT m.id, m.user_id, m.scope, m.text, m.source, m.created_ms \
         FROM memories_fts CROSS JOIN memories m ON m.id = memories_fts.rowid \
         WHERE memories_fts MATCH ('owner : \"o' || hex($1) || 'g' || hex($4) || 'g' || \
             'pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp\" AND text : (' || $2 || ')') \
         AND m.user_id = $1 AND m.scope = $4 \
         ORDER BY bm25(memories_fts, 1.0, 0.0), m.created_ms DESC, m.id DESC LIMIT $3";

    /// FTS5 over `messages_fts` (user and assistant text, migration 0022) joined to the message
    /// by (session, seq) and to its session, `$1` user: the person's direct sessions only,
    /// except `$4`; best `bm25` first, then newest. CROSS JOIN keeps the FTS table outside.
    const SQL_TRANSCRIPT_PRIVATE: &'static str =
        "SELECT m.session_id, s.key AS session_key, s.conversation, m.seq, m.role, m.content, m.created_ms, \
         s.created_ms AS session_created_ms \
         FROM messages_fts CROSS JOIN messages m \
           ON m.session_id = messages_fts.session_id AND m.seq = messages_fts.seq \
         CROSS JOIN sessions s ON s.id = m.session_id \
         WHERE messages_fts MATCH $2 AND s.user_id = $1 AND substr(s.key, 1, 3) = 'dm:' AND s.id <> $4 \
         AND m.role IN ('user', 'assistant') \
         ORDER BY bm25(messages_fts), m.created_ms DESC, m.seq DESC LIMIT $3";

    /// As [`Self::SQL_TRANSCRIPT_PRIVATE`], `$1` one group session key.
    const SQL_TRANSCRIPT_GROUP: &'static str =
        "SELECT m.session_id, s.key AS session_key, s.conversation, m.seq, m.role, m.content, m.created_ms, \
         s.created_ms AS session_created_ms \
         FROM messages_fts CROSS JOIN messages m \
           ON m.session_id = messages_fts.session_id AND m.seq = messages_fts.seq \
         CROSS JOIN sessions s ON s.id = m.session_id \
         WHERE messages_fts MATCH $2 AND s.key = $1 AND substr(s.key, 1, 6) = 'group:' AND s.id <> $4 \
         AND m.role IN ('user', 'assistant') \
         ORDER BY bm25(messages_fts), m.created_ms DESC, m.seq DESC LIMIT $3";

    /// `"a" OR "b"`: every term is a quoted FTS5 string (terms hold only letters and digits,
    /// so no quote can appear inside), joined with OR.
    fn fts_query(terms: &[String]) -> String {
        terms.iter().map(|t| format!("\"{t}\"")).collect::<Vec<_>>().join(" OR ")
    }
}

impl Drop for SqliteStore {
    /// Removes the file behind `sqlite::memory:` (open handles keep reading it until they close).
    fn drop(&mut self) {
        if let Some(path) = &self.scratch {
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
            }
        }
    }
}

/// Turns on SQLite's query planner stability guarantee on a new connection. Without it, a
/// bound value compared against a partial index's `WHERE` (`status = $2` against
/// `WHERE status = 'pending'`) marks the statement as depending on its bindings, and SQLite
/// then compiles it again on every execution: that was 15% of a turn's CPU. With it, a statement is
/// compiled once per connection and its plan never depends on the values bound; the queries
/// that should use a partial index name the index's value literally.
async fn stable_plans(conn: &mut sqlx::SqliteConnection) -> std::result::Result<(), sqlx::Error> {
    let mut handle = conn.lock_handle().await?;
    let db = handle.as_raw_handle().as_ptr();
    // SAFETY: `db` is this connection's open handle, locked for the call (sqlx's worker thread
    // makes no call on it meanwhile); the option takes an int and an optional int pointer.
    let rc = unsafe {
        libsqlite3_sys::sqlite3_db_config(
            db,
            libsqlite3_sys::SQLITE_DBCONFIG_ENABLE_QPSG,
            1 as std::os::raw::c_int,
            std::ptr::null_mut::<std::os::raw::c_int>(),
        )
    };
    if rc == libsqlite3_sys::SQLITE_OK {
        Ok(())
    } else {
        Err(sqlx::Error::Configuration(format!("sqlite3_db_config(ENABLE_QPSG) returned {rc}").into()))
    }
}

super::expand::impl_store!(SqliteStore, sqlx::Sqlite);

#[cfg(test)]
#[path = "plans.rs"]
mod plans;
