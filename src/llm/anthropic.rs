//! Anthropic Messages API, streamed (`POST {base_url}/v1/messages` with `stream: true`).
//!
//! The byte-stable system prompt goes in the top-level `system` field as one text block with
//! `cache_control` so that Anthropic caches tools + system across turns. Tool results travel as
//! `tool_result` blocks in a user message; consecutive messages of one role are merged (with
//! tool results first) because the API wants strictly alternating turns. [`AnthropicDecoder`]
//! maps content-block indices to tool-call ordinals and reads `message_start`,
//! `content_block_*`, `message_delta`, `message_stop`, `ping` and `error` events. This module
//! must never send the key anywhere but the `x-api-key` header, nor log it.

use super::decode::{bad_json, count, Decode, Flow};
use super::errors::classify;
use super::http::Transport;
use super::openai::{parse_error, speaker_text};
use super::sse::SseEvent;
use super::{ChatMessage, ChatRequest, FinishReason, LlmError, LlmStream, Provider, StreamEvent, Usage};
use async_trait::async_trait;
use bytes::Bytes;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde_json::{json, Value};
use std::collections::VecDeque;

/// The Messages API version this client speaks.
pub(crate) const ANTHROPIC_VERSION: &str = "2023-06-01";

/// A Messages endpoint.
pub(crate) struct Anthropic {
    transport: Transport,
    url: String,
    max_tokens: u32,
}

impl Anthropic {
    /// `base_url` is the host (`https://api.anthropic.com`); a trailing `/v1` is accepted too.
    pub(crate) fn new(transport: Transport, base_url: &str, max_tokens: u32) -> Self {
        let base = base_url.trim_end_matches('/');
        let url = if base.ends_with("/v1") { format!("{base}/messages") } else { format!("{base}/v1/messages") };
        Self { transport, url, max_tokens }
    }

    /// The JSON request body.
    pub(crate) fn body(&self, req: &ChatRequest) -> Value {
        let mut body = json!({
            "model": self.transport.model(),
            "max_tokens": req.max_tokens.unwrap_or(self.max_tokens),
            "stream": true,
            "messages": messages(&req.messages),
        });
        if !req.system.is_empty() {
            body["system"] = json!([{"type": "text", "text": req.system, "cache_control": {"type": "ephemeral"}}]);
        }
        if !req.tools.is_empty() {
            body["tools"] = req
                .tools
                .iter()
                .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
                .collect();
        }
        body
    }
}

/// Builds the `messages` array: one entry per run of same-role messages, empty text skipped.
fn messages(history: &[ChatMessage]) -> Vec<Value> {
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    let mut push = |role: &'static str, block: Value| match turns.last_mut() {
        Some((r, blocks)) if *r == role => blocks.push(block),
        _ => turns.push((role, vec![block])),
    };
    for m in history {
        match m {
            ChatMessage::User { content, name, images } => {
                for i in images {
                    push(
                        "user",
                        json!({"type": "image", "source": {"type": "base64", "media_type": i.mime, "data": i.data}}),
                    );
                }
                if !content.is_empty() {
                    push("user", json!({"type": "text", "text": speaker_text(name.as_deref(), content)}));
                }
            }
            ChatMessage::Assistant { content, tool_calls } => {
                if !content.is_empty() {
                    push("assistant", json!({"type": "text", "text": content}));
                }
                for c in tool_calls {
                    let input = match serde_json::from_str::<Value>(&c.arguments) {
                        Ok(v @ Value::Object(_)) => v,
                        _ => json!({}),
                    };
                    push("assistant", json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}));
                }
            }
            ChatMessage::Tool { call_id, content, is_error, images } => {
                let mut block = if images.is_empty() {
                    json!({"type": "tool_result", "tool_use_id": call_id, "content": content})
                } else {
                    let mut parts = vec![json!({"type": "text", "text": content})];
                    parts.extend(images.iter().map(|i| {
                        json!({"type": "image", "source": {"type": "base64", "media_type": i.mime, "data": i.data}})
                    }));
                    json!({"type": "tool_result", "tool_use_id": call_id, "content": parts})
                };
                if *is_error {
                    block["is_error"] = json!(true);
                }
                push("user", block);
            }
        }
    }
    turns
        .into_iter()
        .map(|(role, mut blocks)| {
            if role == "user" {
                // Tool results must open the user turn that answers the tool calls.
                blocks.sort_by_key(|b| b.get("type").and_then(Value::as_str) != Some("tool_result"));
            }
            json!({"role": role, "content": blocks})
        })
        .collect()
}

#[async_trait]
impl Provider for Anthropic {
    fn name(&self) -> &str {
        "anthropic"
    }

    fn model(&self) -> &str {
        self.transport.model()
    }

    async fn stream(&self, req: &ChatRequest) -> Result<LlmStream, LlmError> {
        let body = Bytes::from(self.body(req).to_string());
        let build = || {
            let rb = self
                .transport
                .post(&self.url)
                .header(CONTENT_TYPE, "application/json")
                .header(ACCEPT, "text/event-stream")
                .header("anthropic-version", ANTHROPIC_VERSION)
                .body(body.clone());
            match self.transport.key() {
                Some(key) => match reqwest::header::HeaderValue::from_str(key) {
                    Ok(mut v) => {
                        v.set_sensitive(true);
                        rb.header("x-api-key", v)
                    }
                    Err(_) => rb,
                },
                None => rb,
            }
        };
        let model = self.transport.model();
        self.transport.open(build, || AnthropicDecoder::new(model), parse_error).await
    }
}

fn stop_reason(s: &str) -> FinishReason {
    match s {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "tool_use" => FinishReason::ToolCalls,
        "max_tokens" => FinishReason::Length,
        other => FinishReason::Other(other.to_string()),
    }
}

/// A `tool_use` content block: its block index, its ordinal, whether input arrived.
struct ToolBlock {
    block: u64,
    ordinal: usize,
    has_input: bool,
}

/// Decodes Messages API events. `Finish` is emitted at `message_stop`, after the usage of
/// `message_delta`.
pub struct AnthropicDecoder {
    model: String,
    tools: Vec<ToolBlock>,
    finish: Option<FinishReason>,
}

impl AnthropicDecoder {
    /// `model` is named in an `UnknownModel` error arriving inside the stream.
    pub fn new(model: &str) -> Self {
        Self { model: model.to_string(), tools: Vec::new(), finish: None }
    }

    fn push_finish(&mut self, out: &mut VecDeque<StreamEvent>) {
        let default = if self.tools.is_empty() { FinishReason::Stop } else { FinishReason::ToolCalls };
        out.push_back(StreamEvent::Finish(self.finish.take().unwrap_or(default)));
    }

    fn tool(&mut self, block: u64) -> Option<&mut ToolBlock> {
        self.tools.iter_mut().find(|t| t.block == block)
    }
}

fn usage(u: &Value) -> Usage {
    Usage {
        input_tokens: count(u, "input_tokens"),
        output_tokens: count(u, "output_tokens"),
        cache_read_tokens: count(u, "cache_read_input_tokens"),
        cache_write_tokens: count(u, "cache_creation_input_tokens"),
    }
}

impl Decode for AnthropicDecoder {
    fn event(&mut self, ev: &SseEvent, out: &mut VecDeque<StreamEvent>) -> Result<Flow, LlmError> {
        let data = ev.data.trim();
        if data.is_empty() {
            return Ok(Flow::More);
        }
        let v: Value = serde_json::from_str(data).map_err(|e| bad_json("a messages stream event", &e, data))?;
        let kind = v.get("type").and_then(Value::as_str).unwrap_or(ev.event.as_str());
        let block = v.get("index").and_then(Value::as_u64).unwrap_or(0);
        match kind {
            "message_start" => {
                if let Some(u) = v.get("message").and_then(|m| m.get("usage")) {
                    out.push_back(StreamEvent::Usage(usage(u)));
                }
            }
            "content_block_start" => {
                let cb = v.get("content_block").unwrap_or(&Value::Null);
                let text = |key| cb.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
                match cb.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        let t = text("text");
                        if !t.is_empty() {
                            out.push_back(StreamEvent::Text(t));
                        }
                    }
                    Some("tool_use") => {
                        let ordinal = self.tools.len();
                        self.tools.push(ToolBlock { block, ordinal, has_input: false });
                        out.push_back(StreamEvent::ToolCallStart {
                            index: ordinal,
                            id: text("id"),
                            name: text("name"),
                        });
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let delta = v.get("delta").unwrap_or(&Value::Null);
                let field = |key| delta.get(key).and_then(Value::as_str).unwrap_or_default();
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") if !field("text").is_empty() => {
                        out.push_back(StreamEvent::Text(field("text").to_string()));
                    }
                    Some("input_json_delta") => {
                        let piece = field("partial_json");
                        let tool = self.tool(block).ok_or_else(|| {
                            LlmError::Protocol(format!("input_json_delta for block {block}, which is not a tool_use"))
                        })?;
                        if !piece.is_empty() {
                            tool.has_input = true;
                            let index = tool.ordinal;
                            out.push_back(StreamEvent::ToolCallArgs { index, delta: piece.to_string() });
                        }
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                if let Some(tool) = self.tool(block).filter(|t| !t.has_input) {
                    // A tool called without input still gets valid JSON arguments.
                    tool.has_input = true;
                    let index = tool.ordinal;
                    out.push_back(StreamEvent::ToolCallArgs { index, delta: "{}".into() });
                }
            }
            "message_delta" => {
                if let Some(reason) = v.get("delta").and_then(|d| d.get("stop_reason")).and_then(Value::as_str) {
                    self.finish = Some(stop_reason(reason));
                }
                if let Some(u) = v.get("usage") {
                    out.push_back(StreamEvent::Usage(usage(u)));
                }
            }
            "message_stop" => {
                self.push_finish(out);
                return Ok(Flow::Done);
            }
            "error" => {
                let mut described = parse_error(0, data);
                described.status = None;
                return Err(classify(&described, &self.model, None));
            }
            _ => {}
        }
        Ok(Flow::More)
    }

    fn end(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), LlmError> {
        if self.finish.is_none() {
            return Err(LlmError::Protocol("the stream ended before message_stop".into()));
        }
        self.push_finish(out);
        Ok(())
    }
}
