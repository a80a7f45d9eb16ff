//! Only the right person: by default the requester; `approvers` per context (`role:owner`,
//! `user:...`). Anyone else's click, a forged id, a replay after the decision: a short refusal and
//! nothing changes. `/approve ID` and `/deny ID` are the text fallback.

use crate::support::app::{config, TestApp};
use crate::support::fake_channel::FakeChannel;
use crate::support::fake_llm::{FakeLlm, Reply};
use crate::Touch;
use butler::channel::{ConversationKind, EventBody, InboundEvent};
use butler::store::ApprovalStatus;
use serde_json::json;
use std::sync::Arc;

async fn start(approvers: &[&str]) -> (TestApp, Arc<FakeChannel>, FakeLlm, Arc<Touch>) {
    let llm = FakeLlm::start().await;
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    cfg.access.owners = vec!["chat:owner".parse().unwrap()];
    cfg.access.allow = vec!["chat:alice".parse().unwrap(), "chat:bob".parse().unwrap()];
    cfg.permissions.approvers = approvers.iter().map(|s| s.to_string()).collect();
    let chat = FakeChannel::new("chat");
    let touch = Touch::new();
    let app = TestApp::start_full(cfg, Some(dir), vec![touch.clone()], vec![chat.clone()]).await;
    (app, chat, llm, touch)
}

/// Alice, in group g, asks Butler to touch something; returns the approval id.
async fn ask(app: &TestApp, chat: &FakeChannel, llm: &FakeLlm, what: &str) -> String {
    llm.on(what, Reply::tool_call("touch", json!({"name": what})));
    llm.on(what, Reply::text(&format!("{what} done")));
    app.emit(chat.message("alice", "Alice", "g", ConversationKind::Group, true, &format!("@butler {what}"))).await;
    for _ in 0..400 {
        if let Some(m) = chat.shown("g").iter().find(|m| m.buttons.iter().any(|b| b.action.starts_with("ap:"))) {
            return m.buttons[0].action.split(':').nth(1).unwrap().to_string();
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    panic!("no approval request in g: {:?}", chat.shown("g"));
}

fn click(chat: &FakeChannel, user: &str, action: &str) -> InboundEvent {
    let mut ev = chat.message(user, user, "g", ConversationKind::Group, true, "");
    ev.body = EventBody::Action { action: action.to_string(), message: None, interaction: None };
    ev
}

#[tokio::test]
async fn by_default_only_the_requester_decides() {
    let (app, chat, llm, touch) = start(&["requester"]).await;
    let id = ask(&app, &chat, &llm, "lamp").await;
    let cases = [
        ("bob", format!("ap:{id}:once"), "only the person who asked (chat:alice)"),
        ("owner", format!("ap:{id}:session"), "only the person who asked"),
        ("bob", "ap:0123456789abcdef0123456789abcdef:once".to_string(), "does not exist"),
        ("bob", format!("ap:{id}:expire"), "not valid"),
        ("bob", format!("ap:{id}:launch"), "not valid"),
    ];
    let mut shown = chat.shown("g").len();
    for (user, action, want) in &cases {
        app.emit(click(&chat, user, action)).await;
        shown += 1;
        let texts = chat.wait_texts("g", shown).await;
        assert!(texts.last().unwrap().contains(want), "{user} {action}: {:?}", texts.last());
    }
    assert_eq!(touch.runs(), 0);
    assert_eq!(
        app.app.store.approval_get(&id).await.unwrap().unwrap().status,
        ApprovalStatus::Pending,
        "nothing changed"
    );

    // The requester's text fallback works; a replay afterwards is refused.
    app.emit(chat.message("alice", "Alice", "g", ConversationKind::Group, true, &format!("/approve {id}"))).await;
    let texts = chat.wait_texts("g", shown + 1).await;
    assert!(texts.iter().any(|t| t == "lamp done"), "{texts:?}");
    assert_eq!(touch.runs(), 1);
    app.emit(click(&chat, "alice", &format!("ap:{id}:once"))).await;
    let after = chat.wait_texts("g", texts.len() + 1).await;
    assert!(after.last().unwrap().contains("already answered (approved by Alice)"), "{after:?}");
    assert_eq!(touch.runs(), 1);
    let refused: Vec<String> = app
        .app
        .store
        .decisions_recent(50)
        .await
        .unwrap()
        .into_iter()
        .filter(|d| d.decision == "approval_refused")
        .map(|d| d.actor)
        .collect();
    assert_eq!(refused.len(), 6, "each refusal recorded: {refused:?}");
    app.stop().await;
}

#[tokio::test]
async fn approvers_can_be_the_owners() {
    let (app, chat, llm, touch) = start(&["role:owner"]).await;
    let id = ask(&app, &chat, &llm, "door").await;
    let n = chat.shown("g").len() + 1;
    app.emit(click(&chat, "alice", &format!("ap:{id}:once"))).await;
    let texts = chat.wait_texts("g", n).await;
    assert!(texts.last().unwrap().contains("only an owner"), "{texts:?}");
    app.emit(chat.dm("owner", &format!("/deny {id}"))).await;
    // The turn resumes in the group (where it waits), with the owner's denial.
    let texts = chat.wait_texts("g", n + 1).await;
    assert_eq!(texts.last().unwrap(), "door done");
    assert_eq!(touch.runs(), 0);
    let row = app.app.store.approval_get(&id).await.unwrap().unwrap();
    assert_eq!((row.status, row.decided_by.as_deref()), (ApprovalStatus::Denied, Some("owner")));
    assert!(chat.shown("g").iter().any(|m| m.text.starts_with("🚫 Denied by owner")));
    app.stop().await;
}
