//! The page's conversation list: switching shows each conversation's own messages, a `/?c=ID`
//! link opens that conversation, Rename shows the new title, Delete takes an entry away, and a
//! conversation Butler wrote to on its own carries a visible text mark. Must never reach into
//! the page's state: it looks only at what the page shows.

use super::driver::*;
use crate::support::app::{config, TestApp};
use crate::support::fake_llm::FakeLlm;
use fantoccini::key::Key;
use fantoccini::{Client, Locator};
use serde_json::json;

/// The texts of the messages the page shows.
const TEXTS: &str = "return [...document.querySelectorAll('#messages .msg .text')].map((t) => t.textContent);";

async fn wait_texts(page: &Client, what: &str, expected: serde_json::Value) {
    let script = format!(
        "const t = [...document.querySelectorAll('#messages .msg .text')].map((t) => t.textContent);
         return JSON.stringify(t) === {} ? t : null;",
        json!(expected.to_string())
    );
    wait_js(page, what, &script).await;
}

/// Clicks the list entry of conversation `id` (its title button, or `part` of it).
async fn click_entry(page: &Client, id: &str, part: &str) {
    let css = format!("#conv-list li[data-id='{id}'] {part}");
    page.find(Locator::Css(&css)).await.unwrap_or_else(|e| panic!("{css}: {e}")).click().await.expect("click");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_list_switches_links_renames_and_marks_butlers_conversations() {
    let fake = FakeLlm::start().await;
    let (cfg, dir) = config(Some(&fake.openai_url()));
    let app = TestApp::start(cfg, Some(dir)).await;
    for (conv, text) in [("c-first", "first topic"), ("c-second", "second topic")] {
        let (status, body) = app.post(conv, "local", text).await;
        assert_eq!(status, 202, "{body}");
        app.wait_replies(conv, 1, 30).await;
    }
    // Butler wrote to the first one on its own (as a scheduled briefing does).
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    app.app.store.web_mark_unprompted("web:c-first", now).await.expect("mark the conversation");

    let (_driver, page) = open_browser().await;
    // A /?c=ID link opens that conversation.
    page.goto(&app.url("/?c=c-second")).await.expect("open the link");
    wait_texts(&page, "the linked conversation", json!(["second topic", "echo: second topic"])).await;

    let entries = wait_js(
        &page,
        "both conversations in the list",
        "const e = [...document.querySelectorAll('#conv-list li')].map((li) => ({
           id: li.dataset.id, title: li.querySelector('.conv-title').textContent,
           mark: li.querySelector('.conv-mark') ? li.querySelector('.conv-mark').textContent : null,
           current: li.classList.contains('current'),
           visible: li.querySelector('.conv-open').getBoundingClientRect().width > 0 }));
         return e.length === 2 ? e : null;",
    )
    .await;
    let first = entries.as_array().unwrap().iter().find(|e| e["id"] == "c-first").expect("c-first listed");
    let second = entries.as_array().unwrap().iter().find(|e| e["id"] == "c-second").expect("c-second listed");
    assert_eq!(first["title"], "first topic", "{entries:#}");
    assert_eq!(first["mark"], "from Butler", "Butler's own conversation is marked in text: {entries:#}");
    assert_eq!(second["mark"], json!(null), "{entries:#}");
    assert_eq!(second["current"], true, "{entries:#}");
    assert_eq!(first["visible"], true, "the list is on screen: {entries:#}");

    // Switching shows the other conversation's messages, and the address follows.
    click_entry(&page, "c-first", ".conv-open").await;
    wait_texts(&page, "the first conversation", json!(["first topic", "echo: first topic"])).await;
    let url = page.current_url().await.expect("url");
    assert_eq!(url.query(), Some("c=c-first"), "{url}");
    click_entry(&page, "c-second", ".conv-open").await;
    wait_texts(&page, "the second conversation again", json!(["second topic", "echo: second topic"])).await;
    // New messages go to the open conversation.
    send_message(&page, "more on two").await;
    app.wait_replies("c-second", 2, 30).await;
    assert_eq!(app.messages("c-first").await.len(), 2, "the other conversation is untouched");

    // Rename: the new title shows, and the server kept it.
    click_entry(&page, "c-first", ".conv-rename").await;
    let field =
        page.find(Locator::Css("#conv-list li[data-id='c-first'] input.conv-title-input")).await.expect("field");
    // Select the old title and type over it (WebDriver's clear() would blur, which cancels).
    field
        .send_keys(&format!("{}a{}Morning briefing{}", Key::Control, Key::Null, Key::Enter))
        .await
        .expect("type the title");
    wait_js(
        &page,
        "the new title",
        "const li = document.querySelector(\"#conv-list li[data-id='c-first']\");
         return li && !li.querySelector('input') && li.querySelector('.conv-title').textContent === 'Morning briefing';",
    )
    .await;
    let list: serde_json::Value =
        app.http.get(app.url("/api/v1/conversations?user=local")).send().await.unwrap().json().await.unwrap();
    let renamed = list["conversations"].as_array().unwrap().iter().find(|c| c["id"] == "c-first").cloned();
    assert_eq!(renamed.expect("still listed")["title"], "Morning briefing", "{list:#}");

    // Delete (confirmed): the entry leaves the list.
    js(&page, "window.confirm = () => true; return true;").await;
    click_entry(&page, "c-first", ".conv-delete").await;
    wait_js(
        &page,
        "the deleted entry to leave the list",
        "return !document.querySelector(\"#conv-list li[data-id='c-first']\");",
    )
    .await;
    assert_eq!(js(&page, TEXTS).await[0], "second topic", "the open conversation stays");

    page.close().await.expect("close the browser");
    app.stop().await;
}

/// One person, one inbox (issue 30, point 4), in the browser: a briefing the owner scheduled
/// from the terminal (its conversation made by `cli:local`) is in the local page's list, marked
/// "from Butler"; opened, it shows the briefing, and an answer typed there gets Butler's reply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_owners_terminal_briefing_is_listed_and_answered_on_the_page() {
    let fake = FakeLlm::start().await;
    let (cfg, dir) = config(Some(&fake.openai_url()));
    let app = TestApp::start(cfg, Some(dir)).await;
    let row = butler::store::ConversationRow {
        id: "web:briefings".into(),
        kind: butler::channel::ConversationKind::Direct,
        owner: "cli:local".into(),
        created_ms: butler::store::now_ms(),
    };
    app.app.store.conversation_ensure(&row).await.expect("the terminal's conversation");
    let briefing = butler::store::NewOutbox::message("schedule:3:1", "web:briefings", "Good morning: three meetings.");
    app.app.store.outbox_enqueue(&briefing).await.expect("the briefing");
    app.wait_replies("briefings", 1, 30).await;

    let (_driver, page) = open_browser().await;
    page.goto(&app.url("/")).await.expect("open the page");
    let entry = wait_js(
        &page,
        "the terminal's briefing in the list, marked",
        "const li = document.querySelector(\"#conv-list li[data-id='briefings']\");
         const mark = li && li.querySelector('.conv-mark');
         return mark ? mark.textContent : null;",
    )
    .await;
    assert_eq!(entry, "from Butler");
    click_entry(&page, "briefings", ".conv-open").await;
    wait_texts(&page, "the briefing", json!(["Good morning: three meetings."])).await;
    send_message(&page, "thanks").await;
    wait_texts(&page, "the answer and its reply", json!(["Good morning: three meetings.", "thanks", "echo: thanks"]))
        .await;

    page.close().await.expect("close the browser");
    app.stop().await;
}

/// Each person's own clock from the page (issue 30, point 2): the header's "Time zone" button
/// offers the browser's zone and sets the one typed with `/timezone`; the answer shows in the
/// conversation and the person's zone is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_time_zone_button_sets_the_persons_zone() {
    let fake = FakeLlm::start().await;
    let (cfg, dir) = config(Some(&fake.openai_url()));
    let app = TestApp::start(cfg, Some(dir)).await;
    let (_driver, page) = open_browser().await;
    page.goto(&app.url("/?c=clock")).await.expect("open the page");
    let offered = js(
        &page,
        "window.offered = null; window.prompt = (q, v) => { window.offered = v; return 'Asia/Tokyo'; }; \
         return Intl.DateTimeFormat().resolvedOptions().timeZone;",
    )
    .await;
    page.find(Locator::Id("tz")).await.expect("the time zone button").click().await.expect("click");
    wait_js(
        &page,
        "the answer in the conversation",
        "const t = [...document.querySelectorAll('#messages .msg .text')].map((t) => t.textContent);
         return t.some((x) => x.includes('Your time zone is now Asia/Tokyo')) ? t : null;",
    )
    .await;
    assert_eq!(js(&page, "return window.offered;").await, offered, "the browser's zone is offered");
    let me = app.app.store.identity_user(&"web:local".parse().unwrap()).await.unwrap().expect("the local user");
    assert_eq!(me.timezone, "Asia/Tokyo");
    page.close().await.expect("close the browser");
    app.stop().await;
}
