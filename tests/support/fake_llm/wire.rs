//! Wire rendering for the fake LLM: each provider's real error JSON and SSE event stream, with
//! the delays, pauses and cuts a `Reply` asks for. Must never decide which reply to send (that
//! is `fake_llm`'s job) and never sleep unless the reply asks for it.

use super::reply::{pieces, words, Content, Failure};
use super::{Protocol, Reply, Request};
use axum::body::Body;
use axum::http::StatusCode;
use axum::response::Response;
use bytes::Bytes;
use futures::StreamExt as _;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub(super) fn invalid_request(protocol: Protocol, message: &str) -> Value {
    match protocol {
        Protocol::Anthropic => {
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}})
        }
        _ => {
            json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": null}})
        }
    }
}

pub(super) fn json_response(status: u16, headers: &[(String, String)], body: String) -> Response {
    let mut b = Response::builder().status(StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR));
    b = b.header("content-type", "application/json");
    for (k, v) in headers {
        b = b.header(k.as_str(), v.as_str());
    }
    b.body(Body::from(body)).expect("a valid fake response")
}

fn masked(key: &str) -> String {
    let chars: Vec<char> = key.chars().collect();
    if chars.len() <= 8 {
        return "*".repeat(chars.len());
    }
    let head: String = chars[..3].iter().collect();
    let tail: String = chars[chars.len() - 4..].iter().collect();
    format!("{head}{}{tail}", "*".repeat(chars.len() - 7))
}

pub(super) fn failure_response(f: &Failure, reply: &Reply, req: &Request) -> Response {
    let anthropic = req.protocol == Protocol::Anthropic;
    let a = |kind: &str, message: &str| json!({"type": "error", "error": {"type": kind, "message": message}});
    let o = |kind: &str, code: Value, message: &str| json!({"error": {"message": message, "type": kind, "param": null, "code": code}});
    let (status, body) = match f {
        Failure::BadKey if anthropic => (401, a("authentication_error", "invalid x-api-key")),
        Failure::BadKey => {
            let msg = format!(
                "Incorrect API key provided: {}. You can find your API key at https://platform.openai.com/account/api-keys.",
                masked(&req.key)
            );
            (401, o("invalid_request_error", json!("invalid_api_key"), &msg))
        }
        Failure::UnknownModel if anthropic => (404, a("not_found_error", &format!("model: {}", req.model))),
        Failure::UnknownModel => {
            let msg = format!("The model `{}` does not exist or you do not have access to it.", req.model);
            (404, o("invalid_request_error", json!("model_not_found"), &msg))
        }
        Failure::ContextTooLong if anthropic => {
            (400, a("invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum"))
        }
        Failure::ContextTooLong => {
            let msg = "This model's maximum context length is 128000 tokens. However, your messages resulted in \
                       131072 tokens. Please reduce the length of the messages.";
            let mut body = o("invalid_request_error", json!("context_length_exceeded"), msg);
            body["error"]["param"] = json!("messages");
            (400, body)
        }
        Failure::RateLimited if anthropic => {
            (429, a("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"))
        }
        Failure::RateLimited => {
            let msg = format!(
                "Rate limit reached for {} in organization org-fake on requests per min (RPM): Limit 3, Used 3, \
                 Requested 1. Please try again in 20s.",
                req.model
            );
            (429, o("requests", json!("rate_limit_exceeded"), &msg))
        }
        Failure::Server(529) if anthropic => (529, a("overloaded_error", "Overloaded")),
        Failure::Server(s) if anthropic => (*s, a("api_error", "Internal server error")),
        Failure::Server(s) => (
            *s,
            o("server_error", Value::Null, "The server had an error while processing your request. Sorry about that!"),
        ),
        Failure::Raw { status, body } => return json_response(*status, &reply.headers, body.clone()),
    };
    json_response(status, &reply.headers, body.to_string())
}

/// SSE frames of one reply, each flagged when it carries a content delta.
struct Frames {
    frames: Vec<(String, bool)>,
}

impl Frames {
    fn data(&mut self, v: Value, content: bool) {
        self.frames.push((format!("data: {v}\n\n"), content));
    }

    fn event(&mut self, name: &str, v: Value, content: bool) {
        self.frames.push((format!("event: {name}\ndata: {v}\n\n"), content));
    }
}

pub(super) fn stream_response(reply: &Reply, req: &Request) -> Response {
    let text: Vec<String> = match &reply.content {
        Content::Echo => words(&format!("echo: {}", req.user_text)),
        Content::Chunks(c) => c.clone(),
        Content::Computed(f) => words(&(f.0)(&req.all_text)),
    };
    let tools: Vec<(String, Vec<String>)> =
        reply.tools.iter().map(|(name, args)| (name.clone(), pieces(args, reply.arg_piece_len))).collect();
    let deltas = text.len() + tools.iter().map(|(_, p)| p.len()).sum::<usize>();
    let (input, output) = reply.usage.unwrap_or(((req.body_len as u64 / 4).max(1), deltas.max(1) as u64));
    let id = next_id();
    let mut f = Frames { frames: Vec::with_capacity(deltas + 8) };
    let error_frame = if req.protocol == Protocol::Anthropic {
        anthropic_frames(&mut f, reply, req, &id, &text, &tools, (input, output));
        let message = reply.error_message.as_deref().unwrap_or("Overloaded");
        format!(
            "event: error\ndata: {}\n\n",
            json!({"type": "error", "error": {"type": "overloaded_error", "message": message}})
        )
    } else {
        openai_frames(&mut f, reply, req, &id, &text, &tools, (input, output));
        let message = reply
            .error_message
            .as_deref()
            .unwrap_or("The server had an error while processing your request. Sorry about that!");
        format!(
            "data: {}\n\n",
            json!({"error": {"message": message, "type": "server_error", "param": null, "code": null}})
        )
    };
    // Delays, pauses and the cut for drop_after / error_after.
    let cut = reply.drop_after.or(reply.error_after);
    let mut out: Vec<(Duration, Bytes)> = Vec::with_capacity(f.frames.len() + 1);
    let mut seen = 0;
    let mut cut_here = false;
    let mut pause = Duration::ZERO;
    for (i, (frame, content)) in f.frames.into_iter().enumerate() {
        if content && cut.is_some_and(|n| seen >= n) {
            cut_here = true;
            break;
        }
        let delay = if i > 0 { reply.chunk_delay } else { Duration::ZERO } + std::mem::take(&mut pause);
        if content {
            seen += 1;
            if let Some((n, d)) = reply.pause_after {
                if n == seen {
                    pause = d;
                }
            }
        }
        out.push((delay, Bytes::from(frame)));
    }
    let dropped = cut_here && reply.drop_after.is_some();
    if cut_here && !dropped {
        out.push((reply.chunk_delay + pause, Bytes::from(error_frame)));
    }

    let mut b = Response::builder()
        .status(200)
        .header("content-type", "text/event-stream; charset=utf-8")
        .header("cache-control", "no-cache");
    for (k, v) in &reply.headers {
        b = b.header(k.as_str(), v.as_str());
    }
    let body = if !dropped && out.iter().all(|(d, _)| d.is_zero()) {
        Body::from(out.into_iter().map(|(_, b)| b).collect::<Vec<_>>().concat())
    } else {
        let items = out.into_iter().map(|(d, bytes)| (d, Ok::<_, std::io::Error>(bytes)));
        // The pause lets what was sent reach the client before the connection dies, as it
        // would from a real server; without it hyper may discard the unflushed frames.
        let tail =
            dropped.then(|| (Duration::from_millis(50), Err(std::io::Error::other("fake LLM dropped the connection"))));
        let stream = futures::stream::iter(items.chain(tail)).then(|(delay, item)| async move {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            item
        });
        Body::from_stream(stream)
    };
    b.body(body).expect("a valid fake response")
}

fn next_id() -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(1);
    format!("{:08}", NEXT.fetch_add(1, Ordering::Relaxed))
}

fn openai_frames(
    f: &mut Frames,
    reply: &Reply,
    req: &Request,
    id: &str,
    text: &[String],
    tools: &[(String, Vec<String>)],
    (input, output): (u64, u64),
) {
    let created = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let chunk = |delta: Value, finish: Value| {
        json!({"id": format!("chatcmpl-fake{id}"), "object": "chat.completion.chunk", "created": created,
               "model": req.model, "system_fingerprint": "fp_fake",
               "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]})
    };
    f.data(chunk(json!({"role": "assistant", "content": "", "refusal": null}), Value::Null), false);
    for t in text {
        f.data(chunk(json!({"content": t}), Value::Null), true);
    }
    for (i, (name, args)) in tools.iter().enumerate() {
        let call = json!({"index": i, "id": format!("call_fake{id}_{i}"), "type": "function",
                          "function": {"name": name, "arguments": ""}});
        f.data(chunk(json!({"tool_calls": [call]}), Value::Null), false);
        for piece in args {
            f.data(chunk(json!({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}), Value::Null), true);
        }
    }
    let finish = match (reply.length_limited, tools.is_empty()) {
        (true, _) => "length",
        (false, true) => "stop",
        (false, false) => "tool_calls",
    };
    f.data(chunk(json!({}), json!(finish)), false);
    let (read, _) = reply.cache;
    f.data(
        json!({"id": format!("chatcmpl-fake{id}"), "object": "chat.completion.chunk", "created": created,
               "model": req.model, "system_fingerprint": "fp_fake", "choices": [],
               "usage": {"prompt_tokens": input + read, "completion_tokens": output,
                         "total_tokens": input + read + output,
                         "prompt_tokens_details": {"cached_tokens": read},
                         "completion_tokens_details": {"reasoning_tokens": 0}}}),
        false,
    );
    f.frames.push(("data: [DONE]\n\n".to_string(), false));
}

fn anthropic_frames(
    f: &mut Frames,
    reply: &Reply,
    req: &Request,
    id: &str,
    text: &[String],
    tools: &[(String, Vec<String>)],
    (input, output): (u64, u64),
) {
    let (read, write) = reply.cache;
    f.event(
        "message_start",
        json!({"type": "message_start", "message": {"id": format!("msg_fake{id}"), "type": "message",
               "role": "assistant", "content": [], "model": req.model, "stop_reason": null, "stop_sequence": null,
               "usage": {"input_tokens": input, "cache_creation_input_tokens": write,
                         "cache_read_input_tokens": read, "output_tokens": 1}}}),
        false,
    );
    let mut index = 0;
    if !text.is_empty() {
        f.event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            false,
        );
        f.event("ping", json!({"type": "ping"}), false);
        for t in text {
            f.event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}}),
                true,
            );
        }
        f.event("content_block_stop", json!({"type": "content_block_stop", "index": 0}), false);
        index = 1;
    }
    for (i, (name, args)) in tools.iter().enumerate() {
        let block = index + i;
        f.event(
            "content_block_start",
            json!({"type": "content_block_start", "index": block,
                   "content_block": {"type": "tool_use", "id": format!("toolu_fake{id}_{i}"), "name": name,
                                     "input": {}}}),
            false,
        );
        f.event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": block,
                   "delta": {"type": "input_json_delta", "partial_json": ""}}),
            false,
        );
        for piece in args {
            f.event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": block,
                       "delta": {"type": "input_json_delta", "partial_json": piece}}),
                true,
            );
        }
        f.event("content_block_stop", json!({"type": "content_block_stop", "index": block}), false);
    }
    let stop = match (reply.length_limited, tools.is_empty()) {
        (true, _) => "max_tokens",
        (false, true) => "end_turn",
        (false, false) => "tool_use",
    };
    f.event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
               "usage": {"output_tokens": output}}),
        false,
    );
    f.event("message_stop", json!({"type": "message_stop"}), false);
}
