//! Context management: thresholds from the model's context window; old tool results cleared,
//! then long old texts collapsed, then a summary checkpoint; the transcript is never deleted; a
//! "prompt too long" error forces one compaction and a retry; /status shows the context size;
//! after a restart the session goes on from the same summary and recent messages.

use crate::support::app::{config, TestApp};
use crate::support::fake_llm::{FakeLlm, Reply};
use crate::{replies, user_texts};

const SUMMARIZER: &str = "Summarize this conversation so far";

/// A small window: the request budget is three quarters of it less the answer's 200 tokens.
fn small_window(cfg: &mut butler::config::Config) {
    cfg.llm.context_window = WINDOW as u32;
    cfg.llm.max_tokens = 200;
    // The tools' schemas count against this tiny window (`ask_user` and `delegate` added ~400
    // tokens to every request, `send_file` ~150, `conversation_search` ~100, the system prompt's
    // line about untrusted text ~150): the window grew by as much as they take.
}

const WINDOW: i64 = 4_950;

/// Three quarters of the window less the answer's tokens.
const BUDGET: i64 = WINDOW * 3 / 4 - 200;

/// A message of about `n` characters that mentions `tag`.
fn long(tag: &str, n: usize) -> String {
    format!("{tag}: {}", "lorem ipsum dolor sit amet ".repeat(n / 27))
}

#[tokio::test]
async fn long_sessions_are_checkpointed_and_the_transcript_is_kept() {
    let llm = FakeLlm::start().await;
    llm.on_every(SUMMARIZER, Reply::text("SUMMARY: the user wrote several long notes about lorem ipsum."));
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    small_window(&mut cfg);
    let app = TestApp::start(cfg.clone(), Some(dir)).await;
    for i in 0..8 {
        // Under the collapsing threshold, so only a checkpoint can make room.
        app.post("c", "local", &long(&format!("note {i}"), 1_100)).await;
        replies(&app, "c", i + 1).await;
    }
    let reqs = llm.requests();
    let summaries = reqs.iter().filter(|r| r.last_user_text().contains(SUMMARIZER)).count();
    assert!(summaries >= 1, "a checkpoint was made");
    let last_turn = reqs.iter().rev().find(|r| !r.last_user_text().contains(SUMMARIZER)).unwrap();
    let users = user_texts(last_turn);
    assert!(
        users[0].starts_with("[Summary of the earlier conversation]\nSUMMARY:"),
        "{:?}",
        &users[0][..60.min(users[0].len())]
    );
    assert!(!users.iter().any(|u| u.starts_with("note 0:")), "old messages are replaced by the summary");

    // Nothing was deleted.
    let session = app.app.store.session_active("dm:web:c:local").await.unwrap().unwrap();
    assert_eq!(app.app.store.messages_recent(&session.id, 100).await.unwrap().len(), 16);
    // /status shows the context size.
    app.post("c", "local", "/status").await;
    let status = replies(&app, "c", 9).await.pop().unwrap();
    assert!(status.contains("Context: about "), "{status}");
    let context: i64 = app.app.store.last_context(&session.id).await.unwrap();
    assert!(context > 100 && context <= BUDGET, "the last request fits the budget: {context}");

    // After a restart the session goes on from the same checkpoint and recent messages.
    let before = user_texts(last_turn);
    let (cfg, dir) = (app.config.clone(), app._dir);
    app.app.shutdown().await;
    let app = TestApp::start(cfg, dir).await;
    app.post("c", "local", "and now?").await;
    replies(&app, "c", 10).await;
    let after = user_texts(&llm.last_request().unwrap());
    assert_eq!(after[0], before[0], "the same summary");
    assert_eq!(after.last().unwrap(), "and now?");
    app.stop().await;
}

#[tokio::test]
async fn old_tool_results_are_cleared_before_anything_else() {
    let llm = FakeLlm::start().await;
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    small_window(&mut cfg);
    let app = TestApp::start(cfg, Some(dir)).await;
    // A turn with a big tool result (recall of many memories), then short turns.
    let me = butler::store::MemoryScope::personal("local");
    for i in 0..40 {
        app.app
            .store
            .memory_add(&me, &format!("fact number {i} about the garden and its many plants"), None)
            .await
            .unwrap();
    }
    llm.on("garden", Reply::tool_call("recall", serde_json::json!({"query": "garden", "limit": 40})));
    llm.on("garden", Reply::text("Lots of garden facts."));
    app.post("t", "local", "tell me about the garden").await;
    replies(&app, "t", 1).await;
    // Short messages (never collapsed) until the request no longer fits: at that point clearing
    // the old tool result is what makes it fit - no text is collapsed, no summary is made.
    let mut cleared = false;
    for i in 0..40 {
        app.post("t", "local", &long(&format!("later {i}"), 250)).await;
        replies(&app, "t", i + 2).await;
        let last = llm.last_request().unwrap();
        let tool = last.messages().iter().find(|m| m["role"] == "tool").expect("the old tool result is still there");
        if tool["content"].as_str().unwrap().starts_with("[old tool result cleared") {
            assert!(!last.messages().iter().any(|m| m["content"].as_str().unwrap_or("").contains("[collapsed")));
            cleared = true;
            break;
        }
    }
    assert!(cleared, "the tool result was never cleared");
    assert!(!llm.requests().iter().any(|r| r.last_user_text().contains(SUMMARIZER)), "no summary was needed");
    app.stop().await;
}

#[tokio::test]
async fn prompt_too_long_forces_one_compaction_and_a_retry() {
    let llm = FakeLlm::start().await;
    llm.on_every(SUMMARIZER, Reply::text("SUMMARY: earlier chat."));
    let (cfg, dir) = config(Some(&llm.openai_url()));
    let app = TestApp::start(cfg, Some(dir)).await;
    for i in 0..4 {
        app.post("p", "local", &format!("message number {i}")).await;
        replies(&app, "p", i + 1).await;
    }
    llm.on("the big one", Reply::context_too_long());
    llm.on("the big one", Reply::text("Answered after compaction."));
    app.post("p", "local", "the big one").await;
    let texts = replies(&app, "p", 5).await;
    assert_eq!(texts[4], "Answered after compaction.");
    let reqs = llm.requests();
    let n = reqs.len();
    assert!(reqs[n - 2].last_user_text().contains(SUMMARIZER), "compaction between the failure and the retry");
    assert!(user_texts(&reqs[n - 1])[0].starts_with("[Summary of the earlier conversation]"));

    // A second "too long" after the forced compaction is reported, not retried forever.
    llm.on("still too big", Reply::context_too_long());
    llm.on("still too big", Reply::context_too_long());
    app.post("p", "local", "still too big").await;
    let texts = replies(&app, "p", 6).await;
    assert!(texts[5].contains("too long"), "{}", texts[5]);
    app.stop().await;
}
