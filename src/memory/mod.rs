//! Long-term memory beyond the tools: the archivist that distils durable facts from finished
//! exchanges, and export/import of a user's memories.
//!
//! Memory is always one user's, in one scope (see `store::MemoryScope`): nothing here may read
//! or write another user's memories, and the archivist must never delay a reply.

mod archivist;
mod transfer;

pub use archivist::{ArchiveJob, Archivist};
pub(crate) use transfer::{export_user, import_user, MemoryFile};
