//! Searching past conversations: the one place where a search over transcripts is scoped, run
//! and ranked ([`search_transcripts`]), and where each hit's text is cut to an excerpt around
//! what matched: the store's full-text search (relevance, then recency), merged here with the
//! search by meaning over the same messages' vectors when embeddings are on, so
//! `conversation_search` and whatever else asks never change.
//!
//! It must never widen the scope it is given (the store enforces it: a person's own direct
//! conversations, or one group's), and never return tool output.

use super::embed::{fuse, nearest, query_vector, Embedder};
use crate::store::{search_terms, StoreError, TranscriptHit, TranscriptScope, TranscriptStore, VectorStore};
use crate::tools::TranscriptSearch;
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::Arc;

/// The longest excerpt of one hit, in characters (an ellipsis marks each cut end).
pub const EXCERPT_CHARS: usize = 280;
/// How far before the first matching word an excerpt starts, in characters (at most a quarter
/// of the excerpt).
const LEAD_CHARS: usize = 70;
/// How far a cut end may move to fall between words.
const WORD_SLACK: usize = 20;

/// The messages of `user_id`'s conversations `within` matching `query`, except session
/// `except_session`, best first (full-text rank, then newest), each cut to an excerpt.
pub async fn search_transcripts(
    store: &dyn TranscriptStore,
    user_id: &str,
    within: &TranscriptScope,
    query: &str,
    except_session: Option<&str>,
    limit: usize,
) -> Result<Vec<TranscriptHit>, StoreError> {
    let hits = store.transcript_search(user_id, within, query, except_session, limit).await?;
    let terms = search_terms(query);
    Ok(hits
        .into_iter()
        .map(|hit| TranscriptHit { content: excerpt(&hit.content, &terms, EXCERPT_CHARS), ..hit })
        .collect())
}

/// The tools' [`TranscriptSearch`]: [`search_transcripts`] over one store, merged with a search
/// by meaning over the same scope's message vectors when embeddings are on (reciprocal rank
/// fusion, as for memories: `embed::fuse`).
pub struct Transcripts {
    store: Arc<dyn TranscriptStore>,
    meaning: Option<(Arc<dyn VectorStore>, Arc<Embedder>)>,
}

impl Transcripts {
    pub fn new(store: Arc<dyn TranscriptStore>) -> Self {
        Self { store, meaning: None }
    }

    /// Searches by meaning too, with `embedder`'s vectors in `vectors`.
    pub fn with_meaning(self, vectors: Arc<dyn VectorStore>, embedder: Arc<Embedder>) -> Self {
        Self { meaning: Some((vectors, embedder)), ..self }
    }
}

#[async_trait]
impl TranscriptSearch for Transcripts {
    async fn search(
        &self,
        user_id: &str,
        within: &TranscriptScope,
        query: &str,
        except_session: Option<&str>,
        limit: usize,
    ) -> Result<Vec<TranscriptHit>, StoreError> {
        let Some((vectors, embedder)) = &self.meaning else {
            return search_transcripts(&*self.store, user_id, within, query, except_session, limit).await;
        };
        if limit == 0 || query.trim().is_empty() {
            return Ok(Vec::new());
        }
        let pool = (limit * 4).max(20);
        let by_meaning = async {
            let Some(q) = query_vector(embedder, query).await else {
                return Ok(Vec::new());
            };
            let rows: Vec<((String, i64), Vec<u8>)> = vectors
                .transcript_vectors(user_id, within, embedder.model(), except_session)
                .await?
                .into_iter()
                .map(|(session, seq, v)| ((session, seq), v))
                .collect();
            let min = embedder.config().min_similarity;
            Ok::<_, StoreError>(nearest(&q, &rows, min, pool).into_iter().map(|(key, _)| key).collect::<Vec<_>>())
        };
        let (by_words, by_meaning) =
            tokio::join!(self.store.transcript_search(user_id, within, query, except_session, pool), by_meaning);
        let (by_words, by_meaning) = (by_words?, by_meaning?);
        let word_keys: Vec<(String, i64)> = by_words.iter().map(|h| (h.session_id.clone(), h.seq)).collect();
        let chosen = fuse(&[&word_keys, &by_meaning], limit);
        let mut hits: HashMap<(String, i64), TranscriptHit> =
            by_words.into_iter().map(|h| ((h.session_id.clone(), h.seq), h)).collect();
        let missing: Vec<(String, i64)> = chosen.iter().filter(|k| !hits.contains_key(*k)).cloned().collect();
        for h in vectors.transcript_hits(user_id, within, &missing).await? {
            hits.insert((h.session_id.clone(), h.seq), h);
        }
        let terms = search_terms(query);
        Ok(chosen
            .into_iter()
            .filter_map(|k| hits.remove(&k))
            .map(|hit| TranscriptHit { content: excerpt(&hit.content, &terms, EXCERPT_CHARS), ..hit })
            .collect())
    }
}

/// Where the first of `terms` (lowercase words) occurs in `lower`, by character; a word that
/// does not occur as written is looked for by its start (the search stems: "bikes" finds "bike").
fn first_match(lower: &[char], terms: &[String]) -> Option<usize> {
    let find = |needle: &[char]| {
        if needle.is_empty() || needle.len() > lower.len() {
            return None;
        }
        (0..=lower.len() - needle.len()).find(|&i| lower[i..i + needle.len()] == *needle)
    };
    terms
        .iter()
        .filter_map(|t| {
            let word: Vec<char> = t.chars().collect();
            let stem = &word[..word.len().min(4.max(word.len() * 2 / 3))];
            find(&word).or_else(|| find(stem))
        })
        .min()
}

/// `text` on one line (runs of whitespace become one space), at most `max` characters around
/// the first of `terms` it contains (or from its start), cut between words where one is near,
/// with `…` where something was cut.
pub fn excerpt(text: &str, terms: &[String], max: usize) -> String {
    let chars: Vec<char> = text.split_whitespace().collect::<Vec<_>>().join(" ").chars().collect();
    if chars.len() <= max {
        return chars.into_iter().collect();
    }
    let lower: Vec<char> = chars.iter().map(|c| c.to_lowercase().next().unwrap_or(*c)).collect();
    let at = first_match(&lower, terms).unwrap_or(0);
    let mut start = at.saturating_sub(LEAD_CHARS.min(max / 4)).min(chars.len() - max);
    if start > 0 {
        // Start at the next word, when one starts close by (never past the match).
        if let Some(space) = chars[start..at.max(start)].iter().take(WORD_SLACK).position(|c| *c == ' ') {
            start += space + 1;
        }
    }
    let mut end = (start + max).min(chars.len());
    if end < chars.len() && chars[end] != ' ' {
        if let Some(space) = chars[start..end].iter().rev().take(WORD_SLACK).position(|c| *c == ' ') {
            end -= space + 1;
        }
    }
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.extend(&chars[start..end]);
    if end < chars.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::excerpt;

    #[test]
    fn excerpts_centre_on_the_first_match_and_stay_short() {
        let terms = |q: &str| crate::store::search_terms(q);
        let long =
            format!("{} my bike is blue and fast {}", "filler words here ".repeat(20), "more text after ".repeat(20));
        // (text, query, max, the excerpt)
        let cases: &[(&str, &str, usize, &str)] = &[
            ("short text", "bike", 50, "short text"),
            ("lines\n\nand   spaces", "bike", 50, "lines and spaces"),
            ("alpha beta gamma delta epsilon", "nothing", 16, "alpha beta gamma…"),
            ("alpha beta gamma delta epsilon", "nothing", 14, "alpha beta…"),
            ("alpha beta gamma delta epsilon", "epsilon", 16, "…delta epsilon"),
            ("one two Bikes three four five six", "bikes", 20, "…two Bikes three four…"),
        ];
        for (text, query, max, want) in cases {
            assert_eq!(excerpt(text, &terms(query), *max), *want, "{text:?} / {query:?}");
        }
        let cut = excerpt(&long, &terms("bicycle bike"), 100);
        assert!(cut.contains("my bike is blue"), "{cut}");
        assert!(cut.starts_with('…') && cut.ends_with('…'), "{cut}");
        assert!(cut.chars().count() <= 102, "{} chars", cut.chars().count());
        // The start of a word finds what the stemmer matched.
        let stemmed = excerpt(&long, &terms("bikes"), 100);
        assert!(stemmed.contains("my bike is blue"), "{stemmed}");
        // Multi-byte text is cut by characters.
        let cafe = format!("{}café au lait {}", "ü".repeat(100), "ö".repeat(100));
        assert!(excerpt(&cafe, &terms("café"), 40).contains("café au lait"));
    }
}
