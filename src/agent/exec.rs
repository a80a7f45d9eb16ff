//! Running one round of permitted tool calls: all at once, each isolated in its own task with a timeout,
//! so a failing, hanging or panicking tool never takes the others down and every call gets
//! exactly one result, in the order the model asked. Oversized results are cut with a marker;
//! the output of a tool that reads from outside is fenced as untrusted ([`crate::tools::frame_untrusted`]).
//! Nothing here may outlive the turn: the tasks live in a JoinSet dropped with it.

use crate::llm::{Image, ToolCall};
use crate::metrics::METRICS;
use crate::tools::{validate_args, Tool, ToolCtx, ToolError, ToolOutput, Tools};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinSet;
use tracing::{info_span, Instrument};

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct ToolResult {
    pub call_id: String,
    pub content: String,
    pub is_error: bool,
    pub images: Vec<Image>,
}

impl ToolResult {
    /// A failed or refused call: the model sees `content` as a tool error.
    pub fn error(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self { call_id: call_id.into(), content: content.into(), is_error: true, images: Vec::new() }
    }
}

/// Cuts `text` to at most `max` characters, saying how much was left out.
pub(super) fn truncate_result(text: String, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text;
    }
    let cut = text.char_indices().nth(max).map_or(text.len(), |(i, _)| i);
    format!("{}\n[... truncated: showing {max} of {total} characters]", &text[..cut])
}

fn panic_message(e: tokio::task::JoinError) -> String {
    if !e.is_panic() {
        return "was cancelled".into();
    }
    let p = e.into_panic();
    let msg = p
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    format!("crashed: {msg}")
}

/// A call ready to run: looked up, arguments parsed and validated, permitted.
#[derive(Clone)]
pub(super) struct Ready {
    pub call: ToolCall,
    pub tool: Arc<dyn Tool>,
    pub args: Value,
}

/// Runs every call concurrently and returns one result per call, in the given order.
pub(super) async fn run_calls(
    ctx: &ToolCtx,
    calls: Vec<Ready>,
    timeout: Duration,
    max_chars: usize,
) -> Vec<ToolResult> {
    let mut results: Vec<Option<ToolResult>> = vec![None; calls.len()];
    let mut set = JoinSet::new();
    let mut index_of = std::collections::HashMap::new();
    for (i, ready) in calls.iter().cloned().enumerate() {
        let ctx = ctx.clone();
        let span = info_span!("tool", tool = %ready.call.name, call_id = %ready.call.id);
        let timeout = ready.tool.time_limit().unwrap_or(timeout);
        let handle = set.spawn(
            async move {
                let (outcome, label) = match tokio::time::timeout(timeout, ready.tool.call_rich(&ctx, ready.args)).await
                {
                    Ok(r) => {
                        let label = if r.is_ok() { "ok" } else { "error" };
                        (r, label)
                    }
                    Err(_) => (Err(ToolError::Failed(format!("timed out after {}s", timeout.as_secs()))), "timeout"),
                };
                METRICS.tool_calls.inc(&[&ready.call.name, label]);
                if let Err(e) = &outcome {
                    tracing::info!(error = %e, "tool call failed");
                }
                (i, outcome)
            }
            .instrument(span),
        );
        index_of.insert(handle.id(), i);
    }
    while let Some(joined) = set.join_next_with_id().await {
        match joined {
            Ok((_, (i, outcome))) => {
                let (content, is_error, images) = match outcome {
                    Ok(ToolOutput { text, images }) => (text, false, images),
                    Err(e) => (e.to_string(), true, Vec::new()),
                };
                let mut content = truncate_result(content, max_chars);
                if !is_error && calls[i].tool.untrusted_output() {
                    content = crate::tools::frame_untrusted(&calls[i].call.name, &content);
                }
                results[i] = Some(ToolResult { call_id: calls[i].call.id.clone(), content, is_error, images });
            }
            Err(e) => {
                // The task died (a panic): its call still gets a result naming the failure.
                if let Some(&i) = index_of.get(&e.id()) {
                    let call = &calls[i].call;
                    METRICS.tool_calls.inc(&[&call.name, "crashed"]);
                    let content = format!("tool `{}` {}", call.name, panic_message(e));
                    results[i] = Some(ToolResult::error(call.id.clone(), content));
                }
            }
        }
    }
    results
        .into_iter()
        .zip(&calls)
        .map(|(r, ready)| {
            r.unwrap_or_else(|| {
                ToolResult::error(ready.call.id.clone(), format!("tool `{}` produced no result", ready.call.name))
            })
        })
        .collect()
}

/// Looks the tool up, parses and validates its arguments.
pub(super) fn prepare(tools: &Tools, call: &ToolCall) -> Result<(Arc<dyn Tool>, Value), ToolError> {
    let tool = tools.get(&call.name).ok_or_else(|| {
        ToolError::Failed(format!("unknown tool `{}`; available: {}", call.name, tools.names().join(", ")))
    })?;
    let raw = if call.arguments.trim().is_empty() { "{}" } else { call.arguments.as_str() };
    let args: Value =
        serde_json::from_str(raw).map_err(|e| ToolError::InvalidArgs(format!("arguments are not valid JSON ({e})")))?;
    validate_args(&tool.spec().parameters, &args).map_err(ToolError::InvalidArgs)?;
    Ok((tool.clone(), args))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_table() {
        let cases = [
            ("short", 10, "short".to_string()),
            ("exactly", 7, "exactly".to_string()),
            ("abcdefghij", 4, "abcd\n[... truncated: showing 4 of 10 characters]".to_string()),
            ("ééééé", 2, "éé\n[... truncated: showing 2 of 5 characters]".to_string()),
        ];
        for (input, max, want) in cases {
            assert_eq!(truncate_result(input.to_string(), max), want);
        }
    }
}
