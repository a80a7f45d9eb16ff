//! The same pipeline on Postgres (one URL changed) and with the Anthropic protocol: a turn with
//! a tool call goes through web API, inbox, session, agent, outbox and back.

use crate::support::app::{config, TestApp};
use crate::support::db::PgTestDb;
use crate::support::fake_llm::{FakeLlm, Reply};
use butler::config::{ProviderKind, Secret};
use butler::store::MemoryScope;
use serde_json::json;

async fn tool_turn(app: &TestApp, llm: &FakeLlm, conv: &str) {
    llm.on("remember", Reply::tool_call("remember", json!({"text": "The user likes green tea"})).with_text("Noting."));
    llm.on("remember", Reply::text("I will remember that."));
    let (status, _) = app.post(conv, "local", "remember that I like green tea").await;
    assert_eq!(status, 202);
    let replies = app.wait_replies(conv, 1, 30).await;
    assert_eq!(replies[0]["text"], "Noting.\n\nI will remember that.");
    let memories = app.app.store.memory_search(&MemoryScope::personal("local"), "tea", 5).await.unwrap();
    assert_eq!(memories.len(), 1);
    assert_eq!(memories[0].text, "The user likes green tea");
    let second = &llm.requests()[1];
    assert!(second.last_tool_result().unwrap().starts_with("Remembered as memory"));
}

#[tokio::test]
async fn the_pipeline_runs_on_postgres_by_changing_the_url() {
    let db = PgTestDb::create().await;
    let llm = FakeLlm::start().await;
    let (mut cfg, _dir) = config(Some(&llm.openai_url()));
    cfg.database.url = Secret::new(db.url.clone());
    let app = TestApp::start(cfg, None).await;
    assert_eq!(app.app.store.backend(), butler::store::Backend::Postgres);
    tool_turn(&app, &llm, "pg1").await;
    app.stop().await;
    drop(db);
}

#[tokio::test]
async fn the_pipeline_speaks_anthropic_too() {
    let llm = FakeLlm::start().await;
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    cfg.llm.provider = ProviderKind::Anthropic;
    cfg.llm.base_url = Some(llm.anthropic_url());
    cfg.llm.api_key = Some(Secret::new("sk-ant-test"));
    let app = TestApp::start(cfg, Some(dir)).await;
    tool_turn(&app, &llm, "an1").await;
    let req = llm.last_request().unwrap();
    assert_eq!(req.path, "/v1/messages");
    assert_eq!(req.api_key(), Some("sk-ant-test"));
    app.stop().await;
}
