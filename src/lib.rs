//! Butler: a personal AI assistant in the chat apps people already use.
//!
//! Module map, in the order one message travels:
//! - [`web`] (and the channel crates): platform traffic -> `InboundEvent`.
//! - [`ingress`]: the inbox (durable before acknowledged) and the dispatcher.
//! - [`triage`]: who is speaking, is it for us, commands, button clicks.
//! - [`session`]: one actor per session, bounded mailbox, one turn at a time.
//! - [`agent`]: the turn loop; [`llm`] the model providers; [`tools`] what it can do;
//!   [`permissions`] whether a call may run, must ask, or is denied; [`hooks`] around calls.
//!   [`mcp`] tools from MCP servers; [`delegate`] plans and tracks child agents; [`media`] the
//!   files people send (downloads under a cap, images, transcripts, documents).
//! - [`outbox`]: persisted replies, delivery, streaming by editing in place.
//! - [`store`]: small store traits (their union `Store`) over SQLite and Postgres; each
//!   component takes only the traits it calls.
//! - [`channels`]: the channel registry (one entry per platform, its glue file).
//! - [`schedule`] (cron briefings), [`memory`] (the archivist, export/import), [`skills`]
//!   (SKILL.md), [`cluster`] (several replicas over Redis).
//! - [`config`], [`http`], [`metrics`], [`telemetry`] (logs and traces), [`app`] (the composition
//!   root), [`cli`].
//! - [`clock`] (`now_ms`) and [`ids`] (Butler's own channel and source names, the keys of an
//!   event's session, reply and failure notice): the bottom.
//!
//! Channel adapters live in their own crates (`channels/*`) and meet the core only through
//! `butler_channel`; only [`channels`] (the registry and one glue file per channel) may name a
//! channel crate.

pub mod agent;
pub mod app;
pub mod channels;
pub mod cli;
pub mod clock;
pub mod cluster;
pub mod config;
pub mod delegate;
pub mod hooks;
pub mod http;
pub mod ids;
pub mod ingress;
pub mod links;
pub mod llm;
pub mod mcp;
pub mod media;
pub mod memory;
pub mod metrics;
pub mod outbox;
pub mod permissions;
pub mod schedule;
pub mod secrets;
pub mod session;
pub mod skills;
pub mod status;
pub mod store;
pub mod telemetry;
pub mod tools;
pub mod triage;
pub mod usage;
pub mod web;

pub use butler_channel as channel;
