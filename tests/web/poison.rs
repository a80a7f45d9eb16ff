//! Poison events: text no backend can store (U+0000) is made storable at the door, and an event
//! whose every try fails is given up on after `[limits] max_event_attempts` tries: it becomes
//! `failed`, its sender is told once, and the model is not asked again for an answer it gave.

use crate::support::app::{config, TestApp};
use crate::support::db::PgTestDb;
use crate::support::fake_llm::{FakeLlm, Reply};
use butler::config::Secret;
use butler::store::InboxStatus;
use std::time::{Duration, Instant};

#[tokio::test]
async fn nul_text_on_postgres_is_accepted_stored_sanitized_and_answered() {
    let db = PgTestDb::create().await;
    let llm = FakeLlm::start().await;
    llm.set_default(Reply::text("Got it."));
    let (mut cfg, _dir) = config(Some(&llm.openai_url()));
    cfg.database.url = Secret::new(db.url.clone());
    let app = TestApp::start(cfg, None).await;
    // (posted text, what the page log and the model see)
    let cases = [("nul1", "hi\0there", "hi\u{FFFD}there"), ("nul2", "\0", "\u{FFFD}"), ("nul3", "plain", "plain")];
    for (conv, text, want) in cases {
        let (status, body) = app.post(conv, "local", text).await;
        assert_eq!(status, 202, "{conv}: {body}");
        let replies = app.wait_replies(conv, 1, 30).await;
        assert_eq!(replies.len(), 1, "{conv} is answered");
        let shown = app.messages(conv).await;
        assert_eq!(shown[0]["role"], "user");
        assert_eq!(shown[0]["text"], want, "{conv}: the page log holds the sanitized text");
        let id = body["event_id"].as_str().unwrap();
        let row = app.app.store.inbox_get(id).await.unwrap().expect("stored");
        assert_eq!(row.status, InboxStatus::Done, "{conv}");
        assert_eq!(row.event.text(), Some(want), "{conv}: the inbox holds the sanitized text");
    }
    let asked: Vec<String> = llm.requests().iter().map(|r| r.last_user_text()).collect();
    assert!(asked.iter().any(|t| t.contains("hi\u{FFFD}there")), "{asked:?}");
    // Refused input still changes nothing: no conversation row for an empty message.
    let (status, _) = app.post("nul4", "local", " \t ").await;
    assert_eq!(status, 422);
    assert!(app.app.store.conversation_get("web:nul4").await.unwrap().is_none());
    app.stop().await;
    drop(db);
}

/// Waits until the event has `status` (or `secs` pass) and returns its row.
async fn wait_status(app: &TestApp, id: &str, status: InboxStatus, secs: u64) -> butler::store::InboxRow {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let row = app.app.store.inbox_get(id).await.unwrap().expect("stored");
        if row.status == status || Instant::now() > deadline {
            return row;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn notices(messages: &[serde_json::Value]) -> usize {
    messages.iter().filter(|m| m["text"].as_str().unwrap_or_default().contains("could not process")).count()
}

#[tokio::test]
async fn an_event_that_always_fails_is_dead_lettered_once_with_one_model_call() {
    let llm = FakeLlm::start().await;
    llm.set_default(Reply::text("An answer that cannot be committed."));
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    cfg.limits.max_event_attempts = 3;
    let app = TestApp::start(cfg, Some(dir)).await;
    // A real store failure on every commit of a turn: the usage ledger refuses inserts.
    {
        use sqlx::Connection;
        let mut db = sqlx::SqliteConnection::connect(&app.db_url()).await.unwrap();
        sqlx::query("CREATE TRIGGER poison BEFORE INSERT ON usage BEGIN SELECT RAISE(ABORT, 'poisoned'); END")
            .execute(&mut db)
            .await
            .unwrap();
    }
    let (status, body) = app.post("p1", "local", "hello").await;
    assert_eq!(status, 202);
    let id = body["event_id"].as_str().unwrap().to_string();
    let row = wait_status(&app, &id, InboxStatus::Failed, 30).await;
    assert_eq!(row.status, InboxStatus::Failed, "given up on: {row:?}");
    assert_eq!(row.attempts, 3, "exactly max_event_attempts tries");
    assert!(row.error.as_deref().unwrap_or_default().contains("poisoned"), "{:?}", row.error);
    assert_eq!(llm.request_count(), 1, "a retry commits the stored answer instead of asking again");
    let notice = app.app.store.outbox_get(&butler::ingress::failed_key(&id)).await.unwrap();
    assert!(notice.is_some(), "the sender is told");
    let deadline = Instant::now() + Duration::from_secs(10);
    while notices(&app.messages("p1").await) == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(notices(&app.messages("p1").await), 1);

    // The owner retries it (`butler inbox retry`): it fails again, but the sender is not told
    // twice and the model is still not asked again.
    assert!(app.app.store.inbox_requeue(&id).await.unwrap());
    assert!(!app.app.store.inbox_requeue(&id).await.unwrap(), "only a failed event is re-queued");
    let row = wait_status(&app, &id, InboxStatus::Pending, 1).await;
    assert_ne!(row.status, InboxStatus::Failed);
    let row = wait_status(&app, &id, InboxStatus::Failed, 30).await;
    assert_eq!((row.status, row.attempts), (InboxStatus::Failed, 3));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(notices(&app.messages("p1").await), 1, "told exactly once");
    assert_eq!(llm.request_count(), 1);
    assert_eq!(app.app.store.inbox_count(InboxStatus::Failed).await.unwrap(), 1);

    // The owner sees it in /status.
    let (status, _) = app.post("p2", "local", "/status").await;
    assert_eq!(status, 202);
    let deadline = Instant::now() + Duration::from_secs(20);
    let status_text = loop {
        let found = app.messages("p2").await.into_iter().find(|m| m["role"] == "assistant");
        match found {
            Some(m) if m["text"].as_str().unwrap_or_default().contains("Failed events") => break m["text"].clone(),
            _ if Instant::now() > deadline => panic!("no /status answer"),
            _ => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    };
    let status_text = status_text.as_str().unwrap();
    assert!(status_text.contains("Failed events: 1 (see `butler inbox list --failed`)"), "{status_text}");
    app.stop().await;
}

/// A read-only tool whose output holds a NUL.
struct NulTool(butler::tools::ToolSpec);

#[async_trait::async_trait]
impl butler::tools::Tool for NulTool {
    fn spec(&self) -> &butler::tools::ToolSpec {
        &self.0
    }

    async fn call(
        &self,
        _ctx: &butler::tools::ToolCtx,
        _args: serde_json::Value,
    ) -> Result<String, butler::tools::ToolError> {
        Ok("out\0put".into())
    }
}

#[tokio::test]
async fn nul_from_the_model_or_a_tool_on_postgres_is_committed_and_delivered_sanitized() {
    let db = PgTestDb::create().await;
    let llm = FakeLlm::start().await;
    let (mut cfg, _dir) = config(Some(&llm.openai_url()));
    cfg.database.url = Secret::new(db.url.clone());
    let spec = butler::tools::ToolSpec {
        name: "nul".into(),
        description: "answers with a NUL".into(),
        parameters: serde_json::json!({"type": "object", "properties": {}}),
        read_only: true,
    };
    let app = TestApp::start_with(cfg, None, vec![std::sync::Arc::new(NulTool(spec))]).await;
    // The model's text before a tool call, the tool's result and the final answer each hold one.
    llm.on("look", Reply::tool_call("nul", serde_json::json!({})).with_text("Let me\0 look."));
    llm.on("look", Reply::text("Found\0 it."));
    let (status, body) = app.post("nul5", "local", "look it up").await;
    assert_eq!(status, 202, "{body}");
    let id = body["event_id"].as_str().unwrap();
    let row = wait_status(&app, id, InboxStatus::Done, 30).await;
    assert_eq!(row.status, InboxStatus::Done, "the turn is committed on Postgres: {row:?}");
    let replies = app.wait_replies("nul5", 1, 10).await;
    assert_eq!(replies.last().unwrap()["text"], "Let me\u{FFFD} look.\n\nFound\u{FFFD} it.", "delivered sanitized");
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 2, "one model call per step, no retry of the turn");
    assert_eq!(reqs[1].last_tool_result().as_deref(), Some("out\u{FFFD}put"), "the transcript holds the result");
    app.stop().await;
    drop(db);
}
