//! The conversation list API (`GET /api/v1/conversations`, rename, delete) and the click check:
//! an action that is on no live button of the conversation gets 409 at once.

use crate::support::app::{config, TestApp};
use butler::channel::{Button, ButtonStyle};
use serde_json::{json, Value};

async fn call(app: &TestApp, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let url = app.url(path);
    let req = match method {
        "PATCH" => app.http.patch(url),
        "DELETE" => app.http.delete(url),
        "POST" => app.http.post(url),
        _ => app.http.get(url),
    };
    let req = match body {
        Some(b) => req.json(&b),
        None => req,
    };
    let r = req.send().await.expect("request");
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

fn ids(v: &Value) -> Vec<String> {
    v["conversations"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn list_rename_delete_and_live_clicks() {
    let (cfg, dir) = config(None);
    let app = TestApp::start(cfg, Some(dir)).await;
    for (conv, user, text) in
        [("c1", "alice", "first chat\nmore"), ("c2", "alice", "second chat"), ("b1", "bob", "bob")]
    {
        assert_eq!(app.post(conv, user, text).await.0, 202);
        app.wait_replies(conv, 1, 30).await;
    }
    let (status, list) = call(&app, "GET", "/api/v1/conversations?user=alice", None).await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(ids(&list), ["c2", "c1"], "newest first, only alice's: {list}");
    assert_eq!(list["conversations"][1]["title"], "first chat");
    assert_eq!(list["conversations"][1]["butler"], false);

    // (method, path, body, status, error code)
    let cases: Vec<(&str, &str, Option<Value>, u16, &str)> = vec![
        ("PATCH", "/api/v1/conversations/c1?user=bob", Some(json!({"title": "x"})), 404, "unknown_conversation"),
        ("PATCH", "/api/v1/conversations/nope?user=alice", Some(json!({"title": "x"})), 404, "unknown_conversation"),
        ("PATCH", "/api/v1/conversations/c1?user=alice", Some(json!({"title": "  "})), 422, "invalid_fields"),
        ("PATCH", "/api/v1/conversations/c1?user=alice", Some(json!({"colour": "red"})), 422, "invalid_fields"),
        ("DELETE", "/api/v1/conversations/c1?user=bob", None, 404, "unknown_conversation"),
        ("DELETE", "/api/v1/conversations/a%20b?user=alice", None, 422, "invalid_fields"),
        ("GET", "/api/v1/conversations?user=a%20b", None, 422, "invalid_fields"),
        ("GET", "/api/v1/conversations?limit=0", None, 400, "invalid_request"),
        (
            "POST",
            "/api/v1/actions",
            Some(json!({"conversation": "c2", "user": "alice", "action": "made-up"})),
            409,
            "stale_action",
        ),
        (
            "POST",
            "/api/v1/actions",
            Some(json!({"conversation": "c2", "user": "alice", "action": "stop:gone"})),
            409,
            "stale_action",
        ),
        (
            "POST",
            "/api/v1/actions",
            Some(json!({"conversation": "c2", "user": "alice", "action": "ap:bobs:once"})),
            409,
            "stale_action",
        ),
    ];
    // Bob's conversation shows a live button; it is not c2's.
    let bobs = app.messages("b1").await.last().unwrap()["id"].as_i64().unwrap();
    let live = |a: &str| vec![Button { label: "Approve".into(), action: a.into(), style: ButtonStyle::Primary }];
    app.app.store.web_update(bobs, "request", &live("ap:bobs:once")).await.unwrap();
    for (method, path, body, status, code) in cases {
        let (got, v) = call(&app, method, path, body).await;
        assert_eq!((got, v["error"]["code"].as_str().unwrap_or("")), (status, code), "{method} {path}: {v}");
    }
    // A live button of the conversation is taken.
    let mine = app.messages("c2").await.last().unwrap()["id"].as_i64().unwrap();
    app.app.store.web_update(mine, "request", &live("ap:mine:once")).await.unwrap();
    let click = json!({"conversation": "c2", "user": "alice", "action": "ap:mine:once"});
    assert_eq!(call(&app, "POST", "/api/v1/actions", Some(click)).await.0, 202);
    // The click's answer is delivered on its own time: wait for it, or it could land after the
    // delete below and (as any later message does) bring the conversation back.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !app.messages("c2").await.iter().any(|m| m["text"] == "That approval request does not exist.") {
        assert!(std::time::Instant::now() < deadline, "the click was never answered");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }

    let (status, renamed) =
        call(&app, "PATCH", "/api/v1/conversations/c1?user=alice", Some(json!({"title": "Renamed"}))).await;
    assert_eq!(
        (status, renamed["title"].as_str(), renamed["renamed"].as_bool()),
        (200, Some("Renamed"), Some(true)),
        "{renamed}"
    );
    let (status, _) = call(&app, "DELETE", "/api/v1/conversations/c2?user=alice", None).await;
    assert_eq!(status, 200);
    let (_, list) = call(&app, "GET", "/api/v1/conversations?user=alice", None).await;
    assert_eq!(ids(&list), ["c1"], "{list}");
    assert!(app.messages("c2").await.is_empty(), "a deleted conversation's messages are hidden");
    app.stop().await;
}

/// A message Butler sends on its own (here a scheduled briefing's outbox row, delivered by the
/// real deliverer through the web channel) marks the conversation; the user's own exchange
/// does not.
#[tokio::test]
async fn a_delivered_briefing_marks_its_conversation() {
    let (cfg, dir) = config(None);
    let app = TestApp::start(cfg, Some(dir)).await;
    for conv in ["mine", "brief"] {
        assert_eq!(app.post(conv, "local", &format!("hello {conv}")).await.0, 202);
        app.wait_replies(conv, 1, 30).await;
    }
    let briefing = butler::store::NewOutbox {
        key: "schedule:7:1733100000000".into(),
        private_to: None,
        conversation: "web:brief".into(),
        text: "Good morning: your briefing.".into(),
        buttons: vec![],
        reply_to: None,
        file: None,
        title: None,
    };
    app.app.store.outbox_enqueue(&briefing).await.unwrap();
    let shown = app.wait_replies("brief", 2, 30).await;
    assert_eq!(shown.last().unwrap()["text"], "Good morning: your briefing.");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let list = loop {
        let (status, list) = call(&app, "GET", "/api/v1/conversations?user=local", None).await;
        assert_eq!(status, 200, "{list}");
        let marked =
            |id: &str| list["conversations"].as_array().unwrap().iter().any(|c| c["id"] == id && c["butler"] == true);
        if marked("brief") || std::time::Instant::now() > deadline {
            break list;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    let butler: Vec<(String, bool)> = list["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["id"].as_str().unwrap().to_string(), c["butler"] == true))
        .collect();
    assert_eq!(butler, [("brief".to_string(), true), ("mine".to_string(), false)], "newest first, marked: {list}");
    app.stop().await;
}

/// One person, one inbox (issue 30, point 4): a briefing conversation the owner's terminal made
/// (`cli:local`, as `butler schedule add` does) is in the owner's web list with Butler's mark and
/// can be answered there; someone else is still refused.
#[tokio::test]
async fn the_owners_terminal_briefings_are_in_their_web_list_and_answerable() {
    let (cfg, dir) = config(None);
    let app = TestApp::start(cfg, Some(dir)).await;
    let store = &app.app.store;
    // The terminal and the local page are one person (the local owner), as Butler makes them.
    let me = butler::store::NewUser {
        id: "local".into(),
        display_name: None,
        role: butler::store::UserRole::Owner,
        timezone: "UTC".into(),
    };
    for id in ["cli:local", "web:local"] {
        store.user_ensure(&id.parse().unwrap(), &me).await.unwrap();
    }
    let row = butler::store::ConversationRow {
        id: "web:briefings".into(),
        kind: butler::channel::ConversationKind::Direct,
        owner: "cli:local".into(),
        created_ms: butler::store::now_ms(),
    };
    store.conversation_ensure(&row).await.unwrap();
    let briefing =
        butler::store::NewOutbox::message("schedule:9:1", "web:briefings", "Good morning from the terminal.");
    store.outbox_enqueue(&briefing).await.unwrap();
    app.wait_replies("briefings", 1, 30).await;

    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let list = loop {
        let (status, list) = call(&app, "GET", "/api/v1/conversations?user=local", None).await;
        assert_eq!(status, 200, "{list}");
        let marked =
            list["conversations"].as_array().unwrap().iter().any(|c| c["id"] == "briefings" && c["butler"] == true);
        if marked || std::time::Instant::now() > deadline {
            break list;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert_eq!(ids(&list), ["briefings"], "the terminal's briefing is in the owner's list: {list}");
    assert!(list["conversations"][0]["butler"] == true, "marked as from Butler: {list}");
    // Someone else's list does not show it.
    let (_, theirs) = call(&app, "GET", "/api/v1/conversations?user=bob", None).await;
    assert!(ids(&theirs).is_empty(), "{theirs}");

    // The owner answers it from the page; someone else may not.
    assert_eq!(app.post("briefings", "local", "thanks, and remind me at 9").await.0, 202);
    let shown = app.wait_replies("briefings", 2, 30).await;
    assert!(shown.len() >= 2, "{shown:?}");
    let (status, refused) = app.post("briefings", "bob", "let me in").await;
    assert_eq!((status, refused["error"]["code"].as_str()), (403, Some("forbidden")), "{refused}");
    app.stop().await;
}
