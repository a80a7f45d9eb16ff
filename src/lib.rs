//! Butler: a personal AI assistant in the chat apps people already use.
//!
//! Module map (the path of one message, in order):
//! - [`config`]: the TOML file, env overrides, validation.
//! - [`store`]: the one `Store` trait over SQLite and Postgres.
//! - [`llm`]: OpenAI and Anthropic streaming providers.
//!
//! Channel adapters live in their own crates (`channels/*`) and meet the core only through
//! `butler_channel`. This crate must never import a channel crate outside `app`.

pub mod config;
pub mod llm;
pub mod store;

pub use butler_channel as channel;
