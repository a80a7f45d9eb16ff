//! Recall by meaning (issue 31 points 1, 2 and 6): with `[memory.embeddings]` every memory and
//! transcript message is embedded in the background in bounded batches, failed batches are
//! retried, the queue survives a restart, the model is stored with each vector; recall merges
//! words and meaning per owner; a new model keeps recall working by words while the old
//! vectors are re-embedded.

use crate::eventually;
use crate::replies;
use crate::support::app::{config, TestApp};
use crate::support::fake_llm::FakeLlm;
use butler::config::{Config, EmbeddingsConfig};
use butler::memory::embed::{EmbedWorker, Embedder, HybridMemory};
use butler::store::{MemoryScope, MemoryStore, Store};
use std::sync::Arc;

/// Enough dimensions that the fake model keeps unrelated texts below `min_similarity`.
const DIMS: usize = 256;

fn embeddings(llm: &FakeLlm, model: &str, batch_size: usize) -> EmbeddingsConfig {
    EmbeddingsConfig {
        base_url: llm.openai_url(),
        model: model.into(),
        dimensions: Some(DIMS),
        batch_size,
        ..EmbeddingsConfig::default()
    }
}

fn with_embeddings(llm: &FakeLlm, model: &str, batch_size: usize) -> (Config, tempfile::TempDir) {
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    cfg.memory.embeddings = Some(embeddings(llm, model, batch_size));
    (cfg, dir)
}

/// The fake model and an app embedding with `model` in batches of `batch_size`.
async fn start(model: &str, batch_size: usize) -> (FakeLlm, TestApp) {
    let llm = FakeLlm::start().await;
    let (cfg, dir) = with_embeddings(&llm, model, batch_size);
    let app = TestApp::start(cfg, Some(dir)).await;
    (llm, app)
}

/// Waits until nothing is queued and `memories` memories have vectors of `model`.
async fn embedded(store: &Arc<dyn Store>, model: &str, memories: u64) {
    eventually(&format!("{memories} memories embedded with {model}"), || async {
        let p = store.embed_progress(model).await.unwrap();
        p.queued == 0 && p.memories_embedded == memories
    })
    .await;
}

#[tokio::test]
async fn memories_and_transcripts_are_embedded_in_bounded_batches_and_failed_batches_retried() {
    let llm = FakeLlm::start().await;
    // The first two batches fail: they are tried again.
    llm.fail_embeddings(2);
    let (cfg, dir) = with_embeddings(&llm, "embed-a", 4);
    let app = TestApp::start(cfg, Some(dir)).await;
    let store = app.app.store.clone();
    let alice = MemoryScope::personal("local");
    for n in 0..10 {
        store.memory_add(&alice, &format!("fact number {n} about the garden"), None).await.unwrap();
    }
    app.post("c", "local", "hello there").await;
    replies(&app, "c", 1).await;
    embedded(&store, "embed-a", 10).await;
    eventually("the exchange embedded", || async {
        store.embed_progress("embed-a").await.unwrap().messages_embedded == 2
    })
    .await;

    let requests = llm.embedding_requests();
    assert!(requests.iter().all(|r| r.inputs.len() <= 4), "bounded batches: {requests:?}");
    assert!(requests.iter().all(|r| r.model == "embed-a" && r.dimensions == Some(DIMS)));
    let sent: usize = requests.iter().map(|r| r.inputs.len()).sum();
    assert!(sent > 12, "the failed batches were sent again ({sent} texts for 12)");
    assert!(requests.iter().flat_map(|r| &r.inputs).any(|t| t == "hello there"), "the transcript is embedded");
    // Every vector carries the model that made it.
    assert_eq!(store.memory_vectors(&alice, "embed-a").await.unwrap().len(), 10);
    assert!(store.memory_vectors(&alice, "embed-b").await.unwrap().is_empty());
    app.stop().await;
}

#[tokio::test]
async fn the_queue_survives_a_restart() {
    let llm = FakeLlm::start().await;
    llm.fail_embeddings(usize::MAX);
    let (cfg, dir) = with_embeddings(&llm, "embed-a", 8);
    let app = TestApp::start(cfg, Some(dir)).await;
    let alice = MemoryScope::personal("local");
    for n in 0..5 {
        app.app.store.memory_add(&alice, &format!("a fact to keep {n}"), None).await.unwrap();
    }
    eventually("a failed try", || async { app.app.store.embed_progress("embed-a").await.unwrap().failing > 0 }).await;
    let (cfg, dir) = (app.config.clone(), app._dir);
    app.app.shutdown().await;

    // The service is back; a new process finds the queue where the old one left it.
    llm.fail_embeddings(0);
    let app = TestApp::start(cfg, dir).await;
    embedded(&app.app.store, "embed-a", 5).await;
    app.stop().await;
}

#[tokio::test]
async fn recall_finds_by_meaning_what_the_words_miss_and_only_the_owners() {
    let (llm, app) = start("embed-a", 16).await;
    let store = app.app.store.clone();
    let me = MemoryScope::personal("local");
    let anna = store.memory_add(&me, "My sister Anna turns 30 on May 4", None).await.unwrap();
    store.memory_add(&me, "Dad is allergic to shellfish, so no shrimp when he visits", None).await.unwrap();
    // Another person's memory with the same meaning is never recalled for me.
    let bob = store.memory_add(&MemoryScope::personal("bob"), "My sister Eva turns 40 on June 1", None).await.unwrap();
    embedded(&store, "embed-a", 3).await;

    let question = "When is my sibling's birthday?";
    assert!(store.memory_search(&me, question, 8).await.unwrap().is_empty(), "the words alone miss it");
    app.post("c", "local", question).await;
    replies(&app, "c", 1).await;
    let sent = llm.last_request().unwrap().last_user_text();
    assert!(sent.contains(&format!("[memory {}] My sister Anna turns 30 on May 4", anna.id)), "{sent}");
    assert!(!sent.contains(&format!("[memory {}]", bob.id)) && !sent.contains("Eva"), "{sent}");
    assert!(!sent.contains("shellfish"), "an unrelated memory is not recalled: {sent}");

    // `/memory search` and the recall tool's store are the hybrid one too.
    app.post("c", "local", "/memory search sibling birthday").await;
    let found = replies(&app, "c", 2).await.pop().unwrap();
    assert!(found.contains("Anna turns 30"), "{found}");
    app.stop().await;
}

#[tokio::test]
async fn recall_by_words_goes_on_when_the_embedding_service_is_down() {
    let (llm, app) = start("embed-a", 16).await;
    let me = MemoryScope::personal("local");
    let bike = app.app.store.memory_add(&me, "My bike is a blue Gazelle", None).await.unwrap();
    embedded(&app.app.store, "embed-a", 1).await;
    llm.fail_embeddings(usize::MAX);
    app.post("c", "local", "where is my bike?").await;
    replies(&app, "c", 1).await;
    let sent = llm.last_request().unwrap().last_user_text();
    assert!(sent.contains(&format!("[memory {}] My bike is a blue Gazelle", bike.id)), "{sent}");
    app.stop().await;
}

#[tokio::test]
async fn a_new_model_recalls_by_words_until_its_vectors_are_made() {
    let (llm, app) = start("embed-a", 16).await;
    let store = app.app.store.clone();
    let me = MemoryScope::personal("local");
    let anna = store.memory_add(&me, "My sister Anna turns 30 on May 4", None).await.unwrap();
    store.memory_add(&me, "My car is a red Honda Civic", None).await.unwrap();
    embedded(&store, "embed-a", 2).await;
    let url = app.db_url();
    let _dir = app._dir;
    app.app.shutdown().await;

    // The model changes: embed-b's search must not compare its query with embed-a's vectors.
    let store = butler::store::connect(&url, 2).await.unwrap();
    store.embed_track(Some("embed-b")).await.unwrap();
    let embedder = Arc::new(Embedder::new(&embeddings(&llm, "embed-b", 1)));
    let hybrid = HybridMemory::new(store.clone(), store.clone(), embedder.clone());
    let ids = |rows: Vec<butler::store::MemoryRow>| rows.into_iter().map(|m| m.id).collect::<Vec<_>>();
    // (query, found before re-embedding, found after)
    let cases = [("When is my sibling's birthday?", vec![], vec![anna.id]), ("Anna", vec![anna.id], vec![anna.id])];
    for (query, before, _) in &cases {
        assert_eq!(&ids(hybrid.memory_search(&me, query, 8).await.unwrap()), before, "{query} before");
    }
    // The re-embedding job: bounded batches (one text each here) until nothing is left.
    assert_eq!(store.embed_backfill("embed-b", false).await.unwrap(), 2);
    let worker = EmbedWorker::new(store.clone(), embedder);
    let mut batches = 0;
    while worker.step().await.unwrap().taken > 0 {
        batches += 1;
    }
    assert_eq!(batches, 2);
    for (query, _, after) in &cases {
        assert_eq!(&ids(hybrid.memory_search(&me, query, 8).await.unwrap()), after, "{query} after");
    }
    let b: Vec<_> = llm.embedding_requests().into_iter().filter(|r| r.model == "embed-b").collect();
    assert!(b.iter().any(|r| r.inputs == ["My sister Anna turns 30 on May 4"]), "{b:?}");
    assert_eq!(store.memory_vectors(&me, "embed-b").await.unwrap().len(), 2);
    assert!(store.memory_vectors(&me, "embed-a").await.unwrap().is_empty(), "one vector per memory: the new model's");
    store.close().await;
}

#[tokio::test]
async fn conversation_search_finds_by_meaning_in_the_persons_own_conversations() {
    use crate::support::fake_llm::Reply;
    use serde_json::json;
    let llm = FakeLlm::start().await;
    let (mut cfg, dir) = with_embeddings(&llm, "embed-a", 16);
    cfg.access.policy = butler::config::AccessPolicy::Open;
    let app = TestApp::start(cfg, Some(dir)).await;
    // (conversation, person, what they said)
    let people =
        [("c-alice", "alice", "My sister Anna turns 30 on May 4"), ("c-bob", "bob", "My sister Eva turns 40 in June")];
    for (conv, who, fact) in people {
        app.post(conv, who, fact).await;
        replies(&app, conv, 1).await;
        app.post(conv, who, "/new").await;
        replies(&app, conv, 2).await;
    }
    eventually("the transcripts embedded", || async {
        let p = app.app.store.embed_progress("embed-a").await.unwrap();
        p.queued == 0 && p.messages_embedded >= 4
    })
    .await;
    let ask = "what did I say about family";
    llm.on(ask, Reply::tool_call("conversation_search", json!({"query": "sibling birthday"})));
    llm.on(ask, Reply::text("That one."));
    app.post("c-alice", "alice", ask).await;
    replies(&app, "c-alice", 3).await;
    let request = llm.requests().into_iter().rev().find(|r| r.last_user_text().contains(ask)).unwrap();
    let result = request.last_tool_result().expect("the tool answered");
    // No word of the query is in the message: found by meaning, dated, from her conversation.
    assert!(result.contains("user: My sister Anna turns 30 on May 4"), "{result}");
    assert!(result.contains("· web · conversation started "), "{result}");
    assert!(!result.contains("Eva"), "never another person's conversation: {result}");
    app.stop().await;
}
