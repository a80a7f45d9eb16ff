//! Backups of the SQLite database and putting one back: [`backup`] writes a consistent copy
//! while Butler runs (`VACUUM INTO`) and checks it; [`restore`] checks a copy (intact, made by
//! this or an older Butler), keeps the current database beside it, puts the copy in its place
//! and migrates it forward. Postgres is backed up with its own tools (`pg_dump`): both refuse a
//! Postgres URL with the command to use.
//!
//! It must never overwrite a file it did not make, nor leave the database half-replaced.

use super::sql::SqliteStore;
use super::{redact_url, Result, Store, StoreError};
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{ConnectOptions, Connection};
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// What a backup wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupInfo {
    pub bytes: u64,
    /// The newest migration in the copy.
    pub schema_version: i64,
}

/// What a restore did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestoreInfo {
    /// The schema of the copy, and after migrating it.
    pub from_version: i64,
    pub to_version: i64,
    /// Where the database that was replaced is kept (`None` when there was none).
    pub kept: Option<PathBuf>,
}

/// How Postgres is backed up and restored, for the errors.
pub const PG_HOWTO: &str =
    "the database is Postgres: back it up with `pg_dump --format=custom --file=PATH \"$DATABASE_URL\"` \
     and restore it with `pg_restore --clean --if-exists --dbname=\"$DATABASE_URL\" PATH`, then run `butler migrate`";

/// The file of a SQLite URL, or why there is none.
fn sqlite_file(url: &str) -> Result<PathBuf> {
    if url.starts_with("postgres:") || url.starts_with("postgresql:") {
        return Err(StoreError::Config(PG_HOWTO.into()));
    }
    let options = SqliteConnectOptions::from_str(url)
        .map_err(|e| StoreError::Config(format!("bad SQLite URL `{}`: {e}", redact_url(url))))?;
    let file = options.get_filename().to_path_buf();
    if url.contains(":memory:") || file.as_os_str().is_empty() {
        return Err(StoreError::Config("an in-memory database has nothing to back up".into()));
    }
    Ok(file)
}

/// Opens `file` read-only and returns its newest migration, after checking it is intact.
async fn inspect(file: &Path) -> Result<i64> {
    let bad = |why: String| StoreError::Corrupt(format!("{} is not a usable Butler database: {why}", file.display()));
    let mut conn =
        SqliteConnectOptions::new().filename(file).read_only(true).connect().await.map_err(|e| bad(e.to_string()))?;
    let check: (String,) =
        sqlx::query_as("PRAGMA integrity_check").fetch_one(&mut conn).await.map_err(|e| bad(e.to_string()))?;
    if check.0 != "ok" {
        return Err(bad(format!("the integrity check says {}", check.0)));
    }
    let versions: Vec<(i64,)> = sqlx::query_as("SELECT version FROM _sqlx_migrations WHERE success ORDER BY version")
        .fetch_all(&mut conn)
        .await
        .map_err(|_| bad("it has no migration table".into()))?;
    let _ = conn.close().await;
    let known = SqliteStore::known_versions();
    if let Some((newer,)) = versions.iter().find(|(v,)| !known.contains(v)) {
        return Err(bad(format!("it was made by a newer Butler (schema version {newer}): upgrade Butler first")));
    }
    versions.last().map(|(v,)| *v).ok_or_else(|| bad("it has no migrations applied".into()))
}

/// Writes a consistent copy of the database at `url` to `dest` (a new file) and checks it.
pub async fn backup(url: &str, dest: &Path) -> Result<BackupInfo> {
    let file = sqlite_file(url)?;
    if !file.exists() {
        return Err(StoreError::Config(format!("there is no database at {} yet", file.display())));
    }
    if dest.exists() {
        return Err(StoreError::Config(format!("{} already exists: choose a new file", dest.display())));
    }
    let store = SqliteStore::connect(url, 1).await?;
    let copied = store.copy_to(dest).await;
    store.close().await;
    copied?;
    let schema_version = match inspect(dest).await {
        Ok(v) => v,
        Err(e) => {
            let _ = std::fs::remove_file(dest);
            return Err(e);
        }
    };
    let bytes = std::fs::metadata(dest).map(|m| m.len()).unwrap_or(0);
    Ok(BackupInfo { bytes, schema_version })
}

/// Puts the backup `src` in place of the database at `url` (Butler must not be running on it)
/// and migrates it to this build's schema. The database it replaces is kept beside it as
/// `<file>.before-restore-<ms>`.
pub async fn restore(url: &str, src: &Path) -> Result<RestoreInfo> {
    let file = sqlite_file(url)?;
    if !src.is_file() {
        return Err(StoreError::Config(format!("{} is not a file", src.display())));
    }
    let from_version = inspect(src).await?;
    let dir = file.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| StoreError::Config(format!("cannot create {}: {e}", dir.display())))?;
    let disk = |e: std::io::Error| StoreError::Unavailable(format!("restoring {}: {e}", file.display()));
    // The copy is complete on disk before anything is moved.
    let incoming = with_suffix(&file, ".restoring");
    std::fs::copy(src, &incoming).map_err(disk)?;
    std::fs::File::open(&incoming).and_then(|f| f.sync_all()).map_err(disk)?;
    let kept = if file.exists() {
        let kept = with_suffix(&file, &format!(".before-restore-{}", crate::clock::now_ms()));
        for journal in ["-wal", "-shm"] {
            let from = with_suffix(&file, journal);
            if from.exists() {
                std::fs::rename(&from, with_suffix(&kept, journal)).map_err(disk)?;
            }
        }
        std::fs::rename(&file, &kept).map_err(disk)?;
        Some(kept)
    } else {
        None
    };
    std::fs::rename(&incoming, &file).map_err(disk)?;
    let store = SqliteStore::connect(url, 1).await?;
    let migrated = store.migrate().await;
    store.close().await;
    migrated?;
    let to_version = inspect(&file).await?;
    Ok(RestoreInfo { from_version, to_version, kept })
}

fn with_suffix(file: &Path, suffix: &str) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}
