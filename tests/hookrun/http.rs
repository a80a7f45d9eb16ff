//! HTTP hooks against a local axum server started per test: 2xx, 500, a server that never
//! answers, an explicit block in the body, a redirect, and nobody listening. They must never
//! reach beyond 127.0.0.1.

use crate::{http_hook, run, Expect, HookExt};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Redirect;
use axum::routing::post;
use axum::{Json, Router};
use butler::config::HookEvent;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const PRE: HookEvent = HookEvent::PreToolUse;

/// What `/ok` received: the `x-butler-hook-event` header and the JSON body.
type Received = Arc<Mutex<Vec<(String, Value)>>>;

/// Starts the hook server; returns its base URL and what `/ok` receives.
async fn start() -> (String, Received) {
    let received = Received::default();
    let app = Router::new()
        .route("/ok", post(record))
        .route("/fail", post(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "boom: database down\nmore") }))
        .route(
            "/hang",
            post(|| async {
                tokio::time::sleep(Duration::from_secs(120)).await;
                "too late"
            }),
        )
        .route("/block", post(|| async { Json(json!({"decision": "block", "reason": "not during the freeze"})) }))
        .route("/not-json", post(|| async { "{\"decision\": \"block\"" }))
        .route("/redirect", post(|| async { Redirect::temporary("/ok") }))
        .with_state(received.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, received)
}

async fn record(State(received): State<Received>, headers: HeaderMap, body: String) -> &'static str {
    let event = headers.get("x-butler-hook-event").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    let body = serde_json::from_str(&body).unwrap_or(Value::String(body));
    received.lock().unwrap().push((event, body));
    "ok"
}

/// A loopback URL nobody listens on.
fn closed_url() -> String {
    let port = crate::support::proc::free_port();
    format!("http://127.0.0.1:{port}/hook")
}

#[tokio::test]
async fn http_answers_decide_the_outcome() {
    use Expect::*;
    let (base, _) = start().await;
    let closed = closed_url();
    // (url, timeout_secs, block_on_failure, expected outcome for pre_tool_use)
    let cases: Vec<(String, u64, bool, Expect)> = vec![
        (format!("{base}/ok"), 5, true, Continue),
        (format!("{base}/not-json"), 5, true, Continue),
        (format!("{base}/block"), 5, false, BlockExactly("not during the freeze")),
        (format!("{base}/fail"), 5, false, Continue),
        (format!("{base}/fail"), 5, true, BlockWith(&["answered HTTP 500", "boom: database down"])),
        (format!("{base}/redirect"), 5, true, BlockWith(&["answered HTTP 307"])),
        (format!("{base}/hang"), 1, false, Continue),
        (format!("{base}/hang"), 1, true, BlockWith(&["timed out after 1s"])),
        (closed.clone(), 5, false, Continue),
        (closed, 5, true, BlockWith(&["could not be reached", "cannot connect"])),
    ];
    for (url, timeout, block_on_failure, expect) in cases {
        let hooks = [http_hook(PRE, &url).timeout(timeout).blocking(block_on_failure)];
        let outcome = run(&hooks, PRE, Some("shell"), &json!({"arguments": {}})).await;
        expect.check(&outcome, &format!("{url} (block_on_failure = {block_on_failure})"));
    }
}

#[tokio::test]
async fn http_hook_receives_the_payload() {
    let (base, received) = start().await;
    let hooks = [http_hook(HookEvent::PostToolUse, &format!("{base}/ok")).blocking(true)];
    let payload = json!({"arguments": {"path": "notes.md"}, "result": "42 lines", "is_error": false});
    let outcome = run(&hooks, HookEvent::PostToolUse, Some("file_read"), &payload).await;
    Expect::Continue.check(&outcome, "post_tool_use");
    let got = received.lock().unwrap().clone();
    let expected = json!({
        "event": "post_tool_use",
        "tool": "file_read",
        "arguments": {"path": "notes.md"},
        "result": "42 lines",
        "is_error": false,
    });
    assert_eq!(got, vec![("post_tool_use".to_string(), expected)]);
}

#[tokio::test]
async fn failure_reasons_never_show_the_url_path_or_query() {
    let (base, _) = start().await;
    let url = format!("{base}/fail?token=s3cr3t-hook-token");
    let hooks = [http_hook(PRE, &url).blocking(true)];
    let outcome = run(&hooks, PRE, Some("shell"), &json!({})).await;
    let label = format!("hook `POST {base}/…`");
    Expect::BlockWith(&["answered HTTP 500"]).check(&outcome, &url);
    let butler::hooks::HookOutcome::Block(reason) = outcome else { unreachable!() };
    assert!(reason.starts_with(&label), "{reason:?} should start with {label:?}");
    assert!(!reason.contains("s3cr3t") && !reason.contains("/fail"), "{reason:?} shows the URL");
}
