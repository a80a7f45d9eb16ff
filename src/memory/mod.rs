//! Long-term memory beyond the tools: the archivist that distils durable facts from finished
//! exchanges, export/import of a user's memories, and recall by meaning (`embed`).
//!
//! Memory is always one user's, in one scope (see `store::MemoryScope`): nothing here may read
//! or write another user's memories, and the archivist must never delay a reply.

mod archivist;
pub mod embed;
mod transfer;

pub use archivist::{ArchiveJob, Archivist};
pub use embed::check_config;
pub(crate) use transfer::{export_user, import_user, MemoryFile};
