//! What the store reports when it fails ([`StoreError`], by what the caller does next), its
//! `Result`, and which backend a store is ([`Backend`]).
//!
//! Plain types: nothing here talks to a database or names a secret.

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Errors the store reports, by what the caller does next.
#[derive(Clone, Debug, thiserror::Error)]
pub enum StoreError {
    /// The database cannot be reached or is overloaded: retry later, do not acknowledge.
    #[error("database unavailable: {0}")]
    Unavailable(String),
    /// A compare-and-swap lost, or a uniqueness rule refused the write.
    #[error("conflict: {0}")]
    Conflict(String),
    /// The URL or options are wrong; the operator must fix the config.
    #[error("bad database configuration: {0}")]
    Config(String),
    /// Applying migrations failed.
    #[error("migration failed: {0}")]
    Migration(String),
    /// Stored data could not be decoded (a bug, or a newer schema).
    #[error("corrupt stored data: {0}")]
    Corrupt(String),
    /// Another replica has taken this session over: drop the turn, commit nothing, leave the
    /// event to the new owner.
    #[error("session {key} was taken over by another replica; this commit is refused")]
    Fenced { key: String },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}
