//! The background embedder: takes due texts from the queue in bounded batches, asks the model
//! for their vectors and stores them under the model's name. A failed batch goes back with
//! backoff (the service's `Retry-After` when it gave one); a batch the service refused for its
//! texts is retried one text at a time, so one bad text never holds back the others.
//!
//! It must never hold a claim past its lease without storing or giving it back, never drop a
//! queued text because a try failed (it waits, at most an hour between tries), and never delay
//! a reply: it runs beside the turns, not in them.

use super::client::Embedder;
use super::error::EmbedError;
use super::vector::encode;
use crate::store::{EmbedItem, EmbedQueueStore, EmbedRef, StoreError};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long the worker sleeps when the queue has nothing due.
const IDLE: Duration = Duration::from_millis(500);
/// The longest wait between two tries of one text.
const MAX_BACKOFF_MS: i64 = 3_600_000;

/// What one batch did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Batch {
    /// Texts taken from the queue.
    pub taken: usize,
    /// Vectors stored.
    pub stored: u64,
    /// Texts given back to try later.
    pub failed: usize,
    /// Why the last of them failed.
    pub error: Option<String>,
}

/// Embeds what the queue holds, one bounded batch at a time.
pub struct EmbedWorker {
    queue: Arc<dyn EmbedQueueStore>,
    embedder: Arc<Embedder>,
    /// Marks this worker's batches (a random token per worker).
    claim: String,
}

impl EmbedWorker {
    pub fn new(queue: Arc<dyn EmbedQueueStore>, embedder: Arc<Embedder>) -> Self {
        Self { queue, embedder, claim: uuid::Uuid::new_v4().to_string() }
    }

    /// Queues what was written before embeddings were on with this model (once per model),
    /// then embeds until `cancel`.
    pub async fn run(self, cancel: CancellationToken) {
        let model = self.embedder.model().to_string();
        match self.queue.embed_backfill(&model, false).await {
            Ok(0) => {}
            Ok(queued) => tracing::info!(model = %model, queued, "memory: texts queued for embedding"),
            Err(e) => tracing::warn!(error = %e, "memory: could not queue texts for embedding"),
        }
        loop {
            let pause = match self.step().await {
                Ok(b) if b.taken > 0 && b.failed == 0 => Duration::ZERO,
                Ok(_) => IDLE,
                Err(e) => {
                    tracing::warn!(error = %e, "memory: the embedding queue is unavailable");
                    IDLE * 4
                }
            };
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep(pause) => {}
            }
        }
    }

    /// One batch: claims up to `batch_size` due texts, embeds them and stores the vectors.
    pub async fn step(&self) -> Result<Batch, StoreError> {
        let cfg = self.embedder.config();
        let lease_ms = (cfg.timeout_secs.max(1) as i64 + 30) * 1000;
        let items = self.queue.embed_claim(&self.claim, cfg.batch_size.max(1), lease_ms).await?;
        let mut batch = Batch { taken: items.len(), ..Batch::default() };
        if items.is_empty() {
            return Ok(batch);
        }
        let texts: Vec<String> = items.iter().map(|i| i.text.clone()).collect();
        match self.embedder.embed(&texts, None).await {
            Ok(vectors) => batch.stored = self.store(&items, vectors).await?,
            Err(e) if e.is_about_the_texts() && items.len() > 1 => {
                for item in &items {
                    match self.embedder.embed(std::slice::from_ref(&item.text), None).await {
                        Ok(v) => batch.stored += self.store(std::slice::from_ref(item), v).await?,
                        Err(e) => {
                            batch.failed += 1;
                            batch.error = Some(e.to_string());
                            self.give_back(std::slice::from_ref(item), &e).await?;
                        }
                    }
                }
            }
            Err(e) => {
                batch.failed = items.len();
                batch.error = Some(e.to_string());
                self.give_back(&items, &e).await?;
            }
        }
        Ok(batch)
    }

    async fn store(&self, items: &[EmbedItem], vectors: Vec<Vec<f32>>) -> Result<u64, StoreError> {
        let done: Vec<(EmbedRef, Vec<u8>)> =
            items.iter().zip(vectors).map(|(item, v)| (item.item.clone(), encode(&v))).collect();
        self.queue.embed_done(&self.claim, self.embedder.model(), &done).await
    }

    /// Puts `items` back in the queue, due after a backoff that grows with their tries.
    async fn give_back(&self, items: &[EmbedItem], e: &EmbedError) -> Result<(), StoreError> {
        let tries = items.iter().map(|i| i.attempts).max().unwrap_or(1);
        let wait_ms = match e {
            EmbedError::RateLimited { retry_after: Some(d), .. } => (d.as_millis() as i64).min(MAX_BACKOFF_MS),
            _ => backoff_ms(tries),
        };
        tracing::warn!(error = %e, texts = items.len(), tries, wait_ms, "memory: embedding failed; will try again");
        let refs: Vec<EmbedRef> = items.iter().map(|i| i.item.clone()).collect();
        self.queue.embed_retry(&self.claim, &refs, crate::store::now_ms() + wait_ms, &e.to_string()).await
    }
}

/// 1 s after the first failed try, doubling, at most an hour.
fn backoff_ms(tries: i64) -> i64 {
    let exp = u32::try_from(tries.clamp(1, 32) - 1).unwrap_or(0);
    1000i64.saturating_mul(1i64 << exp.min(22)).min(MAX_BACKOFF_MS)
}

#[cfg(test)]
mod tests {
    #[test]
    fn backoff_doubles_up_to_an_hour() {
        let cases = [(0, 1_000), (1, 1_000), (2, 2_000), (3, 4_000), (12, 2_048_000), (13, 3_600_000), (99, 3_600_000)];
        for (tries, want) in cases {
            assert_eq!(super::backoff_ms(tries), want, "{tries}");
        }
    }
}
