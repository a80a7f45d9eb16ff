//! Sessions through the web API: queueing during a turn, /stop and the Stop button, /new,
//! duplicate events, the event stream, and 1,000 concurrent conversations that never mix.

use crate::support::app::{config, TestApp};
use crate::support::fake_llm::{FakeLlm, Reply};
use futures::StreamExt;
use serde_json::{json, Value};
use std::time::Duration;

fn users_in(req: &crate::support::fake_llm::RecordedRequest) -> Vec<String> {
    req.messages()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// A reply that streams slowly: 40 words, 150 ms apart.
fn slow_reply() -> Reply {
    Reply::chunks((0..40).map(|i| format!("word{i} "))).chunk_delay(Duration::from_millis(150))
}

/// Waits until the conversation shows a streaming draft (an assistant message with buttons).
async fn wait_for_draft(app: &TestApp, conv: &str) -> Value {
    for _ in 0..400 {
        let draft = app
            .messages(conv)
            .await
            .into_iter()
            .find(|m| m["role"] == "assistant" && m["buttons"].as_array().is_some_and(|b| !b.is_empty()));
        if let Some(d) = draft {
            return d;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("no streaming draft appeared in {conv}");
}

#[tokio::test]
async fn a_message_during_a_turn_is_queued_and_answered_after() {
    let llm = FakeLlm::start().await;
    let (cfg, dir) = config(Some(&llm.openai_url()));
    let app = TestApp::start(cfg, Some(dir)).await;
    llm.on("first", Reply::text("answer one").first_byte_delay(Duration::from_millis(400)));
    app.post("q", "local", "first").await;
    assert!(llm.wait_for_requests(1, Duration::from_secs(10)).await);
    app.post("q", "local", "second").await;
    let replies = app.wait_replies("q", 2, 30).await;
    let texts: Vec<&str> = replies.iter().map(|r| r["text"].as_str().unwrap()).collect();
    assert_eq!(texts, ["answer one", "echo: second"]);
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 2, "one model call per message");
    assert_eq!(users_in(&reqs[1]), ["first", "second"], "the second turn ran after the first, with its history");
    app.stop().await;
}

#[tokio::test]
async fn stop_command_and_stop_button_interrupt_the_turn() {
    let llm = FakeLlm::start().await;
    let (cfg, dir) = config(Some(&llm.openai_url()));
    let app = TestApp::start(cfg, Some(dir)).await;

    // /stop as a command.
    llm.on("long story", slow_reply());
    app.post("s1", "local", "tell me a long story").await;
    wait_for_draft(&app, "s1").await;
    app.post("s1", "local", "/stop").await;
    let replies = app.wait_replies("s1", 1, 30).await;
    let text = replies[0]["text"].as_str().unwrap();
    assert!(text.ends_with("⏹ Stopped."), "{text}");
    assert!(text.starts_with("word0") && !text.contains("word39"), "cut off mid-stream: {text}");
    assert_eq!(replies.len(), 1, "/stop itself adds no message");

    // The Stop button on the streaming draft does the same.
    llm.on("another story", slow_reply());
    app.post("s2", "local", "another story").await;
    let draft = wait_for_draft(&app, "s2").await;
    let action = draft["buttons"][0]["action"].as_str().unwrap().to_string();
    assert_eq!(draft["buttons"][0]["label"], "Stop");
    let r = app
        .http
        .post(app.url("/api/v1/actions"))
        .json(&json!({"conversation": "s2", "user": "local", "action": action}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    let replies = app.wait_replies("s2", 1, 30).await;
    let text = replies[0]["text"].as_str().unwrap();
    assert!(text.ends_with("⏹ Stopped.") && !text.contains("word39"), "{text}");
    assert!(replies[0]["buttons"].as_array().unwrap().is_empty(), "the button is gone");

    // /stop with nothing running says so.
    app.post("s2", "local", "/stop").await;
    let replies = app.wait_replies("s2", 2, 30).await;
    assert_eq!(replies[1]["text"], "Nothing is running.");
    app.stop().await;
}

#[tokio::test]
async fn new_starts_a_fresh_session() {
    let llm = FakeLlm::start().await;
    let (cfg, dir) = config(Some(&llm.openai_url()));
    let app = TestApp::start(cfg, Some(dir)).await;
    app.post("n", "local", "remember the number 42").await;
    app.wait_replies("n", 1, 30).await;
    app.post("n", "local", "/new").await;
    app.wait_replies("n", 2, 30).await;
    app.post("n", "local", "what was the number?").await;
    app.wait_replies("n", 3, 30).await;
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(users_in(&reqs[1]), ["what was the number?"], "the old transcript is not sent");
    app.stop().await;
}

#[tokio::test]
async fn a_repeated_client_id_is_one_event() {
    let llm = FakeLlm::start().await;
    let (cfg, dir) = config(Some(&llm.openai_url()));
    let app = TestApp::start(cfg, Some(dir)).await;
    let body = json!({"conversation": "d", "user": "local", "text": "once please", "id": "m-1"});
    let mut ids = Vec::new();
    for want_duplicate in [false, true, true] {
        let r = app.http.post(app.url("/api/v1/messages")).json(&body).send().await.unwrap();
        assert_eq!(r.status(), 202);
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["duplicate"], want_duplicate);
        ids.push(v["event_id"].as_str().unwrap().to_string());
    }
    assert!(ids.iter().all(|i| *i == ids[0]));
    app.wait_replies("d", 1, 30).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let all = app.messages("d").await;
    assert_eq!(all.len(), 2, "one user message, one reply: {all:?}");
    assert_eq!(llm.request_count(), 1);
    app.stop().await;
}

#[tokio::test]
async fn the_event_stream_carries_created_and_updated_messages() {
    let llm = FakeLlm::start().await;
    let (cfg, dir) = config(Some(&llm.openai_url()));
    let app = TestApp::start(cfg, Some(dir)).await;
    app.post("sse", "local", "hello").await;
    app.wait_replies("sse", 1, 30).await;
    let resp = app.http.get(app.url("/api/v1/conversations/sse/stream")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert!(resp.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    llm.on(
        "stream me",
        Reply::chunks(["part one, ", "part two, ", "part three."]).chunk_delay(Duration::from_millis(250)),
    );
    app.post("sse", "local", "stream me").await;

    let mut body = resp.bytes_stream();
    let mut buf = String::new();
    let mut events: Vec<(String, Value)> = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !events
        .iter()
        .any(|(k, v)| k == "updated" && v["text"] == "part one, part two, part three." && v.get("draft").is_none())
    {
        let chunk = tokio::time::timeout_at(deadline, body.next()).await.expect("events in time").unwrap().unwrap();
        buf.push_str(&String::from_utf8_lossy(&chunk));
        events.extend(crate::support::sse::drain_events(&mut buf));
    }
    let kinds: Vec<&str> = events.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(kinds[0], "created", "the user's message first: {kinds:?}");
    assert_eq!(events[0].1["role"], "user");
    assert!(events.iter().any(|(k, v)| k == "created" && v["role"] == "assistant"), "the draft was created: {kinds:?}");
    let drafts: Vec<&str> =
        events.iter().filter(|(_, v)| v["draft"] == true).map(|(_, v)| v["text"].as_str().unwrap()).collect();
    assert!(drafts.iter().any(|t| t.contains("part one") && !t.contains("part three")), "a partial draft: {drafts:?}");
    app.stop().await;
}

#[tokio::test]
async fn a_thousand_concurrent_conversations_never_mix() {
    let llm = FakeLlm::start().await;
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    cfg.database.max_connections = 4;
    let app = TestApp::start(cfg, Some(dir)).await;
    const N: usize = 1000;
    for round in ["secret", "again"] {
        futures::stream::iter(0..N)
            .for_each_concurrent(64, |i| {
                let app = &app;
                async move {
                    let (status, _) = app.post(&format!("c{i}"), "local", &format!("{round}-{i}")).await;
                    assert_eq!(status, 202);
                }
            })
            .await;
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    for i in 0..N {
        let conv = format!("c{i}");
        let replies = loop {
            let r = app.wait_replies(&conv, 2, 5).await;
            if r.len() >= 2 || std::time::Instant::now() > deadline {
                break r;
            }
        };
        let texts: Vec<&str> = replies.iter().map(|r| r["text"].as_str().unwrap()).collect();
        assert_eq!(texts, [format!("echo: secret-{i}"), format!("echo: again-{i}")], "conversation {i}");
    }
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 2 * N);
    for r in reqs {
        let last = r.last_user_text();
        let i = last.rsplit('-').next().unwrap();
        for u in users_in(&r) {
            assert!(u.ends_with(&format!("-{i}")), "conversation {i} saw {u}");
        }
        if last.starts_with("again") {
            assert_eq!(users_in(&r), [format!("secret-{i}"), format!("again-{i}")]);
        }
    }
    app.stop().await;
}
