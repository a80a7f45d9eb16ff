//! Tries of a failing event: a try never asks the model again for an answer it already gave,
//! whatever else the conversation says meanwhile, and an event set aside leaves no reply draft
//! streaming (its bubble is finished, its outbox row is no `draft`). A try that finds the model
//! away (a stream that stalls, a 503) waits for it: the person is told once, and the message is
//! answered once the model is back.

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

/// Waits (up to 60 s: a model outage's tries are 15 and 30 s apart) until the event's row
/// satisfies `pred`, and returns it.
async fn wait_row(app: &TestApp, id: &str, what: &str, pred: impl Fn(&InboxRow) -> bool) -> InboxRow {
    let deadline = Instant::now() + Duration::from_secs(60);
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

#[tokio::test]
async fn a_message_the_model_did_not_answer_is_answered_once_it_is_back_and_the_person_is_told_once() {
    let llm = FakeLlm::start().await;
    // The model times out mid-stream (silent past the idle timeout), then fails with a 503;
    // the third try gets the default answer. The client itself does not retry (max_retries 0).
    llm.on("are you there", Reply::chunks(["Half ", "an ", "answer"]).pause_after(1, Duration::from_secs(5)));
    llm.on("are you there", Reply::server_error(503));
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    cfg.llm.idle_timeout_secs = 1;
    let app = TestApp::start(cfg, Some(dir)).await;
    let (status, body) = app.post("away", "local", "are you there").await;
    assert_eq!(status, 202);
    let id = body["event_id"].as_str().unwrap().to_string();
    let row =
        wait_row(&app, &id, "the first try defers", |r| r.attempts == 1 && r.status == InboxStatus::Pending).await;
    assert!(row.error.as_deref().is_some_and(|e| e.contains("did not answer in time")), "{row:?}");
    let row = wait_row(&app, &id, "answered after the model is back", |r| r.status == InboxStatus::Done).await;
    assert_eq!(row.attempts, 3, "two tries found the model away, the third was answered");
    let replies = app.wait_replies("away", 2, 10).await;
    let texts: Vec<&str> = replies.iter().map(|m| m["text"].as_str().unwrap_or_default()).collect();
    let told: Vec<&&str> = texts.iter().filter(|t| t.starts_with("⏳ The model is not answering right now")).collect();
    assert_eq!(told.len(), 1, "told once, not at every try: {texts:?}");
    assert!(told[0].contains("you don't need to send this again"), "{texts:?}");
    assert_eq!(texts.iter().filter(|t| **t == "echo: are you there").count(), 1, "answered once: {texts:?}");
    assert!(!texts.iter().any(|t| t.contains("Half an")), "the cut-off stream is not the answer: {texts:?}");
    assert_eq!(llm.request_count(), 3);
    app.stop().await;
}

#[test]
fn a_model_outage_waits_longer_between_tries_than_a_database_blip() {
    use butler::ingress::backoff_ms;
    use butler::session::retry::model_backoff_ms;
    for (attempts, db, model) in
        [(1, 1_000, 15_000), (2, 2_000, 30_000), (3, 4_000, 60_000), (5, 16_000, 240_000), (6, 32_000, 300_000)]
    {
        assert_eq!((backoff_ms(attempts), model_backoff_ms(attempts)), (db, model), "after try {attempts}");
    }
}
