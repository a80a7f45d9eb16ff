//! `remember`, `recall`, `forget`: the user's long-term memory. Every call is scoped to the
//! user the turn runs for; a memory id of another user is treated as nonexistent.

use crate::tools::{parse_args, Tool, ToolCtx, ToolError, ToolSpec};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;

pub fn memory_tools() -> Vec<Arc<dyn Tool>> {
    vec![Arc::new(Remember::new()), Arc::new(Recall::new()), Arc::new(Forget::new())]
}

fn store_err(e: crate::store::StoreError) -> ToolError {
    ToolError::Failed(format!("memory is unavailable right now ({e})"))
}

pub struct Remember(ToolSpec);
pub struct Recall(ToolSpec);
pub struct Forget(ToolSpec);

impl Remember {
    fn new() -> Self {
        Self(ToolSpec {
            name: "remember".into(),
            description: "Store a durable fact about the user or their preferences for future conversations. \
                          One fact per call, written as a standalone sentence."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {"text": {"type": "string", "description": "the fact to remember"}},
                "required": ["text"],
                "additionalProperties": false
            }),
            // Only the user's own memory changes, nothing outside Butler: runs without asking.
            read_only: true,
        })
    }
}

impl Recall {
    fn new() -> Self {
        Self(ToolSpec {
            name: "recall".into(),
            description: "Search the user's long-term memory by keywords. Returns matching memories with their ids."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "keywords to look for"},
                    "limit": {"type": "integer", "description": "most results to return"}
                },
                "required": ["query"],
                "additionalProperties": false
            }),
            read_only: true,
        })
    }
}

impl Forget {
    fn new() -> Self {
        Self(ToolSpec {
            name: "forget".into(),
            description: "Delete one memory by its id (as shown by recall).".into(),
            parameters: json!({
                "type": "object",
                "properties": {"id": {"type": "integer", "description": "the memory id"}},
                "required": ["id"],
                "additionalProperties": false
            }),
            // Only the user's own memory changes, nothing outside Butler: runs without asking.
            read_only: true,
        })
    }
}

#[derive(Deserialize)]
struct RememberArgs {
    text: String,
}

#[derive(Deserialize)]
struct RecallArgs {
    query: String,
    limit: Option<usize>,
}

#[derive(Deserialize)]
struct ForgetArgs {
    id: i64,
}

#[async_trait]
impl Tool for Remember {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    async fn call(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let args: RememberArgs = parse_args(args)?;
        let text = args.text.trim();
        if text.is_empty() {
            return Err(ToolError::InvalidArgs("`text` is empty".into()));
        }
        let row = ctx.store.memory_add(text, Some(&ctx.session_id)).await.map_err(store_err)?;
        Ok(format!("Remembered as memory {}.", row.id))
    }
}

#[async_trait]
impl Tool for Recall {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    async fn call(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let args: RecallArgs = parse_args(args)?;
        let limit = args.limit.unwrap_or(ctx.recall_limit).clamp(1, 50);
        let rows = ctx.store.memory_search(&args.query, limit).await.map_err(store_err)?;
        if rows.is_empty() {
            return Ok("No memories match.".into());
        }
        Ok(rows.iter().map(|m| format!("[memory {}] {}", m.id, m.text)).collect::<Vec<_>>().join("\n"))
    }
}

#[async_trait]
impl Tool for Forget {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    async fn call(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let args: ForgetArgs = parse_args(args)?;
        if ctx.store.memory_forget(args.id).await.map_err(store_err)? {
            Ok(format!("Forgot memory {}.", args.id))
        } else {
            Err(ToolError::Failed(format!("there is no memory {} to forget", args.id)))
        }
    }
}
