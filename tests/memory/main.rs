//! Memory that lasts: automatic recall into the turn (never into the system prompt), the
//! archivist, context management (clearing, collapsing, summary checkpoints, the forced
//! compaction on "prompt too long"), resuming after a restart, `/memory`, export/import, past
//! conversations (`conversation_search`, `/sessions`, `/resume`), and usage under the model that
//! answered, with background work on the `worker` tier; recall by meaning, the memory eval
//! (recall@5 over a fixture of paraphrased questions) and the fake embeddings endpoint.

#[path = "../support/mod.rs"]
mod support;

mod archivist;
mod context;
mod conversations;
mod embed;
mod eval;
mod fake_embeddings;
mod forget;
mod profile;
mod recall;
mod tiers;

use serde_json::Value;
use std::time::Duration;
use support::app::TestApp;

/// Waits until the conversation has `n` assistant replies with no buttons; returns their texts.
pub async fn replies(app: &TestApp, conv: &str, n: usize) -> Vec<String> {
    app.wait_replies(conv, n, 30).await.iter().map(|m| m["text"].as_str().unwrap_or_default().to_string()).collect()
}

/// Polls `check` until it is true (or panics after 30 s with `what`).
pub async fn eventually<F: std::future::Future<Output = bool>>(what: &str, mut check: impl FnMut() -> F) {
    for _ in 0..1200 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{what} never happened");
}

/// The user-role texts of a recorded OpenAI request.
pub fn user_texts(req: &support::fake_llm::RecordedRequest) -> Vec<String> {
    req.messages()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect::<Vec<_>>()
}

pub fn json(v: &str) -> Value {
    serde_json::from_str(v).unwrap()
}

/// The owner speaking in a group conversation (`web:g-1`), addressing Butler.
pub fn group_message(text: &str) -> butler::channel::InboundEvent {
    use butler::channel::{Actor, ConversationKind, EventBody, EventId, Identity, InboundEvent};
    InboundEvent {
        id: EventId(format!("web:group:{}", uuid::Uuid::new_v4().simple())),
        actor: Actor { identity: Identity::new("web", "local"), display_name: Some("Ada".into()), is_bot: false },
        conversation: "web:g-1".parse().unwrap(),
        kind: ConversationKind::Group,
        addressed: true,
        reply_to: None,
        message_id: None,
        body: EventBody::Message { text: text.to_string() },
        at_ms: 0,
        attachments: Vec::new(),
    }
}
