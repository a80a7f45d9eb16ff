//! The approval lifecycle through the web chat: ask (record + buttons, the turn parks, the
//! session still answers), approve once, always for this session, deny, expiry, /stop and a new
//! message while waiting, changed arguments, and the audit trail.

use crate::support::app::{config, TestApp};
use crate::support::fake_llm::{FakeLlm, Reply};
use crate::{approval_id, click, refused_click, request_in, wait_for, Touch};
use butler::store::ApprovalStatus;
use serde_json::{json, Value};

async fn start(adjust: impl FnOnce(&mut butler::config::Config)) -> (TestApp, FakeLlm, std::sync::Arc<Touch>) {
    let llm = FakeLlm::start().await;
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    adjust(&mut cfg);
    let touch = Touch::new();
    let app = TestApp::start_with(cfg, Some(dir), vec![touch.clone()]).await;
    (app, llm, touch)
}

fn texts(msgs: &[Value]) -> Vec<String> {
    msgs.iter().filter(|m| m["role"] == "assistant").map(|m| m["text"].as_str().unwrap().to_string()).collect()
}

/// Asks the fake model for `touch {name}` when the user says `say`, then `after` once answered.
fn script(llm: &FakeLlm, say: &str, name: &str, after: &str) {
    llm.on(say, Reply::tool_call("touch", json!({"name": name})).with_text("Let me do that."));
    llm.on(say, Reply::text(after));
}

#[tokio::test]
async fn approve_once_runs_the_call_exactly_once_and_edits_the_request() {
    let (app, llm, touch) = start(|_| {}).await;
    script(&llm, "touch the lamp", "lamp", "The lamp is touched.");
    app.post("a1", "local", "touch the lamp").await;
    let msgs = wait_for(&app, "a1", "the approval request", |m| request_in(m).is_some()).await;
    let request = request_in(&msgs).unwrap().clone();
    let labels: Vec<&str> =
        request["buttons"].as_array().unwrap().iter().map(|b| b["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["Approve once", "Always for this session", "Deny"]);
    assert!(request["text"].as_str().unwrap().contains("touch `lamp`"), "{request}");
    assert_eq!(touch.runs(), 0, "nothing ran before approval");
    assert_eq!(llm.request_count(), 1, "the turn is parked, not polling the model");

    // The record: random 128-bit id, bound to the call and its exact arguments, 10 minutes.
    let id = approval_id(&request);
    assert_eq!(id.len(), 32);
    let row = app.app.store.approval_get(&id).await.unwrap().unwrap();
    assert_eq!(row.status, ApprovalStatus::Pending);
    assert_eq!(row.tool, "touch");
    assert_eq!(row.args_hash, butler::permissions::approval::args_hash(r#"{"name":"lamp"}"#));
    assert_eq!(row.approvers, ["requester"]);
    assert!((row.expires_ms - row.created_ms - 600_000).abs() < 1000);

    // The session still answers while the turn waits.
    app.post("a1", "local", "/status").await;
    wait_for(&app, "a1", "/status", |m| texts(m).iter().any(|t| t.starts_with("Session:"))).await;

    assert_eq!(click(&app, "a1", "local", &format!("ap:{id}:once")).await, 202);
    let msgs = wait_for(&app, "a1", "the final answer", |m| texts(m).iter().any(|t| t == "The lamp is touched.")).await;
    assert_eq!(touch.runs(), 1);
    let edited = msgs.iter().find(|m| m["id"] == request["id"]).unwrap();
    assert!(edited["text"].as_str().unwrap().starts_with("✅ Approved by local"), "{edited}");
    assert!(edited["buttons"].as_array().unwrap().is_empty());
    assert_eq!(llm.last_request().unwrap().last_tool_result().unwrap(), "touched lamp");

    // A second click is refused at once, says why, and changes nothing.
    let why = refused_click(&app, "a1", &format!("ap:{id}:once")).await;
    assert!(why.contains("already answered (approved"), "{why}");
    assert_eq!(touch.runs(), 1);
    assert_eq!(llm.request_count(), 2);
    app.stop().await;
}

#[tokio::test]
async fn deny_and_always_for_this_session() {
    let (app, llm, touch) = start(|_| {}).await;
    script(&llm, "touch the door", "door", "Fine, I won't.");
    app.post("d1", "local", "touch the door").await;
    let msgs = wait_for(&app, "d1", "the request", |m| request_in(m).is_some()).await;
    let id = approval_id(request_in(&msgs).unwrap());
    click(&app, "d1", "local", &format!("ap:{id}:deny")).await;
    wait_for(&app, "d1", "the answer", |m| texts(m).iter().any(|t| t == "Fine, I won't.")).await;
    assert_eq!(touch.runs(), 0);
    assert_eq!(llm.last_request().unwrap().last_tool_result().unwrap(), "error: not run: local denied it");

    // "Always for this session": the next call of the tool in this session runs unasked...
    script(&llm, "touch the wall", "wall", "Wall touched.");
    app.post("d1", "local", "touch the wall").await;
    let msgs = wait_for(&app, "d1", "the second request", |m| {
        m.iter().filter(|x| x["buttons"].as_array().is_some_and(|b| !b.is_empty())).count() == 1
    })
    .await;
    let id = approval_id(request_in(&msgs).unwrap());
    click(&app, "d1", "local", &format!("ap:{id}:session")).await;
    wait_for(&app, "d1", "the answer", |m| texts(m).iter().any(|t| t == "Wall touched.")).await;
    script(&llm, "touch the roof", "roof", "Roof touched.");
    app.post("d1", "local", "touch the roof").await;
    wait_for(&app, "d1", "the unasked run", |m| texts(m).iter().any(|t| t.ends_with("Roof touched."))).await;
    assert_eq!(touch.runs(), 2);
    // ...but another session asks again.
    script(&llm, "touch the floor", "floor", "Floor touched.");
    app.post("d2", "local", "touch the floor").await;
    wait_for(&app, "d2", "a new request", |m| request_in(m).is_some()).await;
    assert_eq!(touch.runs(), 2);
    app.stop().await;
}

#[tokio::test]
async fn an_unanswered_request_expires_as_a_denial() {
    let (app, llm, touch) = start(|c| c.permissions.approval_timeout_secs = 1).await;
    script(&llm, "touch the bell", "bell", "Nobody said yes, so I left the bell alone.");
    app.post("e1", "local", "touch the bell").await;
    let msgs = wait_for(&app, "e1", "the answer after expiry", |m| {
        texts(m).iter().any(|t| t == "Nobody said yes, so I left the bell alone.")
    })
    .await;
    let request =
        msgs.iter().find(|m| m["text"].as_str().unwrap().starts_with("⌛ Expired")).expect("the edited request");
    assert!(request["buttons"].as_array().unwrap().is_empty());
    assert_eq!(touch.runs(), 0);
    assert!(llm.last_request().unwrap().last_tool_result().unwrap().contains("expired"));
    // A late click changes nothing.
    let pool = sqlx::SqlitePool::connect(&app.db_url()).await.unwrap();
    let id: String = sqlx::query_scalar("SELECT id FROM approvals").fetch_one(&pool).await.unwrap();
    pool.close().await;
    let why = refused_click(&app, "e1", &format!("ap:{id}:once")).await;
    assert!(why.contains("already answered (expired"), "{why}");
    assert_eq!(touch.runs(), 0);
    app.stop().await;
}

#[tokio::test]
async fn stop_or_a_new_message_cancels_a_waiting_request() {
    let (app, llm, touch) = start(|_| {}).await;
    script(&llm, "touch the cat", "cat", "unused");
    app.post("s1", "local", "touch the cat").await;
    wait_for(&app, "s1", "the request", |m| request_in(m).is_some()).await;
    app.post("s1", "local", "/stop").await;
    let msgs = wait_for(&app, "s1", "the stop", |m| texts(m).iter().any(|t| t.ends_with("⏹ Stopped."))).await;
    assert!(texts(&msgs).iter().any(|t| t.starts_with("⏹ Cancelled by local")), "{msgs:#?}");
    assert_eq!(llm.request_count(), 1, "stopping does not ask the model");

    script(&llm, "touch the dog", "dog", "unused");
    app.post("s1", "local", "touch the dog").await;
    wait_for(&app, "s1", "the second request", |m| request_in(m).is_some()).await;
    app.post("s1", "local", "never mind, hello").await;
    let msgs = wait_for(&app, "s1", "the answer", |m| texts(m).iter().any(|t| t == "echo: never mind, hello")).await;
    assert!(texts(&msgs).iter().any(|t| t.contains("a new message came first")), "{msgs:#?}");
    let last = llm.last_request().unwrap();
    let results: Vec<String> = last
        .messages()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect();
    assert!(results.iter().any(|r| r.contains("cancelled because a new message came first")), "{results:?}");
    assert_eq!(touch.runs(), 0);
    app.stop().await;
}

#[tokio::test]
async fn changed_arguments_are_not_run_and_every_decision_is_audited() {
    let (app, llm, touch) = start(|_| {}).await;
    script(&llm, "touch the safe", "safe", "Done.");
    app.post("c1", "local", "touch the safe").await;
    let msgs = wait_for(&app, "c1", "the request", |m| request_in(m).is_some()).await;
    let id = approval_id(request_in(&msgs).unwrap());
    // Someone changes the recorded call behind Butler's back.
    let pool = sqlx::SqlitePool::connect(&app.db_url()).await.unwrap();
    sqlx::query("UPDATE messages SET tool_calls = replace(tool_calls, 'safe', 'vault') WHERE tool_calls LIKE '%safe%'")
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    // The actor's cached transcript still has the original; restart the app so it reloads.
    let (cfg, dir) = (app.config.clone(), app._dir);
    app.app.shutdown().await;
    let app = TestApp::start_with(cfg, dir, vec![touch.clone()]).await;
    click(&app, "c1", "local", &format!("ap:{id}:once")).await;
    wait_for(&app, "c1", "the answer", |m| texts(m).iter().any(|t| t == "Done.")).await;
    assert_eq!(touch.runs(), 0, "a call whose arguments changed is not run");
    assert!(llm.last_request().unwrap().last_tool_result().unwrap().contains("arguments changed"));
    let outcomes: Vec<String> =
        app.app.store.audit_recent(10).await.unwrap().into_iter().rev().map(|a| a.outcome).collect();
    assert_eq!(outcomes, ["asked", "approved", "refused"]);
    app.stop().await;
}
