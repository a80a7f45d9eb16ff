//! Recall by meaning: `[memory.embeddings]` (its rules), the client of an OpenAI-compatible
//! embeddings endpoint, the bytes vectors are kept as, the background worker that embeds every
//! memory and transcript message through a queue that survives restarts, and
//! [`HybridMemory`], the memory store whose search merges words and meaning.
//!
//! Off unless configured. Nothing here may send a text to the service that the person did not
//! write to Butler or Butler did not answer, or compare one owner's query with another owner's
//! vectors.

mod client;
mod config;
mod error;
mod hybrid;
mod vector;
mod worker;

pub use client::{Embedder, MAX_CHARS};
pub use config::check_config;
pub use error::EmbedError;
pub use hybrid::{fuse, query_vector, HybridMemory, RRF_K};
pub use vector::{encode, nearest, similarity};
pub use worker::{Batch, EmbedWorker};
