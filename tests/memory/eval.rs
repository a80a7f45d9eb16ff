//! The memory eval (issue 31): how often Butler's memory finds what a person told it when they
//! ask in other words. `tests/fixtures/memory_eval.json` holds 220 short personal facts, 102
//! questions that each paraphrase one of them (most share no content word with their answer,
//! about a fifth share one), and the synonym groups of the fake embedding model
//! (`support::embedder`). This file checks the fixture, and that the fake model really links
//! each paraphrase to its answer; then it stores the facts in a real SQLite store and measures
//! recall@5 (the share of questions whose answer is among the first five memories found) of
//! keyword search, printed as one line (0.18 when the fixture was written):
//! `eval=memory keyword_recall_at_5=0.18 questions=102 memories=220`.
//!
//! Adding a leg (e.g. hybrid search) is one function: `async fn hybrid_ranking(eval: &Eval,
//! question: &str) -> Vec<i64>` that returns memory ids of `eval.scope`, best first, measured in
//! a test of its own with `eval.recall_at_5(hybrid_ranking).await` (see `keyword_ranking` and
//! `keyword_search_finds_fewer_than_six_answers_in_ten`).
//!
//! It must never tune Butler to the fixture's words (the questions are the test set) and never
//! use the embedder to rank for Butler: it only checks that the fixture is fair.

use crate::support::db::SqliteTestDb;
use crate::support::embedder::{cosine, embed};
use butler::store::{MemoryScope, Store};
use serde::Deserialize;
use std::sync::Arc;

/// How many memories a person would read: recall is measured at this cut.
const CUT: usize = 5;

#[derive(Deserialize)]
pub struct Fixture {
    pub lexicon: Vec<Vec<String>>,
    pub memories: Vec<String>,
    pub questions: Vec<Question>,
}

#[derive(Deserialize)]
pub struct Question {
    pub q: String,
    /// The index in `memories` of the fact that answers it.
    pub answer: usize,
}

pub fn fixture() -> Fixture {
    serde_json::from_str(include_str!("../fixtures/memory_eval.json")).expect("memory_eval.json")
}

/// The fixture's memories in a real, migrated SQLite store, all in one person's scope.
pub struct Eval {
    pub fixture: Fixture,
    pub store: Arc<dyn Store>,
    pub scope: MemoryScope,
    /// The store id of each memory of the fixture, by index.
    pub ids: Vec<i64>,
    _db: SqliteTestDb,
}

impl Eval {
    pub async fn open() -> Self {
        let db = SqliteTestDb::new();
        let store = butler::store::connect(&db.url, 4).await.expect("open SQLite");
        store.migrate().await.expect("migrate SQLite");
        let fixture = fixture();
        let scope = MemoryScope::personal("eval-user");
        let mut ids = Vec::with_capacity(fixture.memories.len());
        for text in &fixture.memories {
            ids.push(store.memory_add(&scope, text, None).await.expect("memory_add").id);
        }
        Self { fixture, store, scope, ids, _db: db }
    }

    /// The share of questions whose answer is among the first `CUT` ids `ranking` returns. The
    /// seam for every leg: `ranking` is any `async fn(&Eval, &str) -> Vec<i64>`, best first.
    pub async fn recall_at_5(&self, ranking: impl AsyncFn(&Eval, &str) -> Vec<i64>) -> f64 {
        let mut found = 0;
        for question in &self.fixture.questions {
            let ranked = ranking(self, &question.q).await;
            if ranked.iter().take(CUT).any(|id| *id == self.ids[question.answer]) {
                found += 1;
            }
        }
        found as f64 / self.fixture.questions.len() as f64
    }

    /// The eval's one machine-readable line for a leg.
    pub fn report(&self, leg: &str, recall: f64) -> String {
        format!(
            "eval=memory {leg}_recall_at_5={recall:.2} questions={} memories={}",
            self.fixture.questions.len(),
            self.fixture.memories.len()
        )
    }

    pub async fn close(self) {
        self.store.close().await;
    }
}

/// Keyword search as recall uses it: `memory_search` over the person's scope.
pub async fn keyword_ranking(eval: &Eval, question: &str) -> Vec<i64> {
    let found = eval.store.memory_search(&eval.scope, question, CUT).await.expect("memory_search");
    found.into_iter().map(|m| m.id).collect()
}

#[test]
fn the_fixture_is_well_formed_and_the_fake_model_links_its_paraphrases() {
    let f = fixture();
    assert!(f.memories.len() >= 200, "{} memories", f.memories.len());
    assert!(f.questions.len() >= 100, "{} questions", f.questions.len());
    let mut seen = std::collections::HashSet::new();
    for m in &f.memories {
        assert!(!m.trim().is_empty() && m.len() < 120, "a short fact: {m:?}");
        assert!(seen.insert(m.as_str()), "a memory twice: {m:?}");
    }
    let mut answers = std::collections::HashSet::new();
    for q in &f.questions {
        assert!(q.answer < f.memories.len(), "{:?} answers {} of {}", q.q, q.answer, f.memories.len());
        assert!(answers.insert(q.answer), "two questions for memory {}", q.answer);
    }
    for group in &f.lexicon {
        assert!(group.len() >= 2, "a group of synonyms has two words at least: {group:?}");
        assert!(group.iter().all(|w| *w == w.to_lowercase() && !w.contains(' ')), "one lowercase word each: {group:?}");
    }
    // The fake model must put each answer first for most questions, under any model name, or
    // a leg that uses it could not do better than keyword search.
    for model in ["text-embedding-3-small", "fake-embed"] {
        let vectors: Vec<Vec<f32>> = f.memories.iter().map(|m| embed(model, m, 64)).collect();
        let mut misses = Vec::new();
        for q in &f.questions {
            let v = embed(model, &q.q, 64);
            let best = (0..vectors.len()).max_by(|&a, &b| cosine(&v, &vectors[a]).total_cmp(&cosine(&v, &vectors[b])));
            if best != Some(q.answer) {
                misses.push(format!("{:?} -> {:?}", q.q, best.map(|b| &f.memories[b])));
            }
        }
        let top1 = 1.0 - misses.len() as f64 / f.questions.len() as f64;
        eprintln!("eval=memory-fixture model={model} embed_top1={top1:.2}");
        assert!(top1 >= 0.8, "{model}: the answer is the nearest memory for only {top1:.2}:\n{}", misses.join("\n"));
    }
}

#[test]
fn the_fake_model_is_deterministic_unit_length_and_model_specific() {
    let f = fixture();
    let text = &f.memories[f.questions[0].answer];
    // (model a, text a, model b, text b, lowest cosine, highest cosine)
    let cases: &[(&str, &str, &str, &str, f32, f32)] = &[
        ("m", text, "m", text, 0.9999, 1.0001),
        ("m", text, "other-model", text, -0.5, 0.5),
        ("m", &f.questions[0].q, "m", text, 0.3, 1.0),
        ("m", "My car is blue", "m", "The vehicle is blue", 0.99, 1.0001),
        ("m", "My car is blue", "m", "Priya plays tennis on Mondays", -0.5, 0.5),
        ("m", "", "m", "the of and", 0.9999, 1.0001),
    ];
    for &(ma, a, mb, b, low, high) in cases {
        let (va, vb) = (embed(ma, a, 64), embed(mb, b, 64));
        let c = cosine(&va, &vb);
        assert!((low..=high).contains(&c), "cos({ma}:{a:?}, {mb}:{b:?}) = {c}, want {low}..={high}");
    }
    for dims in [1, 64, 256, 1536] {
        let v = embed("m", text, dims);
        assert_eq!(v.len(), dims);
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "{dims} dims: norm {norm}");
    }
}

#[tokio::test]
async fn keyword_search_finds_fewer_than_six_answers_in_ten() {
    let eval = Eval::open().await;
    let recall = eval.recall_at_5(keyword_ranking).await;
    eprintln!("{}", eval.report("keyword", recall));
    assert!(recall > 0.0, "the questions that share a word with their answer are found");
    assert!(recall < 0.6, "keyword search must leave room for a better leg: recall@5 {recall:.2}");
    eval.close().await;
}

/// Hybrid recall (issue 31 point 7): every memory embedded by the fake model through Butler's
/// own queue and worker, then `HybridMemory`'s merged search. It must find strictly more answers
/// than the words alone.
#[tokio::test]
async fn hybrid_recall_finds_more_answers_than_keywords() {
    use butler::memory::embed::{EmbedWorker, Embedder, HybridMemory};
    use butler::store::MemoryStore;
    let eval = Eval::open().await;
    let llm = crate::support::fake_llm::FakeLlm::start().await;
    let cfg = butler::config::EmbeddingsConfig {
        base_url: llm.openai_url(),
        model: "text-embedding-3-small".into(),
        dimensions: Some(256),
        ..Default::default()
    };
    let embedder = Arc::new(Embedder::new(&cfg));
    let queued = eval.store.embed_backfill(embedder.model(), false).await.unwrap();
    assert_eq!(queued as usize, eval.fixture.memories.len());
    let worker = EmbedWorker::new(eval.store.clone(), embedder.clone());
    while worker.step().await.unwrap().taken > 0 {}
    let hybrid = HybridMemory::new(eval.store.clone(), eval.store.clone(), embedder);
    let keyword = eval.recall_at_5(keyword_ranking).await;
    let merged = eval
        .recall_at_5(async |e: &Eval, q: &str| {
            hybrid.memory_search(&e.scope, q, CUT).await.expect("hybrid search").into_iter().map(|m| m.id).collect()
        })
        .await;
    eprintln!(
        "eval=memory keyword_recall_at_5={keyword:.2} hybrid_recall_at_5={merged:.2} questions={} memories={}",
        eval.fixture.questions.len(),
        eval.fixture.memories.len()
    );
    assert!(merged > keyword, "hybrid {merged:.2} must beat keyword {keyword:.2}");
    eval.close().await;
}
