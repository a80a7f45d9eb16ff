//! Long-term memory beyond the tools: the archivist that distils durable facts from finished
//! exchanges, export/import of a user's memories, recall by meaning (`embed`), and the search
//! over past conversations (`transcripts.rs`, behind `conversation_search`).
//!
//! Memory is always one user's, in one scope (see `store::MemoryScope`): nothing here may read
//! or write another user's memories or conversations, and the archivist must never delay a reply.

mod archivist;
pub mod embed;
mod transcripts;
mod transfer;

pub use archivist::{ArchiveJob, Archivist};
pub use embed::check_config;
pub use transcripts::{excerpt, search_transcripts, Transcripts, EXCERPT_CHARS};
pub(crate) use transfer::{export_user, import_user, MemoryFile};
