//! Ask before acting: risky tool calls park the turn with an approval request (buttons), and
//! the answer - a click, `/approve`, `/deny`, `/stop`, a new message, or nobody in time -
//! resumes it exactly once. Only the right person's answer counts; every decision is audited.
//! Questions (`ask_user`) park and resume the same way, answered by a click or a typed reply.

#[path = "../support/mod.rs"]
mod support;

mod details;
mod hooks;
mod injection;
mod lifecycle;
mod questions;
mod who;

use async_trait::async_trait;
use butler::tools::{Tool, ToolCtx, ToolError, ToolSpec};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use support::app::TestApp;

pub use support::touch::Touch;

/// Polls the web conversation until `pred` holds for its messages; returns them.
pub async fn wait_for(app: &TestApp, conv: &str, what: &str, pred: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    for _ in 0..1200 {
        let msgs = app.messages(conv).await;
        if pred(&msgs) {
            return msgs;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{what} never happened in {conv}: {:#?}", app.messages(conv).await);
}

/// The approval request shown in `msgs` (an assistant message with approval buttons).
pub fn request_in(msgs: &[Value]) -> Option<&Value> {
    msgs.iter().find(|m| {
        m["buttons"].as_array().is_some_and(|b| b.iter().any(|b| b["action"].as_str().unwrap_or("").starts_with("ap:")))
    })
}

/// The approval id carried by a request's buttons.
pub fn approval_id(request: &Value) -> String {
    let action = request["buttons"][0]["action"].as_str().unwrap();
    action.split(':').nth(1).unwrap().to_string()
}

pub async fn click(app: &TestApp, conv: &str, user: &str, action: &str) -> u16 {
    let body = json!({"conversation": conv, "user": user, "action": action});
    app.http.post(app.url("/api/v1/actions")).json(&body).send().await.unwrap().status().as_u16()
}

/// A click the server must refuse at once (the button is no longer live): 409 `stale_action`;
/// returns the error message.
pub async fn refused_click(app: &TestApp, conv: &str, action: &str) -> String {
    let body = json!({"conversation": conv, "user": "local", "action": action});
    let r = app.http.post(app.url("/api/v1/actions")).json(&body).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 409, "a click on a button that is gone");
    let v: serde_json::Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], "stale_action", "{v}");
    v["error"]["message"].as_str().unwrap_or_default().to_string()
}

/// A read-only test tool (runs without asking) that counts its runs.
pub struct Peek {
    spec: ToolSpec,
    pub runs: AtomicUsize,
}

impl Peek {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            spec: ToolSpec {
                name: "peek".into(),
                description: "look at something".into(),
                parameters: json!({"type": "object", "properties": {}}),
                read_only: true,
            },
            runs: AtomicUsize::new(0),
        })
    }
}

#[async_trait]
impl Tool for Peek {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, _ctx: &ToolCtx, _args: Value) -> Result<String, ToolError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        Ok("all quiet".into())
    }
}
