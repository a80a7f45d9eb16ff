//! The one place where `sqlx` and `rusqlite` (SQLite's writer) errors become [`StoreError`]s, sorted by what the caller does
//! next (retry later, treat as a conflict, fix the config, or report a bug).
//!
//! It must never put a database URL or password into a message: connection errors are described
//! with [`crate::store::redact_url`] by the callers that know the URL.

use crate::store::StoreError;
use sqlx::error::{DatabaseError, ErrorKind};

/// Maps any `sqlx` error into the store's error type.
pub(crate) fn db_err(e: sqlx::Error) -> StoreError {
    match e {
        sqlx::Error::Database(d) => database_err(d.as_ref()),
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed
        | sqlx::Error::BeginFailed => StoreError::Unavailable(e.to_string()),
        sqlx::Error::Configuration(_) | sqlx::Error::ConfigFile(_) => StoreError::Config(e.to_string()),
        sqlx::Error::Migrate(m) => StoreError::Migration(m.to_string()),
        other => StoreError::Corrupt(other.to_string()),
    }
}

/// Errors the database itself reported, by SQLSTATE (Postgres) or result code (SQLite).
fn database_err(d: &dyn DatabaseError) -> StoreError {
    let msg = d.message().to_string();
    match d.kind() {
        ErrorKind::UniqueViolation
        | ErrorKind::ForeignKeyViolation
        | ErrorKind::NotNullViolation
        | ErrorKind::CheckViolation
        | ErrorKind::ExclusionViolation => return StoreError::Conflict(msg),
        _ => {}
    }
    let code = d.code().map(|c| c.into_owned()).unwrap_or_default();
    if d.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some() {
        return sqlite_err(&code, msg);
    }
    match code.as_str() {
        // Postgres: serialization failure, deadlock.
        "40001" | "40P01" => StoreError::Conflict(msg),
        // Postgres: undefined table / column.
        "42P01" | "42703" => schema_missing(&msg),
        // Postgres: bad password or role, no such database.
        "28000" | "28P01" | "3D000" => StoreError::Config(msg),
        // Postgres classes: connection exception, insufficient resources, operator
        // intervention (shutdown), system error.
        c if c.starts_with("08") || c.starts_with("53") || c.starts_with("57") || c.starts_with("58") => {
            StoreError::Unavailable(msg)
        }
        _ => StoreError::Corrupt(msg),
    }
}

/// Maps an error of SQLite's writer (`sql/lite.rs`) the way sqlx's SQLite errors are.
pub(crate) fn lite_err(e: rusqlite::Error) -> StoreError {
    match e {
        rusqlite::Error::SqliteFailure(f, msg) => {
            let msg = msg.unwrap_or_else(|| f.to_string());
            if f.code == rusqlite::ErrorCode::ConstraintViolation {
                return StoreError::Conflict(msg);
            }
            sqlite_err(&f.extended_code.to_string(), msg)
        }
        other => StoreError::Corrupt(other.to_string()),
    }
}

/// SQLite result codes; extended codes keep the primary code in the low byte.
fn sqlite_err(code: &str, msg: String) -> StoreError {
    let primary = code.parse::<i32>().map(|c| c & 0xff).unwrap_or(0);
    match primary {
        // BUSY, LOCKED, NOMEM, READONLY, IOERR, FULL, CANTOPEN, PROTOCOL.
        5 | 6 | 7 | 8 | 10 | 13 | 14 | 15 => StoreError::Unavailable(msg),
        _ if msg.starts_with("no such table") || msg.starts_with("no such column") => schema_missing(&msg),
        _ => StoreError::Corrupt(msg),
    }
}

fn schema_missing(msg: &str) -> StoreError {
    StoreError::Config(format!("{msg} (the schema is missing or old: run `butler migrate`)"))
}

/// A JSON column that does not decode.
pub(crate) fn corrupt(what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("{what}: {e}"))
}
