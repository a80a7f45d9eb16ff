//! Tries of a failing event: a try never asks the model again for an answer it already gave,
//! whatever else the conversation says meanwhile, and an event set aside leaves no reply draft
//! streaming (its bubble is finished, its outbox row is no `draft`).

use crate::support::app::{config, TestApp};
use crate::support::fake_llm::{FakeLlm, Reply};
use butler::store::{InboxRow, InboxStatus};
use std::time::{Duration, Instant};

/// Makes every store write matching `sql`'s `WHEN` fail, as a broken database would.
async fn poison(app: &TestApp, trigger: &str) {
    use sqlx::Connection;
    let mut db = sqlx::SqliteConnection::connect(&app.db_url()).await.unwrap();
    sqlx::query(sqlx::AssertSqlSafe(trigger.to_string())).execute(&mut db).await.unwrap();
}

/// Waits (up to 30 s) until the event's row satisfies `pred`, and returns it.
async fn wait_row(app: &TestApp, id: &str, what: &str, pred: impl Fn(&InboxRow) -> bool) -> InboxRow {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let row = app.app.store.inbox_get(id).await.unwrap().expect("stored");
        if pred(&row) {
            return row;
        }
        assert!(Instant::now() < deadline, "{what}: {row:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// How many model requests carried `text` in any message.
fn asked_with(llm: &FakeLlm, text: &str) -> usize {
    llm.requests().iter().filter(|r| r.messages().iter().any(|m| m.to_string().contains(text))).count()
}

#[tokio::test]
async fn a_follow_up_never_makes_a_failing_message_reach_the_model_again() {
    let llm = FakeLlm::start().await;
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    cfg.limits.max_event_attempts = 3;
    let app = TestApp::start(cfg, Some(dir)).await;
    // The store fails for one message: its turn can never be committed.
    poison(
        &app,
        "CREATE TRIGGER poison BEFORE INSERT ON messages WHEN NEW.content = 'the failing one' \
         BEGIN SELECT RAISE(ABORT, 'poisoned'); END",
    )
    .await;
    let (status, body) = app.post("f1", "local", "the failing one").await;
    assert_eq!(status, 202);
    let failing = body["event_id"].as_str().unwrap().to_string();
    wait_row(&app, &failing, "the first try fails", |r| r.error.as_deref().is_some_and(|e| e.contains("poisoned")))
        .await;
    // A follow-up in the same conversation runs while the failing message waits for its retry.
    let (status, _) = app.post("f1", "local", "a follow-up").await;
    assert_eq!(status, 202);
    let replies = app.wait_replies("f1", 1, 30).await;
    assert!(replies.iter().any(|m| m["text"] == "echo: a follow-up"), "the follow-up is answered: {replies:?}");
    let row = wait_row(&app, &failing, "set aside", |r| r.status == InboxStatus::Failed).await;
    assert_eq!(row.attempts, 3, "every try was counted");
    assert_eq!(asked_with(&llm, "the failing one"), 1, "the failing message reached the model once");
    assert_eq!(asked_with(&llm, "a follow-up"), 1);
    app.stop().await;
}

#[tokio::test]
async fn an_event_set_aside_leaves_no_reply_draft_streaming() {
    let llm = FakeLlm::start().await;
    // Slow enough that the reply shows as a draft (with its Stop button) before the commit.
    llm.set_default(Reply::chunks((0..12).map(|i| format!("w{i} "))).chunk_delay(Duration::from_millis(60)));
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    cfg.limits.max_event_attempts = 2;
    let app = TestApp::start(cfg, Some(dir)).await;
    poison(&app, "CREATE TRIGGER poison BEFORE INSERT ON usage BEGIN SELECT RAISE(ABORT, 'poisoned'); END").await;
    let (status, body) = app.post("d1", "local", "stream then fail").await;
    assert_eq!(status, 202);
    let id = body["event_id"].as_str().unwrap().to_string();
    wait_row(&app, &id, "set aside", |r| r.status == InboxStatus::Failed).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    let shown = loop {
        let msgs = app.messages("d1").await;
        let replies: Vec<_> = msgs.iter().filter(|m| m["role"] == "assistant").cloned().collect();
        let settled = replies.iter().any(|m| m["text"] == butler::outbox::CUT_OFF)
            && replies.iter().all(|m| m["buttons"].as_array().is_none_or(|b| b.is_empty()));
        if settled || Instant::now() > deadline {
            break replies;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    let texts: Vec<&str> = shown.iter().map(|m| m["text"].as_str().unwrap_or_default()).collect();
    assert_eq!(texts.len(), 2, "the finished draft and the notice: {shown:#?}");
    assert_eq!(texts[0], butler::outbox::CUT_OFF, "the draft bubble is finished in place");
    assert!(texts[1].contains("could not process"), "{texts:?}");
    assert!(shown.iter().all(|m| m["buttons"].as_array().is_none_or(|b| b.is_empty())), "no Stop button left");
    let drafts = app.app.store.outbox_get(&butler::store::reply_key(&id)).await.unwrap();
    assert!(drafts.is_none(), "no draft row left under the reply's key: {drafts:?}");
    app.stop().await;
}
