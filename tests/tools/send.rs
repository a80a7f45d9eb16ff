//! send_message: a configured target gets the text through the outbox; any other target is
//! refused and nothing is queued.

use crate::{err_text, Harness};
use butler::channel::ConversationRef;
use butler::config::SendMessageConfig;
use butler::store::{now_ms, OutboxRow, OutboxStatus};
use butler::tools::builtin::SendMessage;
use butler::tools::Tool;
use serde_json::json;

fn tool() -> SendMessage {
    let targets = ["telegram:-100123", "slack:C024BE91L/1700000000.0001"];
    SendMessage::new(&SendMessageConfig {
        targets: targets.iter().map(|t| t.parse::<ConversationRef>().unwrap()).collect(),
    })
}

async fn queued(h: &Harness) -> Vec<OutboxRow> {
    let channels = ["telegram".to_string(), "slack".to_string(), "web".to_string()];
    h.store.outbox_due(&channels, now_ms() + 60_000, 100).await.unwrap()
}

#[tokio::test]
async fn configured_targets_get_the_message_through_the_outbox() {
    let h = Harness::new().await;
    let tool = tool();
    assert!(!tool.spec().read_only);
    let out = h.call(&tool, json!({"to": "telegram:-100123", "text": "Build is green"})).await.unwrap();
    assert!(out.contains("telegram:-100123"), "{out}");
    h.call(&tool, json!({"to": "slack:C024BE91L/1700000000.0001", "text": "In the thread"})).await.unwrap();
    // The same text twice is two messages (fresh keys).
    h.call(&tool, json!({"to": "telegram:-100123", "text": "Build is green"})).await.unwrap();
    let rows = queued(&h).await;
    let got: Vec<(&str, &str, &str)> =
        rows.iter().map(|r| (r.channel.as_str(), r.conversation.as_str(), r.text.as_str())).collect();
    assert_eq!(
        got,
        vec![
            ("telegram", "telegram:-100123", "Build is green"),
            ("slack", "slack:C024BE91L/1700000000.0001", "In the thread"),
            ("telegram", "telegram:-100123", "Build is green"),
        ]
    );
    assert!(rows.iter().all(|r| r.status == OutboxStatus::Pending && r.key.starts_with("send:")));
    assert_ne!(rows[0].key, rows[2].key);
}

#[tokio::test]
async fn other_targets_are_refused() {
    let h = Harness::new().await;
    let tool = tool();
    for to in ["telegram:-100999", "slack:C024BE91L", "web:alice", "telegram:-100123/5", "nonsense"] {
        let e = err_text(h.call(&tool, json!({ "to": to, "text": "hi" })).await);
        assert!(e.contains("refused") || e.contains("channel:id"), "{to}: {e}");
    }
    let e = err_text(h.call(&tool, json!({"to": "telegram:-100123", "text": "  "})).await);
    assert!(e.contains("empty"), "{e}");
    assert!(queued(&h).await.is_empty());
}
