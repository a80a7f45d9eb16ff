//! The two SQL implementations of [`Store`](crate::store::Store): [`SqliteStore`] (embedded,
//! zero setup) and [`PgStore`] (production, several replicas).
//!
//! Every query is written once. The per-concern modules (`inbox`, `sessions`, `turn`,
//! `outbox`, `memory`, `users`, `web`, `access`, `audit`, `approvals`) each hold a
//! `macro_rules!` that expands the shared method bodies for a concrete store type and its `sqlx` database; `sqlx`
//! accepts `$1` placeholders on both backends. A backend supplies only what differs: its pools, how a write transaction
//! begins, how a list of channels is bound (`channel_sql!`), and its full-text search.
//!
//! Contract for a store type `S` the macros expand for:
//! - `fn reader(&self) -> &Pool<DB>` for reads, `fn writer(&self) -> &Pool<DB>` for writes;
//! - `fn lite(&self) -> Option<&Lite>`: SQLite's writer (`lite.rs`), which runs a turn's
//!   hot-path writes (`lite_ops.rs`) instead of sqlx; `None` on Postgres;
//! - `async fn begin_write(&self) -> Result<Transaction<'static, DB>>`;
//! - `fn channels_arg(&[String]) -> impl Encode` and the `SQL_*` constants of `channel_sql!`;
//! - `SQL_MEMORY_SEARCH` (`$1` user, `$2` query, `$3` limit, `$4` scope) and `fn fts_query(&[String])`;
//! - `SQL_TRANSCRIPT_PRIVATE` / `SQL_TRANSCRIPT_GROUP` (`$1` user / group key, `$2` query, `$3` limit,
//!   `$4` a session left out, `''` for none);
//! - `BACKEND`, `fn migrator()`, `async fn close_pools(&self)`;
//! - `fn settled_feed(&self) -> &SettledFeed`, where commits announce settled events;
//! - `fn embed_switch(&self) -> &EmbedSwitch`, whether writes queue their texts for embedding.
//!
//! This module must never build SQL from user input (only from the fixed fragments here and
//! `QueryBuilder` placeholders), never log or return a database password, and never hold a
//! transaction open across anything but its own statements.

mod access;
mod approvals;
mod audit;
mod cursors;
mod dead_letter;
mod delegations;
mod error;
mod expand;
mod hot;
mod inbox;
mod keys;
mod lite;
mod lite_ops;
mod memory;
mod outbox;
mod outcome;
mod postgres;
mod profile;
mod queue;
mod recovery;
mod replicas;
mod rows;
mod schedules;
mod sessions;
mod sqlite;
mod transcripts;
mod turn;
mod users;
mod vectors;
mod web;
mod web_conversations;

pub(crate) use memory::search_terms;
pub use postgres::PgStore;
pub use sqlite::SqliteStore;
