//! Recall by words and by meaning: [`HybridMemory`] is the memory store every caller gets when
//! `[memory.embeddings]` is on. Its search runs the full-text search and an exact vector search
//! over the owner's memories (only vectors of the configured model: rows not yet re-embedded
//! after a model change are found by their words alone), and merges the two rankings by
//! reciprocal rank fusion: each memory scores `1 / (60 + rank)` in each list it appears in,
//! and the highest sums win. Everything else is the store's own.
//!
//! This file must never widen a search beyond one owner and scope, and never fail a recall
//! because the embedding service failed: the words alone answer then.

use super::client::Embedder;
use super::vector::{encode, nearest};
use crate::store::{MemoryRow, MemoryScope, MemoryStore, Result, VectorStore};
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// The `k` of reciprocal rank fusion: how much a first place outweighs a tenth.
pub const RRF_K: f32 = 60.0;
/// Longest a recall waits for the query's vector.
const QUERY_WAIT: Duration = Duration::from_secs(5);

/// A memory store whose search merges words and meaning.
pub struct HybridMemory {
    words: Arc<dyn MemoryStore>,
    vectors: Arc<dyn VectorStore>,
    embedder: Arc<Embedder>,
}

impl HybridMemory {
    pub fn new(words: Arc<dyn MemoryStore>, vectors: Arc<dyn VectorStore>, embedder: Arc<Embedder>) -> Self {
        Self { words, vectors, embedder }
    }

    /// The owner's memories nearest `query` in meaning, best first, at most `k`; empty when the
    /// service cannot embed the query now.
    async fn by_meaning(&self, owner: &MemoryScope, query: &str, k: usize) -> Result<Vec<i64>> {
        let Some(q) = query_vector(&self.embedder, query).await else {
            return Ok(Vec::new());
        };
        let rows = self.vectors.memory_vectors(owner, self.embedder.model()).await?;
        let min = self.embedder.config().min_similarity;
        Ok(nearest(&q, &rows, min, k).into_iter().map(|(id, _)| id).collect())
    }
}

/// The bytes of `query`'s vector, or `None` when the service cannot embed it now (the words
/// alone answer then).
pub async fn query_vector(embedder: &Embedder, query: &str) -> Option<Vec<u8>> {
    let wait = QUERY_WAIT.min(Duration::from_secs(embedder.config().timeout_secs.max(1)));
    match embedder.embed(&[query.to_string()], Some(wait)).await {
        Ok(mut v) => Some(encode(&v.pop().unwrap_or_default())),
        Err(e) => {
            tracing::warn!(error = %e, "memory: search by meaning skipped; words only");
            None
        }
    }
}

/// The keys of `lists` (each best first) by reciprocal rank fusion, best first, at most
/// `limit`. Ties keep the order of first appearance (the word list comes first).
pub fn fuse<K: Clone + Eq + std::hash::Hash>(lists: &[&[K]], limit: usize) -> Vec<K> {
    let mut score: HashMap<K, (f32, usize)> = HashMap::new();
    let mut order = 0;
    for list in lists {
        for (rank, id) in list.iter().enumerate() {
            let entry = score.entry(id.clone()).or_insert_with(|| {
                order += 1;
                (0.0, order)
            });
            entry.0 += 1.0 / (RRF_K + rank as f32 + 1.0);
        }
    }
    let mut ids: Vec<(K, f32, usize)> = score.into_iter().map(|(id, (s, o))| (id, s, o)).collect();
    ids.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.2.cmp(&b.2)));
    ids.into_iter().take(limit).map(|(id, _, _)| id).collect()
}

#[async_trait]
impl MemoryStore for HybridMemory {
    async fn memory_add(&self, owner: &MemoryScope, text: &str, source: Option<&str>) -> Result<MemoryRow> {
        self.words.memory_add(owner, text, source).await
    }

    /// Both searches, merged; each contributes up to four times `limit` candidates.
    async fn memory_search(&self, owner: &MemoryScope, query: &str, limit: usize) -> Result<Vec<MemoryRow>> {
        if limit == 0 || query.trim().is_empty() {
            return Ok(Vec::new());
        }
        let pool = (limit * 4).max(20);
        let (by_words, by_meaning) =
            tokio::join!(self.words.memory_search(owner, query, pool), self.by_meaning(owner, query, pool));
        let by_words = by_words?;
        let by_meaning = by_meaning?;
        let word_ids: Vec<i64> = by_words.iter().map(|m| m.id).collect();
        let chosen = fuse(&[&word_ids, &by_meaning], limit);
        let mut rows: HashMap<i64, MemoryRow> = by_words.into_iter().map(|m| (m.id, m)).collect();
        let missing: Vec<i64> = chosen.iter().copied().filter(|id| !rows.contains_key(id)).collect();
        rows.extend(self.vectors.memories_by_ids(owner, &missing).await?.into_iter().map(|m| (m.id, m)));
        Ok(chosen.into_iter().filter_map(|id| rows.remove(&id)).collect())
    }

    async fn memory_list(&self, owner: &MemoryScope, limit: usize) -> Result<Vec<MemoryRow>> {
        self.words.memory_list(owner, limit).await
    }

    async fn memory_forget(&self, owner: &MemoryScope, id: i64) -> Result<bool> {
        self.words.memory_forget(owner, id).await
    }

    async fn memory_update(&self, owner: &MemoryScope, id: i64, text: &str) -> Result<bool> {
        self.words.memory_update(owner, id, text).await
    }
}

#[cfg(test)]
mod tests {
    use super::fuse;

    #[test]
    fn fusion_rewards_agreement_then_rank() {
        // (the ranked lists, the limit, the fused order)
        type Case<'a> = (&'a [&'a [i64]], usize, &'a [i64]);
        let cases: &[Case] = &[
            (&[&[1, 2, 3], &[3, 4]], 10, &[3, 1, 2, 4]),
            (&[&[1, 2], &[]], 10, &[1, 2]),
            (&[&[], &[7, 8]], 1, &[7]),
            (&[&[1, 2], &[2, 1]], 10, &[1, 2]),
            (&[&[5], &[6]], 10, &[5, 6]),
            (&[&[], &[]], 10, &[]),
        ];
        for (lists, limit, want) in cases {
            assert_eq!(fuse(lists, *limit), *want, "{lists:?}");
        }
    }
}
