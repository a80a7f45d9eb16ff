//! Test databases: a fresh, uniquely named Postgres database per test on the server named by
//! `BUTLER_TEST_PG_URL` (dropped when its guard goes away), and a SQLite file in a temp dir.
//!
//! It must never touch a database it did not create: it only creates and drops databases named
//! `butler_test_<pid>_<random>`.

use sqlx::{AssertSqlSafe, Connection, Executor, PgConnection};
use tempfile::TempDir;

/// The server used when `BUTLER_TEST_PG_URL` is not set.
pub const DEFAULT_PG_URL: &str = "postgres://postgres:postgres@127.0.0.1:5432/postgres";

/// The maintenance database URL tests create their databases from.
pub fn pg_admin_url() -> String {
    std::env::var("BUTLER_TEST_PG_URL").unwrap_or_else(|_| DEFAULT_PG_URL.to_string())
}

/// `url` with its database name replaced by `db` (query parameters kept).
pub fn with_database(url: &str, db: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let host_start = base.find("://").map_or(0, |i| i + 3);
    let root = match base[host_start..].find('/') {
        Some(i) => &base[..host_start + i],
        None => base,
    };
    match query {
        Some(q) => format!("{root}/{db}?{q}"),
        None => format!("{root}/{db}"),
    }
}

/// A Postgres database that exists until this guard is dropped.
pub struct PgTestDb {
    pub url: String,
    pub name: String,
    admin_url: String,
}

impl PgTestDb {
    /// Creates `butler_test_<pid>_<random>`; panics with a hint if the server is unreachable.
    pub async fn create() -> Self {
        let admin_url = pg_admin_url();
        let name = format!("butler_test_{}_{:08x}", std::process::id(), rand::random::<u32>());
        let mut conn = PgConnection::connect(&admin_url)
            .await
            .unwrap_or_else(|e| panic!("Postgres for tests (set BUTLER_TEST_PG_URL): {e}"));
        conn.execute(AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
            .await
            .unwrap_or_else(|e| panic!("CREATE DATABASE {name}: {e}"));
        let _ = conn.close().await;
        Self { url: with_database(&admin_url, &name), name, admin_url }
    }
}

impl Drop for PgTestDb {
    /// Drops the database `WITH (FORCE)` (closing any connection still open) on a helper
    /// thread, since `Drop` may run inside an async runtime.
    fn drop(&mut self) {
        let admin_url = self.admin_url.clone();
        let sql = format!("DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)", self.name);
        let dropped = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            rt.block_on(async move {
                let mut conn = PgConnection::connect(&admin_url).await?;
                conn.execute(AssertSqlSafe(sql)).await?;
                conn.close().await
            })
            .map_err(std::io::Error::other)
        })
        .join();
        if !matches!(dropped, Ok(Ok(()))) {
            eprintln!("warning: could not drop test database {}", self.name);
        }
    }
}

/// A SQLite database file in a fresh temp dir (inside a subdirectory that does not exist yet,
/// so that opening it also exercises directory creation). Removed with the guard.
pub struct SqliteTestDb {
    pub url: String,
    pub dir: TempDir,
}

impl SqliteTestDb {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = format!("sqlite://{}/data/butler.db", dir.path().display());
        Self { url, dir }
    }
}

impl Default for SqliteTestDb {
    fn default() -> Self {
        Self::new()
    }
}
