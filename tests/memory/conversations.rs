//! Past conversations (issue 31 point 3): a fact said in one conversation is found from a later
//! one by `conversation_search`, as a dated excerpt naming the conversation it came from, in the
//! person's time zone; another person's conversations never show; `/sessions` lists a person's
//! conversations and `/resume N` takes one up again in this chat, so the model is sent its
//! earlier messages on the next turn; in a group both answer that they are private.

use crate::support::app::{config, TestApp};
use crate::support::fake_llm::{fenced, FakeLlm, Reply};
use crate::{eventually, group_message, replies, user_texts};
use butler::channel::Identity;
use butler::store::{reply_key, UserRow};
use chrono::{DateTime, Utc};
use serde_json::json;

async fn user_of(app: &TestApp, who: &str) -> UserRow {
    app.app.store.identity_user(&Identity::new("web", who)).await.unwrap().expect("a known user")
}

/// `ms` in the user's zone, as `conversation_search` writes it.
fn local(ms: i64, user: &UserRow, format: &str) -> String {
    let tz: chrono_tz::Tz = user.timezone.parse().unwrap();
    DateTime::<Utc>::from_timestamp_millis(ms).unwrap().with_timezone(&tz).format(format).to_string()
}

/// The line the tool writes for the first message of `who`'s closed web conversation.
async fn expected_line(app: &TestApp, user: &UserRow) -> String {
    let old = app.app.store.sessions_recent(&user.id, 10).await.unwrap().into_iter().find(|s| !s.is_open()).unwrap();
    let first = app.app.store.messages_recent(&old.id, 10).await.unwrap().remove(0);
    format!(
        "- {} · web · conversation started {}: user: {}",
        local(first.created_ms, user, "%Y-%m-%d %H:%M"),
        local(old.created_ms, user, "%Y-%m-%d"),
        first.msg.content
    )
}

#[tokio::test]
async fn a_fact_from_an_earlier_conversation_is_found_as_a_dated_excerpt_and_only_by_its_owner() {
    let llm = FakeLlm::start().await;
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    cfg.access.policy = butler::config::AccessPolicy::Open;
    cfg.agent.timezone = "Asia/Tokyo".into();
    let app = TestApp::start(cfg, Some(dir)).await;
    // (conversation, person, what they said first)
    let people = [("c-alice", "alice", "my bike is blue with a basket"), ("c-bob", "bob", "my bike is red and fast")];
    for (conv, who, fact) in people {
        app.post(conv, who, fact).await;
        replies(&app, conv, 1).await;
        app.post(conv, who, "/new").await;
        replies(&app, conv, 2).await;
    }
    // (person, conversation, the excerpt's text, what must never show)
    let cases = [
        ("alice", "c-alice", "echo: my bike is blue with a basket", "red"),
        ("bob", "c-bob", "echo: my bike is red and fast", "blue"),
    ];
    for (who, conv, answer, never) in cases {
        let ask = format!("which bike does {who} have");
        llm.on(&ask, Reply::tool_call("conversation_search", json!({"query": "bike colour", "limit": 50})));
        llm.on(&ask, Reply::text("That one."));
        app.post(conv, who, &ask).await;
        replies(&app, conv, 3).await;
        let request = llm.requests().into_iter().rev().find(|r| r.last_user_text().contains(&ask)).unwrap();
        let result = request.last_tool_result().expect("the tool answered");
        // What other people wrote (in a group) reaches the model fenced as untrusted: so does all.
        let result = fenced(&result).unwrap_or_else(|| panic!("fenced as untrusted: {result}"));
        let user = user_of(&app, who).await;
        assert!(result.starts_with(&format!("From earlier conversations (times in {})", user.timezone)), "{result}");
        assert!(result.contains(&expected_line(&app, &user).await), "{who}: {result}");
        assert!(result.contains("· web · conversation started "), "{result}");
        assert!(result.contains(&format!("assistant: {answer}")), "{who}: {result}");
        assert!(!result.contains(never), "{who} never sees another person's conversation: {result}");
        assert!(!result.contains("which bike"), "the current conversation is left out: {result}");
    }
    app.stop().await;
}
#[tokio::test]
async fn sessions_lists_the_conversations_and_resume_brings_an_earlier_one_back() {
    let llm = FakeLlm::start().await;
    let (cfg, dir) = config(Some(&llm.openai_url()));
    let app = TestApp::start(cfg, Some(dir)).await;
    // Another web conversation first, then two in `c` (one closed by /new).
    for (conv, text) in [("d", "hello from d"), ("c", "my bike is blue"), ("c", "/new"), ("c", "what about trains")] {
        let before = app.messages(conv).await.iter().filter(|m| m["role"] == "assistant").count();
        app.post(conv, "local", text).await;
        replies(&app, conv, before + 1).await;
    }
    // (command, what the answer contains); answered in order in `c`.
    let cases: &[(&str, &[&str])] = &[
        (
            "/sessions",
            &["1. ", "· web · “what about trains” (2 messages) (this chat)", "2. ", "“my bike is blue”", "3. "],
        ),
        ("/sessions", &["“hello from d” (2 messages)", "`/resume N` continues one of them here."]),
        ("/resume 9", &["There is no conversation 9: /sessions lists 3"]),
        ("/resume 0", &["There is no conversation 0"]),
        ("/resume", &["Say which one: `/resume N`"]),
        ("/resume 1", &["That is this conversation already."]),
        ("/resume 2", &["↩️ Resumed the web conversation of ", "(“my bike is blue”)"]),
        ("/sessions", &["“what about trains” (2 messages)\n2. ", "“my bike is blue” (2 messages) (this chat)"]),
    ];
    for (command, want) in cases {
        let before = app.messages("c").await.iter().filter(|m| m["role"] == "assistant").count();
        app.post("c", "local", command).await;
        let answer = replies(&app, "c", before + 1).await.pop().unwrap();
        for part in *want {
            assert!(answer.contains(part), "{command}: {part:?} in {answer}");
        }
    }
    // The resumed conversation is the one the model is sent next.
    app.post("c", "local", "and what colour is it?").await;
    let request = llm.requests_for("and what colour is it?", 1).await.pop().unwrap();
    assert_eq!(user_texts(&request), ["my bike is blue", "and what colour is it?"]);
    let store = &app.app.store;
    let open = store.session_active("dm:web:c:local").await.unwrap().unwrap();
    let titles = store.sessions_recent("local", 10).await.unwrap();
    assert_eq!(titles.iter().find(|s| s.id == open.id).unwrap().title.as_deref(), Some("my bike is blue"));

    // In a group both commands answer that they are private, and change nothing.
    for command in ["/sessions", "/resume 1"] {
        let event = group_message(command);
        let key = reply_key(&event.id.0);
        app.emit(event).await;
        eventually("the group's answer", || async { store.outbox_get(&key).await.unwrap().is_some() }).await;
        let text = store.outbox_get(&key).await.unwrap().unwrap().text;
        assert!(text.starts_with("Earlier conversations are private"), "{command}: {text}");
    }
    assert_eq!(store.session_active("dm:web:c:local").await.unwrap().unwrap().id, open.id);
    app.stop().await;
}
