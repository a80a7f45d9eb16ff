//! Automatic recall: before each turn the memories relevant to the new message are added to it,
//! within the token budget, with their ids; the system prompt stays byte-stable.

use crate::support::app::{config, TestApp};
use crate::support::fake_llm::FakeLlm;
use crate::{replies, user_texts};
use butler::store::MemoryScope;

#[tokio::test]
async fn relevant_memories_join_the_message_not_the_system_prompt() {
    let llm = FakeLlm::start().await;
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    cfg.memory.recall_budget_tokens = 15;
    let app = TestApp::start(cfg, Some(dir)).await;
    let me = MemoryScope::personal("local");
    let cat = app.app.store.memory_add(&me, "The user's cat is called Tom", None).await.unwrap();
    app.app
        .store
        .memory_add(&me, "The user's cat likes tuna and sleeps on the sofa all afternoon", None)
        .await
        .unwrap();
    app.app.store.memory_add(&me, "The user works at a bakery", None).await.unwrap();

    app.post("r", "local", "hello there").await;
    replies(&app, "r", 1).await;
    app.post("r", "local", "what is my cat called?").await;
    replies(&app, "r", 2).await;
    let reqs = llm.requests();
    assert_eq!(reqs[0].system_text(), reqs[1].system_text(), "the system prompt never changes");
    assert!(!reqs[1].system_text().contains("Tom"));
    let users = user_texts(&reqs[1]);
    assert_eq!(users[0], "hello there", "earlier messages are sent as they were");
    let current = users.last().unwrap();
    assert!(current.starts_with("[Memories that may help"), "{current}");
    assert!(current.contains(&format!("[memory {}] The user's cat is called Tom", cat.id)), "{current}");
    assert!(!current.contains("bakery"), "only relevant memories: {current}");
    assert!(!current.contains("sleeps on the sofa"), "the budget (15 tokens) keeps only what fits: {current}");
    assert!(current.ends_with("what is my cat called?"));
    // The transcript keeps the message as the user wrote it.
    let session = app.app.store.session_active("dm:web:r:local").await.unwrap().unwrap();
    let stored = app.app.store.messages_recent(&session.id, 10).await.unwrap();
    assert!(stored.iter().any(|m| m.msg.content == "what is my cat called?"));
    app.stop().await;
}

#[tokio::test]
async fn recall_can_be_switched_off_and_memory_commands_work() {
    let llm = FakeLlm::start().await;
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    cfg.memory.recall = false;
    let app = TestApp::start(cfg, Some(dir)).await;
    let me = MemoryScope::personal("local");
    let tea = app.app.store.memory_add(&me, "Likes green tea", None).await.unwrap();
    app.app.store.memory_add(&me, "Lives in Porto", None).await.unwrap();
    app.post("m", "local", "any tea for me?").await;
    replies(&app, "m", 1).await;
    assert_eq!(user_texts(&llm.last_request().unwrap()), ["any tea for me?"]);

    let before = llm.request_count();
    for (cmd, want) in [
        ("/memory", "Lives in Porto"),
        ("/memory search tea", &format!("[memory {}] Likes green tea", tea.id)),
        (&format!("/memory forget {}", tea.id), &format!("Forgot memory {}.", tea.id)),
        ("/memory search tea", "No memories match."),
        ("/memory forget 9999", "There is no memory 9999"),
    ] {
        let n =
            crate::support::app::TestApp::messages(&app, "m").await.iter().filter(|m| m["role"] == "assistant").count();
        app.post("m", "local", cmd).await;
        let texts = replies(&app, "m", n + 1).await;
        assert!(texts.last().unwrap().contains(want), "{cmd}: {:?}", texts.last());
    }
    assert_eq!(llm.request_count(), before, "memory commands never call the model");
    app.stop().await;
}
