//! `send_message`: posts a message to one of the conversations listed in
//! `[tools.send_message] targets`, on any channel. Mutating.
//!
//! It must never post anywhere else: `to` has to be exactly one of the configured targets. The
//! text goes into the outbox under a fresh key and is delivered by the outbox worker (so it
//! survives a restart and is sent once); this tool never talks to a platform itself.

use super::plain::{mask_text, preview};
use crate::config::SendMessageConfig;
use crate::store::NewOutbox;
use crate::tools::{parse_args, Action, Tool, ToolCtx, ToolError, ToolSpec};
use async_trait::async_trait;
use butler_channel::ConversationRef;
use serde::Deserialize;
use serde_json::{json, Value};

/// Longest text one call may send.
const MAX_TEXT_CHARS: usize = 20_000;

pub struct SendMessage {
    spec: ToolSpec,
    targets: Vec<ConversationRef>,
}

impl SendMessage {
    pub fn new(cfg: &SendMessageConfig) -> Self {
        let list: Vec<String> = cfg.targets.iter().map(ToString::to_string).collect();
        Self {
            spec: ToolSpec {
                name: "send_message".into(),
                description: format!(
                    "Send a message to another conversation. `to` must be one of: {}.",
                    list.join(", ")
                ),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "to": {"type": "string", "enum": list, "description": "the conversation, channel:id[/thread]"},
                        "text": {"type": "string", "description": "the message"}
                    },
                    "required": ["to", "text"],
                    "additionalProperties": false
                }),
                read_only: false,
            },
            targets: cfg.targets.clone(),
        }
    }
}

#[derive(Deserialize)]
struct Args {
    to: String,
    text: String,
}

#[async_trait]
impl Tool for SendMessage {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn action(&self, _ctx: &ToolCtx, args: &Value) -> Action {
        let to = args.get("to").and_then(Value::as_str).unwrap_or("");
        let text = args.get("text").and_then(Value::as_str).unwrap_or("");
        Action {
            summary: format!("send a message to {to}: \"{}\"", mask_text(&preview(text, 200))),
            ..Action::default()
        }
    }

    async fn call(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let args: Args = parse_args(args)?;
        let to: ConversationRef = args
            .to
            .trim()
            .parse()
            .map_err(|e| ToolError::InvalidArgs(format!("`to` must be a conversation channel:id[/thread]: {e}")))?;
        if !self.targets.contains(&to) {
            let list: Vec<String> = self.targets.iter().map(ToString::to_string).collect();
            return Err(ToolError::Failed(format!(
                "refused: `{to}` is not a configured target; messages may only go to {}",
                list.join(", ")
            )));
        }
        let text = args.text.trim();
        if text.is_empty() {
            return Err(ToolError::InvalidArgs("`text` is empty".into()));
        }
        if text.chars().count() > MAX_TEXT_CHARS {
            return Err(ToolError::InvalidArgs(format!("`text` is longer than {MAX_TEXT_CHARS} characters")));
        }
        let new = NewOutbox::message(format!("send:{}", uuid::Uuid::new_v4()), to.to_string(), text);
        let row = ctx
            .store
            .send(&new)
            .await
            .map_err(|e| ToolError::Failed(format!("the message could not be queued: {e}")))?;
        tracing::info!(to = %to, outbox = row.id, user = %ctx.user.id, "send_message queued");
        Ok(format!("Queued the message to {to}; it will be delivered shortly."))
    }
}
