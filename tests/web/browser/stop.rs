//! Stop with a normal click: a press held ~120 ms on the draft's Stop button, or on the Send
//! button that turns into Stop while a reply streams, stops the reply although the draft keeps
//! changing under the pointer. Must never use WebDriver's instant click for these presses.

use super::driver::*;
use crate::support::app::{config, TestApp};
use crate::support::fake_llm::{FakeLlm, Reply};
use fantoccini::Locator;
use serde_json::json;
use std::time::Duration;

/// How long a press lasts: a person's click, not WebDriver's instant one.
const HOLD: Duration = Duration::from_millis(150);

/// Which button the held click presses.
#[derive(Clone, Copy, Debug)]
enum Target {
    /// The Stop button of the streaming reply.
    DraftStop,
    /// The composer's Send button, which shows Stop while the reply streams.
    SendAsStop,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_click_on_the_drafts_stop_button_stops_the_reply() {
    held_click_stops(Target::DraftStop).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_turns_into_stop_and_a_held_click_stops_the_reply() {
    held_click_stops(Target::SendAsStop).await;
}

async fn held_click_stops(target: Target) {
    let fake = FakeLlm::start().await;
    // Short chunks on one line: the draft changes often, its layout hardly moves.
    let chunks: Vec<String> = (0..120).map(|i| format!("w{} ", i % 10)).collect();
    fake.on("long story", Reply::chunks(chunks).chunk_delay(Duration::from_millis(250)));
    let (cfg, dir) = config(Some(&fake.openai_url()));
    let app = TestApp::start(cfg, Some(dir)).await;
    let (_driver, page) = open_browser().await;
    load_page(&page, &app).await;

    let send = js(&page, "const b = document.getElementById('send'); return [b.textContent, b.disabled];").await;
    assert_eq!(send, json!(["Send", false]), "before a reply streams the button is Send");
    send_message(&page, "Tell me a long story").await;
    wait_js(
        &page,
        "the Stop button on the streaming reply, and Send showing Stop",
        "const b = document.querySelector('#messages .msg.assistant.streaming .buttons button');
         const s = document.getElementById('send');
         return b && !b.disabled && b.textContent === 'Stop' && s.textContent === 'Stop' && !s.disabled;",
    )
    .await;

    // Mark the nodes, then let a few updates arrive: the message and its Stop button keep
    // their nodes while the text grows.
    js(
        &page,
        "const m = document.querySelector('#messages .msg.assistant.streaming');
         window.__msg = m; window.__stop = m.querySelector('.buttons button');
         window.__text = m.querySelector('.text').textContent;
         window.__updates = 0;
         new MutationObserver(() => window.__updates++)
           .observe(m.querySelector('.text'), { subtree: true, childList: true, characterData: true });
         return true;",
    )
    .await;
    wait_js(
        &page,
        "two more streamed updates with the same nodes",
        "const m = document.querySelector('#messages .msg.assistant.streaming');
         if (window.__updates < 2) return false;
         return m === window.__msg && m.querySelector('.buttons button') === window.__stop
           && m.querySelector('.text').textContent !== window.__text;",
    )
    .await;

    let css = match target {
        Target::DraftStop => "#messages .msg.assistant.streaming .buttons button",
        Target::SendAsStop => "#send",
    };
    let button = page.find(Locator::Css(css)).await.expect("the button to press");
    held_click(&page, &button, HOLD).await;

    let text = wait_final_reply(&page, "the stopped reply", "t.trim().endsWith('Stopped.')").await;
    assert!(text.starts_with("w0"), "the partial text stays: {text:?}");
    assert!(text.matches('w').count() < 120, "the reply was stopped before its end: {text:?}");
    wait_js(
        &page,
        "Send to come back",
        "const s = document.getElementById('send'); return s.textContent === 'Send' && !s.disabled;",
    )
    .await;
    let conversation = js(&page, "return localStorage.getItem('butler.conversation');").await;
    let stored = app.messages(conversation.as_str().expect("a conversation")).await;
    let reply = stored.iter().rfind(|m| m["role"] == "assistant").expect("a stored reply");
    assert!(reply["text"].as_str().unwrap().ends_with("Stopped."), "{target:?}: {reply}");
    let kept =
        js(&page, "return document.contains(window.__msg) && window.__msg.classList.contains('assistant');").await;
    assert_eq!(kept, json!(true), "the reply kept its node from draft to final");

    page.close().await.expect("close the browser");
    app.stop().await;
}
