//! OpenAI Chat Completions, streamed (`stream: true`, `stream_options.include_usage`), for
//! OpenAI itself and every compatible server (Ollama, vLLM, llama.cpp, OpenRouter).
//!
//! [`OpenAiDecoder`] reads `chat.completion.chunk` events: text deltas, tool call deltas keyed
//! by `index` (mapped to 0-based ordinals, tolerating servers that reuse index 0 with new ids),
//! `finish_reason`, the final usage chunk with empty `choices`, `[DONE]`, and `{"error":...}`
//! payloads. The key is sent only as a bearer token; this module must never log it, and
//! `input_tokens` must never count cached tokens twice (it excludes `cached_tokens`).

use super::decode::{bad_json, count, Decode, Flow};
use super::errors::{classify, ProviderError};
use super::http::Transport;
use super::sse::SseEvent;
use super::{ChatMessage, ChatRequest, FinishReason, LlmError, LlmStream, Provider, StreamEvent, Usage};
use async_trait::async_trait;
use bytes::Bytes;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde::Serialize;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::VecDeque;

/// A Chat Completions endpoint (`{base_url}/chat/completions`).
pub(crate) struct OpenAi {
    transport: Transport,
    url: String,
    max_tokens: u32,
    /// OpenAI's own API wants `max_completion_tokens`; compatible servers know `max_tokens`.
    completion_tokens_field: bool,
}

impl OpenAi {
    pub(crate) fn new(transport: Transport, base_url: &str, max_tokens: u32) -> Self {
        let base = base_url.trim_end_matches('/');
        Self {
            url: format!("{base}/chat/completions"),
            completion_tokens_field: base.contains("://api.openai.com"),
            transport,
            max_tokens,
        }
    }

    /// The JSON request body, serialized straight from borrowed data (this runs once per model
    /// call, so it avoids building an intermediate JSON tree).
    pub(crate) fn body(&self, req: &ChatRequest) -> Vec<u8> {
        let mut messages = Vec::with_capacity(req.messages.len() + 1);
        if !req.system.is_empty() {
            messages.push(Msg::System { content: &req.system });
        }
        // Chat Completions takes images only in user messages: the images of a run of tool
        // results follow it as one user message naming the calls they came from.
        let mut images: Vec<Part> = Vec::new();
        for m in &req.messages {
            if !matches!(m, ChatMessage::Tool { .. }) && !images.is_empty() {
                messages.push(Msg::UserParts { content: std::mem::take(&mut images) });
            }
            messages.push(match m {
                ChatMessage::User { content, name, images: sent } if !sent.is_empty() => {
                    let mut parts = vec![Part::Text { text: speaker_text(name.as_deref(), content).into_owned() }];
                    parts.extend(sent.iter().map(|i| Part::ImageUrl { image_url: ImageUrl { url: i.data_url() } }));
                    Msg::UserParts { content: parts }
                }
                ChatMessage::User { content, name, .. } => {
                    Msg::User { content: speaker_text(name.as_deref(), content) }
                }
                ChatMessage::Assistant { content, tool_calls } => Msg::Assistant {
                    content: (!content.is_empty() || tool_calls.is_empty()).then_some(content.as_str()),
                    tool_calls: tool_calls
                        .iter()
                        .map(|c| Call {
                            id: &c.id,
                            kind: "function",
                            function: CallFn { name: &c.name, arguments: arguments_or_empty(&c.arguments) },
                        })
                        .collect(),
                },
                ChatMessage::Tool { call_id, content, is_error, images: shown } => {
                    if !shown.is_empty() {
                        let n = shown.len();
                        images.push(Part::Text { text: format!("[{n} image(s) returned by tool call {call_id}]") });
                        images
                            .extend(shown.iter().map(|i| Part::ImageUrl { image_url: ImageUrl { url: i.data_url() } }));
                    }
                    Msg::Tool { tool_call_id: call_id, content: tool_result_text(content, *is_error) }
                }
            });
        }
        if !images.is_empty() {
            messages.push(Msg::UserParts { content: images });
        }
        let max = req.max_tokens.unwrap_or(self.max_tokens);
        let (max_tokens, max_completion_tokens) =
            if self.completion_tokens_field { (None, Some(max)) } else { (Some(max), None) };
        let body = Body {
            model: self.transport.model(),
            messages,
            stream: true,
            stream_options: StreamOptions { include_usage: true },
            max_tokens,
            max_completion_tokens,
            tools: req
                .tools
                .iter()
                .map(|t| ToolSpec {
                    kind: "function",
                    function: FnSpec { name: &t.name, description: &t.description, parameters: t.schema() },
                })
                .collect(),
        };
        serde_json::to_vec(&body).unwrap_or_default()
    }
}

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    messages: Vec<Msg<'a>>,
    stream: bool,
    stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<ToolSpec<'a>>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum Msg<'a> {
    System {
        content: &'a str,
    },
    User {
        content: Cow<'a, str>,
    },
    Assistant {
        content: Option<&'a str>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<Call<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: Cow<'a, str>,
    },
    #[serde(rename = "user")]
    UserParts {
        content: Vec<Part>,
    },
}

/// One part of a user message with images.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part {
    Text { text: String },
    ImageUrl { image_url: ImageUrl },
}

#[derive(Serialize)]
struct ImageUrl {
    url: String,
}

#[derive(Serialize)]
struct Call<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: CallFn<'a>,
}

#[derive(Serialize)]
struct CallFn<'a> {
    name: &'a str,
    arguments: &'a str,
}

#[derive(Serialize)]
struct ToolSpec<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: FnSpec<'a>,
}

#[derive(Serialize)]
struct FnSpec<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a serde_json::value::RawValue,
}

#[async_trait]
impl Provider for OpenAi {
    fn name(&self) -> &str {
        "openai"
    }

    fn model(&self) -> &str {
        self.transport.model()
    }

    async fn stream(&self, req: &ChatRequest) -> Result<LlmStream, LlmError> {
        let body = Bytes::from(self.body(req));
        let build = || {
            let rb = self
                .transport
                .post(&self.url)
                .header(CONTENT_TYPE, "application/json")
                .header(ACCEPT, "text/event-stream")
                .body(body.clone());
            match self.transport.key() {
                Some(key) => rb.bearer_auth(key),
                None => rb,
            }
        };
        let model = self.transport.model();
        self.transport.open(build, || OpenAiDecoder::new(model), parse_error).await
    }
}

/// A group speaker is named in the text, which every server and chat template understands.
pub(crate) fn speaker_text<'a>(name: Option<&str>, content: &'a str) -> Cow<'a, str> {
    match name.map(str::trim).filter(|n| !n.is_empty()) {
        Some(name) => Cow::Owned(format!("[{name}] {content}")),
        None => Cow::Borrowed(content),
    }
}

/// Tool failures are marked in the text for providers without an error flag.
pub(crate) fn tool_result_text(content: &str, is_error: bool) -> Cow<'_, str> {
    if is_error {
        Cow::Owned(format!("error: {content}"))
    } else {
        Cow::Borrowed(content)
    }
}

fn arguments_or_empty(args: &str) -> &str {
    if args.trim().is_empty() {
        "{}"
    } else {
        args
    }
}

/// Parses an error response body: `{"error": {...}}`, `{"error": "text"}`, `{"detail": ...}`
/// or anything else as plain text.
pub(crate) fn parse_error(status: u16, body: &str) -> ProviderError {
    match serde_json::from_str::<Value>(body) {
        Ok(v) => {
            let mut e = from_json(v.get("error").unwrap_or(&v));
            e.status = Some(status);
            e
        }
        Err(_) => ProviderError::plain(status, body),
    }
}

fn from_json(e: &Value) -> ProviderError {
    let text = |v: Option<&Value>| match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    };
    if let Some(s) = e.as_str() {
        return ProviderError { message: s.to_string(), ..ProviderError::default() };
    }
    let message = match e.get("message") {
        Some(m) => text(Some(m)),
        None => text(e.get("detail")),
    };
    ProviderError { status: None, kind: text(e.get("type")), code: text(e.get("code")), message }
}

fn finish_reason(s: &str) -> FinishReason {
    match s {
        "stop" => FinishReason::Stop,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "length" => FinishReason::Length,
        other => FinishReason::Other(other.to_string()),
    }
}

/// One tool call seen so far: the server's index and id.
struct Seen {
    index: Option<u64>,
    id: String,
}

/// Decodes Chat Completions chunks. Text and tool call events are emitted as they arrive;
/// `Finish` is held back until `[DONE]` (or the end of the body) so that it comes last,
/// after the usage chunk.
pub struct OpenAiDecoder {
    model: String,
    calls: Vec<Seen>,
    finish: Option<FinishReason>,
}

impl OpenAiDecoder {
    /// `model` is named in an `UnknownModel` error arriving inside the stream.
    pub fn new(model: &str) -> Self {
        Self { model: model.to_string(), calls: Vec::new(), finish: None }
    }

    fn tool_delta(&mut self, call: &Value, out: &mut VecDeque<StreamEvent>) {
        let index = call.get("index").and_then(Value::as_u64);
        let id = call.get("id").and_then(Value::as_str).filter(|s| !s.is_empty());
        let function = call.get("function");
        let name = function.and_then(|f| f.get("name")).and_then(Value::as_str).filter(|s| !s.is_empty());
        let args = function.and_then(|f| f.get("arguments")).and_then(Value::as_str).unwrap_or_default();

        let known = match index {
            Some(i) => self.calls.iter().rposition(|c| c.index == Some(i)),
            None => self.calls.len().checked_sub(1),
        };
        let same_call = |pos: usize, calls: &[Seen]| id.is_none_or(|id| calls[pos].id == id);
        let ordinal = match known {
            Some(pos) if same_call(pos, &self.calls) => {
                if let Some(name) = name {
                    out.push_back(StreamEvent::ToolCallStart { index: pos, id: String::new(), name: name.into() });
                }
                pos
            }
            _ => {
                let ordinal = self.calls.len();
                let id = id.map_or_else(|| format!("call_{ordinal}"), str::to_string);
                self.calls.push(Seen { index, id: id.clone() });
                out.push_back(StreamEvent::ToolCallStart {
                    index: ordinal,
                    id,
                    name: name.unwrap_or_default().to_string(),
                });
                ordinal
            }
        };
        if !args.is_empty() {
            out.push_back(StreamEvent::ToolCallArgs { index: ordinal, delta: args.to_string() });
        }
    }

    fn push_finish(&mut self, out: &mut VecDeque<StreamEvent>) {
        let finish = self.finish.take().unwrap_or(if self.calls.is_empty() {
            FinishReason::Stop
        } else {
            FinishReason::ToolCalls
        });
        out.push_back(StreamEvent::Finish(finish));
    }
}

impl Decode for OpenAiDecoder {
    fn event(&mut self, ev: &SseEvent, out: &mut VecDeque<StreamEvent>) -> Result<Flow, LlmError> {
        let data = ev.data.trim();
        if data == "[DONE]" {
            self.push_finish(out);
            return Ok(Flow::Done);
        }
        if data.is_empty() {
            return Ok(Flow::More);
        }
        let v: Value = serde_json::from_str(data).map_err(|e| bad_json("a chat completion chunk", &e, data))?;
        if let Some(err) = v.get("error").filter(|e| !e.is_null()) {
            return Err(classify(&from_json(err), &self.model, None));
        }
        if ev.event == "error" {
            return Err(classify(&from_json(&v), &self.model, None));
        }
        if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
            let cached = u.get("prompt_tokens_details").map_or(0, |d| count(d, "cached_tokens"));
            out.push_back(StreamEvent::Usage(Usage {
                input_tokens: count(u, "prompt_tokens").saturating_sub(cached),
                output_tokens: count(u, "completion_tokens"),
                cache_read_tokens: cached,
                cache_write_tokens: 0,
            }));
        }
        let choices = v.get("choices").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        for choice in choices.iter().filter(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0) {
            if let Some(delta) = choice.get("delta") {
                if let Some(text) = delta.get("content").and_then(Value::as_str).filter(|t| !t.is_empty()) {
                    out.push_back(StreamEvent::Text(text.to_string()));
                }
                for call in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
                    self.tool_delta(call, out);
                }
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish = Some(finish_reason(reason));
            }
        }
        Ok(Flow::More)
    }

    fn end(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), LlmError> {
        if self.finish.is_none() {
            return Err(LlmError::Protocol("the stream ended before the response was complete".into()));
        }
        self.push_finish(out);
        Ok(())
    }
}
