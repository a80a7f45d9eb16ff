//! Storage: one [`Store`] trait, two real implementations (SQLite, the zero-setup default, and
//! Postgres for production), migrations per backend under `migrations/`.
//!
//! `Store` is the union of small traits, one per concern, so that each stays readable and a
//! caller can ask for only what it needs. Every row type here is plain data. The store must
//! never call out to the network other than its database, and never log secrets (the URL's
//! password included).

pub mod backup;
mod connect;
mod delegation_records;
mod detail_records;
mod error;
mod outbox_records;
mod outcome_records;
mod records;
mod schedule_records;
mod sql;
mod traits;
mod transcript_records;
mod usage_records;
mod vector_records;

pub use connect::connect;
pub use delegation_records::*;
pub use detail_records::*;
pub use error::{Backend, Result, StoreError};
pub use outbox_records::*;
pub use outcome_records::*;
pub use records::*;
pub use schedule_records::*;
pub use traits::*;
pub use transcript_records::*;
pub use usage_records::*;
pub use vector_records::*;

/// The words a full-text search looks for (also where an excerpt of a hit is centred).
pub(crate) use sql::search_terms;
pub use sql::{PgStore, SqliteStore};

/// `postgres://user:secret@host/db` -> `postgres://user:***@host/db` (its home is [`crate::config`]).
pub use crate::config::redact_url;

/// The keys of an event's reply and failure notice (their home is [`crate::ids`]).
pub use crate::ids::{failed_key, reply_key, reply_of};

/// Milliseconds since the Unix epoch (its home is [`crate::clock`]).
pub use crate::clock::now_ms;
