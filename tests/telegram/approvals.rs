//! Point 4: approvals as inline keyboards. The callback data is the opaque approval id (at most
//! 64 bytes); every click is answered with answerCallbackQuery at once, before the slow work; a
//! click by someone who may not decide gets a short alert and changes nothing; the request is
//! edited to its outcome (buttons gone), and a click on it afterwards changes nothing either.

use crate::support::fake_llm::Reply;
use crate::support::fake_telegram::updates::{callback, group, user};
use crate::support::fake_telegram::BOT_USERNAME;
use crate::support::touch::Touch;
use crate::{settle, Tg, ALICE, GROUP, MALLORY};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long the tool works: the click's answer must not wait for it.
const SLOW: Duration = Duration::from_secs(1);

fn touch() -> Arc<Touch> {
    Touch::slow(SLOW)
}

#[tokio::test]
async fn inline_keyboard_approvals() {
    let tool = touch();
    let tg = Tg::start_with(|_| {}, vec![tool.clone()]).await;
    tg.polling().await;
    tg.llm.on("lamp", Reply::tool_call("touch", json!({"name": "lamp"})));
    tg.llm.on("lamp", Reply::text("lamp done"));
    let alice = user(ALICE, "Alice");
    tg.fake.push(group(GROUP, 10, alice.clone(), "touch the lamp", Some(BOT_USERNAME)));

    let shown = tg.fake.wait_chat(GROUP, 20, "the approval request", |m| m.iter().any(|m| m.buttons.len() == 3)).await;
    let request = shown.iter().find(|m| m.buttons.len() == 3).unwrap().clone();
    assert!(request.text.contains("Approval needed") && request.text.contains("touch lamp"), "{}", request.text);
    for (label, data) in &request.buttons {
        assert!(data.len() <= 64, "{label}: {data}");
        let parts: Vec<&str> = data.split(':').collect();
        assert_eq!(parts[0], "ap");
        assert!(parts[1].len() == 32 && parts[1].chars().all(|c| c.is_ascii_hexdigit()), "an opaque id: {data}");
        assert!(["once", "session", "deny"].contains(&parts[2]));
        assert!(!data.contains("lamp"), "never the tool's arguments");
    }
    let once = request.buttons[0].1.clone();
    let on = tg.fake.message_json(GROUP, request.id);

    // Mallory may talk to Butler but did not ask: a short alert, nothing changes.
    tg.fake.push(callback("q-mallory", user(MALLORY, "Mallory"), &on, &once));
    let answers = tg.fake.wait_calls("answerCallbackQuery", 1, 10).await;
    assert_eq!(answers[0].body["callback_query_id"], "q-mallory");
    assert_eq!(answers[0].body["show_alert"], true);
    let alert = answers[0].body["text"].as_str().unwrap();
    assert!(alert.contains("only the person who asked") && alert.chars().count() <= 200, "{alert}");
    settle().await;
    let still = tg.fake.message(GROUP, request.id).unwrap();
    assert_eq!((still.edits, still.buttons.len()), (0, 3), "the request is unchanged");
    assert!(tool.runs() == 0);

    // Alice approves: the click is acknowledged at once, then the tool runs and the request
    // shows the outcome without buttons.
    let clicked = Instant::now();
    tg.fake.push(callback("q-alice", alice.clone(), &on, &once));
    let answers = tg.fake.wait_calls("answerCallbackQuery", 2, 10).await;
    let ack = &answers[1];
    assert_eq!(ack.body["callback_query_id"], "q-alice");
    assert!(
        ack.body.get("text").is_none() && ack.body.get("show_alert").is_none(),
        "a bare acknowledgement: {}",
        ack.body
    );
    assert!(
        ack.at.duration_since(clicked) < Duration::from_millis(500),
        "answered in {:?}",
        ack.at.duration_since(clicked)
    );
    let done =
        tg.fake.wait_chat(GROUP, 20, "the outcome and the answer", |m| m.iter().any(|m| m.text == "lamp done")).await;
    let outcome = done.iter().find(|m| m.id == request.id).unwrap();
    assert!(outcome.text.starts_with("✅ Approved by Alice"), "{}", outcome.text);
    assert!(outcome.buttons.is_empty(), "no stale buttons left");
    let runs = tool.started();
    assert_eq!(runs.len(), 1);
    assert!(ack.at < runs[0] + SLOW, "acknowledged before the slow work was done");
    let edit = tg.fake.calls("editMessageText").into_iter().find(|c| c.body["message_id"] == request.id).unwrap();
    assert!(ack.at < edit.at, "acknowledged before the request was edited");

    // The same (now stale) button again: an alert, nothing runs, nothing changes.
    tg.fake.push(callback("q-again", alice, &on, &once));
    let answers = tg.fake.wait_calls("answerCallbackQuery", 3, 10).await;
    assert!(answers[2].body["text"].as_str().unwrap().contains("already answered"), "{}", answers[2].body);
    assert_eq!(answers[2].body["show_alert"], true);
    settle().await;
    assert_eq!(tool.runs(), 1);
    assert_eq!(tg.fake.message(GROUP, request.id).unwrap().edits, outcome.edits);
    assert_eq!(tg.fake.calls("answerCallbackQuery").len(), 3, "one answer per click");
    tg.stop().await;
}

/// The Stop button on a streaming draft: the click is acknowledged, the turn stops, and the
/// message ends without the button.
#[tokio::test]
async fn the_stop_button_on_a_streaming_draft() {
    let tg = Tg::start().await;
    tg.polling().await;
    let words: Vec<String> = (0..100).map(|i| format!("w{i} ")).collect();
    tg.llm.on("essay", Reply::chunks(words).chunk_delay(Duration::from_millis(100)));
    tg.fake.push(crate::support::fake_telegram::updates::dm(crate::OWNER, 1, "write an essay"));
    let draft = tg
        .fake
        .wait_chat(crate::OWNER, 20, "a draft with a Stop button", |m| m.first().is_some_and(|m| !m.buttons.is_empty()))
        .await
        .remove(0);
    let (label, stop) = draft.buttons[0].clone();
    assert!(label.contains("Stop") && stop.starts_with("stop:") && stop.len() <= 64, "{label} {stop}");
    let on = tg.fake.message_json(crate::OWNER, draft.id);
    tg.fake.push(callback("q-stop", user(crate::OWNER, "Owner"), &on, &stop));
    let answers = tg.fake.wait_calls("answerCallbackQuery", 1, 10).await;
    assert_eq!(answers[0].body["callback_query_id"], "q-stop");
    let done = tg
        .fake
        .wait_chat(crate::OWNER, 20, "the stopped reply", |m| m[0].text.contains("Stopped") && m[0].buttons.is_empty())
        .await;
    assert_eq!(done.len(), 1, "the draft itself shows the end");
    assert!(!done[0].text.contains("w99"), "the turn stopped early: {}", done[0].text);
    tg.stop().await;
}
