//! Recall by meaning, when `[memory.embeddings]` is on: the store starts queueing what it
//! writes, the background worker embeds the queue, and the memory store the agent, its tools
//! and the commands search is the hybrid one, as is `conversation_search`'s transcript search.
//! Off, the store stops queueing and everyone searches by words.
//!
//! Composition only: this file must never embed or search anything itself.

use super::error::AppError;
use super::tasks::Tasks;
use crate::config::Config;
use crate::memory::embed::{EmbedWorker, Embedder, HybridMemory};
use crate::memory::Transcripts;
use crate::store::{MemoryStore, Store};
use std::sync::Arc;

/// What searches go through: memories, and past conversations for `conversation_search`.
pub(super) struct Recall {
    pub(super) memory: Arc<dyn MemoryStore>,
    pub(super) transcripts: Arc<Transcripts>,
}

/// The searches, after telling `store` whether to queue texts for embedding and starting the
/// worker (a background task) when embeddings are on.
pub(super) async fn recall(cfg: &Config, store: &Arc<dyn Store>, background: &Tasks) -> Result<Recall, AppError> {
    let words = Transcripts::new(store.clone());
    let Some(e) = cfg.memory.embeddings.as_ref().filter(|_| cfg.memory.enabled) else {
        store.embed_track(None).await?;
        return Ok(Recall { memory: store.clone(), transcripts: Arc::new(words) });
    };
    let embedder = Arc::new(Embedder::new(e));
    store.embed_track(Some(embedder.model())).await?;
    let worker = EmbedWorker::new(store.clone(), embedder.clone());
    background.tracker.spawn(worker.run(background.cancel.clone()));
    tracing::info!(model = %embedder.model(), "memory: recall by words and meaning");
    Ok(Recall {
        memory: Arc::new(HybridMemory::new(store.clone(), store.clone(), embedder.clone())),
        transcripts: Arc::new(words.with_meaning(store.clone(), embedder)),
    })
}
