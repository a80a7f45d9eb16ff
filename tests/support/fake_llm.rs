//! A scripted fake LLM server for tests and benchmarks. It speaks both wire protocols in their
//! real SSE format (the same shape as `tests/fixtures/llm/*.sse`):
//! OpenAI Chat Completions at `POST /v1/chat/completions` and Anthropic Messages at
//! `POST /v1/messages`. It must never call out to the network, never depend on Butler's own
//! types (it is a stand-in for a real server), and never sleep unless a reply asks for it.
//!
//! Choosing the reply for a request, first match wins:
//! 1. rules, in the order added, whose needle is a substring of the request's last user text
//!    (`on` replies are used once each, in order; an `on_every` reply is used every time);
//! 2. the FIFO queue filled by `push`;
//! 3. the default reply: `echo: <last user text>`, one chunk per word, no delay
//!    (`set_default` changes it).
//!
//! "Last user text" is the text of the last `user` message that has text (tool results are
//! skipped), so one rule answers every step of one conversation's turn, and concurrent
//! conversations with distinct texts are scripted deterministically whatever their order.
//! The server runs on the current Tokio runtime and stops when the `FakeLlm` is dropped.
//!
//! ```ignore
//! let llm = FakeLlm::start().await;
//! cfg.base_url = Some(llm.openai_url());      // http://127.0.0.1:PORT/v1
//! // or llm.anthropic_url()                    // http://127.0.0.1:PORT
//! llm.push(Reply::text("Hello there!").chunk_delay(Duration::from_millis(5)));
//! llm.on("weather", Reply::tool_call("get_weather", json!({"city": "Paris"})));
//! llm.on("weather", Reply::text("Sunny in Paris."));   // the request after the tool result
//! llm.push(Reply::rate_limited(1));                     // 429 + Retry-After: 1
//! llm.push(Reply::unknown_model());                     // 404 in each provider's real shape
//! // ... drive the code under test ...
//! assert_eq!(llm.request_count(), 3);
//! let req = llm.last_request().unwrap();
//! assert_eq!(req.header("anthropic-version"), Some("2023-06-01"));
//! assert!(req.last_user_text().contains("weather"));
//! ```
//!
//! `GET /v1/models` lists `serve_models` (default `fake-model`) and is not recorded.
//!
//! `POST /v1/embeddings` answers in OpenAI's shape (`input` a string or a list of strings,
//! `dimensions` default 64, `encoding_format` `float` or `base64`) with the vectors of
//! `support::embedder::embed(model, text, dimensions)`, and needs the key of `require_api_key`
//! like a chat request. Embedding requests are not chat requests: they are not counted in
//! `request_count`, `requests` or `wait_for_requests`, but listed by `embedding_requests`.
//! Scripting (`fail_embeddings(n)`: 500s, `embeddings_rate_limited(n, secs)`: 429s with
//! `Retry-After`, both in OpenAI's error shape, the 429s first; `embedding_delay(d)` before
//! every answer) is separate from the chat replies and cleared by `reset`.
//!
//! Replies: `text`, `chunks`, `echo`, `tool_call` (+ `and_tool_call`, `and_raw_tool_call`,
//! `with_text`); errors in each provider's real JSON shape (`bad_key`, `unknown_model`,
//! `context_too_long`, `rate_limited`, `server_error`, `http_error`); modifiers
//! (`first_byte_delay`, `chunk_delay`, `pause_after`, `drop_after`, `error_after`,
//! `error_message`, `usage`, `cache_usage`, `max_tokens_reached`, `arg_piece_len`, `header`).
//! Every streamed reply reports usage. `require_api_key` makes keyless or wrong-key requests
//! get `bad_key()`. Requests are recorded (the last 10,000 by default, see
//! `set_record_limit`; a benchmark may use 0); `request_count` counts all of them and
//! `wait_for_requests` waits for a count; `reset` clears everything between cases.

use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, Method, Uri};
use axum::response::Response;
use axum::Router;
use bytes::Bytes;
pub use embeddings::EmbeddingRequest;
use reply::Failure;
pub use reply::Reply;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;
use wire::{failure_response, invalid_request, json_response, stream_response};

mod embeddings;
mod reply;
mod wire;

/// Which wire protocol a request used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    OpenAi,
    Anthropic,
    /// Any other path (answered with 404).
    Unknown,
}

/// One request the fake received.
#[derive(Clone, Debug)]
pub struct RecordedRequest {
    /// 0-based arrival number.
    pub seq: usize,
    pub protocol: Protocol,
    pub method: String,
    pub path: String,
    /// Header names are lowercase.
    pub headers: Vec<(String, String)>,
    /// The JSON body (`Null` when it was not JSON).
    pub body: Value,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers.iter().find(|(k, _)| *k == name).map(|(_, v)| v.as_str())
    }

    /// The key the client sent: `Authorization: Bearer ...` or `x-api-key`.
    pub fn api_key(&self) -> Option<&str> {
        self.header("authorization").and_then(|v| v.strip_prefix("Bearer ")).or_else(|| self.header("x-api-key"))
    }

    pub fn model(&self) -> &str {
        self.body.get("model").and_then(Value::as_str).unwrap_or_default()
    }

    pub fn messages(&self) -> &[Value] {
        self.body.get("messages").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
    }

    pub fn tools(&self) -> &[Value] {
        self.body.get("tools").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
    }

    /// The system prompt: OpenAI's system message, or Anthropic's `system` (string or blocks).
    pub fn system_text(&self) -> String {
        match self.protocol {
            Protocol::Anthropic => text_of(self.body.get("system").unwrap_or(&Value::Null)),
            _ => self
                .messages()
                .iter()
                .filter(|m| m.get("role").and_then(Value::as_str) == Some("system"))
                .map(|m| text_of(m.get("content").unwrap_or(&Value::Null)))
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }

    /// The text of the last user message that has text (tool-result-only messages skipped, and
    /// the user message of images right after OpenAI tool results, which carries their images).
    pub fn last_user_text(&self) -> String {
        let msgs = self.messages();
        let role = |i: usize| msgs.get(i).and_then(|m| m.get("role")).and_then(Value::as_str);
        let has_image = |i: usize| {
            msgs[i]["content"].as_array().is_some_and(|parts| parts.iter().any(|p| p["type"] == "image_url"))
        };
        (0..msgs.len())
            .rev()
            .filter(|&i| role(i) == Some("user") && !(i > 0 && role(i - 1) == Some("tool") && has_image(i)))
            .map(|i| text_of(msgs[i].get("content").unwrap_or(&Value::Null)))
            .find(|t| !t.is_empty())
            .unwrap_or_default()
    }

    /// The `image_url` URLs of every user message (OpenAI) and the `image` blocks' data of
    /// every user message and tool result (Anthropic), in order.
    pub fn images(&self) -> Vec<String> {
        let mut out = Vec::new();
        for m in self.messages() {
            for part in m.get("content").and_then(Value::as_array).into_iter().flatten() {
                if let Some(url) = part.pointer("/image_url/url").and_then(Value::as_str) {
                    out.push(url.to_string());
                }
                if let Some(data) = part.pointer("/source/data").and_then(Value::as_str) {
                    out.push(data.to_string());
                }
                for inner in part.get("content").and_then(Value::as_array).into_iter().flatten() {
                    if let Some(data) = inner.pointer("/source/data").and_then(Value::as_str) {
                        out.push(data.to_string());
                    }
                }
            }
        }
        out
    }

    /// The content of the last tool result (OpenAI `tool` message or Anthropic `tool_result`).
    pub fn last_tool_result(&self) -> Option<String> {
        for m in self.messages().iter().rev() {
            if m.get("role").and_then(Value::as_str) == Some("tool") {
                return Some(text_of(m.get("content").unwrap_or(&Value::Null)));
            }
            let blocks = m.get("content").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
            if let Some(b) = blocks.iter().rev().find(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
            {
                return Some(text_of(b.get("content").unwrap_or(&Value::Null)));
            }
        }
        None
    }
}

/// The text inside an untrusted fence (Butler puts what tools read from outside between
/// `<untrusted nonce="N" source="S">` and `</untrusted nonce="N">` lines), checking that both
/// lines carry the same nonce; `None` when `result` is not fenced.
pub fn fenced(result: &str) -> Option<String> {
    let (head, rest) = result.split_once('\n')?;
    let nonce = head.strip_prefix("<untrusted nonce=\"")?.split('"').next()?;
    let body = rest.strip_suffix(&format!("\n</untrusted nonce=\"{nonce}\">"))?;
    Some(body.to_string())
}

/// A string, or the `text` parts of an array of content blocks joined.
fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

struct Rule {
    needle: String,
    once: VecDeque<Arc<Reply>>,
    every: Option<Arc<Reply>>,
}

struct Script {
    rules: Vec<Rule>,
    queue: VecDeque<Arc<Reply>>,
    default: Arc<Reply>,
    api_key: Option<String>,
    /// What `GET /v1/models` lists (`serve_models`).
    models: Vec<String>,
}

impl Script {
    fn pick(&mut self, text: &str) -> Arc<Reply> {
        for rule in self.rules.iter_mut().filter(|r| text.contains(&r.needle)) {
            if let Some(r) = rule.once.pop_front() {
                return r;
            }
            if let Some(r) = &rule.every {
                return r.clone();
            }
        }
        self.queue.pop_front().unwrap_or_else(|| self.default.clone())
    }
}

struct Shared {
    script: Mutex<Script>,
    requests: Mutex<VecDeque<RecordedRequest>>,
    record_limit: AtomicUsize,
    count: AtomicUsize,
    arrived: Notify,
    embeddings: embeddings::Embeddings,
}

/// A running fake; the server stops when this is dropped.
pub struct FakeLlm {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeLlm {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeLlm {
    /// Binds 127.0.0.1 on a free port and serves on the current Tokio runtime.
    pub async fn start() -> Self {
        let shared = Arc::new(Shared {
            script: Mutex::new(Script {
                rules: Vec::new(),
                queue: VecDeque::new(),
                default: Arc::new(Reply::echo()),
                api_key: None,
                models: vec!["fake-model".to_string()],
            }),
            requests: Mutex::new(VecDeque::new()),
            record_limit: AtomicUsize::new(10_000),
            count: AtomicUsize::new(0),
            arrived: Notify::new(),
            embeddings: embeddings::Embeddings::default(),
        });
        let app = Router::new().fallback(handle).layer(DefaultBodyLimit::max(64 << 20)).with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind the fake LLM");
        let addr = listener.local_addr().expect("fake LLM address");
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { addr, shared, task }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT/v1`, the base URL for an OpenAI-compatible client.
    pub fn openai_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// `http://127.0.0.1:PORT`, the base URL for an Anthropic client.
    pub fn anthropic_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn script(&self) -> std::sync::MutexGuard<'_, Script> {
        self.shared.script.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues a reply for the next request that matches no rule.
    pub fn push(&self, reply: Reply) {
        self.script().queue.push_back(Arc::new(reply));
    }

    /// Answers the next request whose last user text contains `needle` with `reply`, once.
    /// Several calls with one needle are used in order. The empty needle matches every request.
    pub fn on(&self, needle: &str, reply: Reply) {
        let mut script = self.script();
        match script.rules.iter_mut().find(|r| r.needle == needle) {
            Some(rule) => rule.once.push_back(Arc::new(reply)),
            None => script.rules.push(Rule {
                needle: needle.to_string(),
                once: VecDeque::from([Arc::new(reply)]),
                every: None,
            }),
        }
    }

    /// Answers every request whose last user text contains `needle` with `reply` (after any
    /// once-replies of that needle are used up).
    pub fn on_every(&self, needle: &str, reply: Reply) {
        let mut script = self.script();
        match script.rules.iter_mut().find(|r| r.needle == needle) {
            Some(rule) => rule.every = Some(Arc::new(reply)),
            None => script.rules.push(Rule {
                needle: needle.to_string(),
                once: VecDeque::new(),
                every: Some(Arc::new(reply)),
            }),
        }
    }

    /// Replaces the default reply (used when no rule matches and the queue is empty).
    pub fn set_default(&self, reply: Reply) {
        self.script().default = Arc::new(reply);
    }

    /// What `GET /v1/models` lists from now on (default: `fake-model`), in OpenAI's shape; it
    /// answers 401 without the key `require_api_key` asks for.
    pub fn serve_models(&self, names: &[&str]) {
        self.script().models = names.iter().map(|n| n.to_string()).collect();
    }

    /// From now on, requests without this key get `bad_key()`.
    pub fn require_api_key(&self, key: &str) {
        self.script().api_key = Some(key.to_string());
    }

    /// Removes rules, queued replies and recorded requests (embedding ones too, with their
    /// script), zeroes the count, restores the echo default and drops the key requirement.
    pub fn reset(&self) {
        self.shared.embeddings.reset();
        let mut script = self.script();
        script.rules.clear();
        script.queue.clear();
        script.default = Arc::new(Reply::echo());
        script.api_key = None;
        let mut requests = self.shared.requests.lock().unwrap_or_else(|p| p.into_inner());
        requests.clear();
        self.shared.count.store(0, Ordering::SeqCst);
    }

    /// Keep only the last `n` requests (0: record none; counting goes on).
    pub fn set_record_limit(&self, n: usize) {
        self.shared.record_limit.store(n, Ordering::Relaxed);
    }

    /// The recorded requests, oldest first.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.requests.lock().unwrap_or_else(|p| p.into_inner()).iter().cloned().collect()
    }

    /// Waits (up to 30 s) for the first request that carries a tool result, and returns that
    /// result; `context` is shown if none comes (e.g. the server's log).
    pub async fn first_tool_result(&self, context: impl Fn() -> String) -> String {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            if let Some(result) = self.requests().iter().find_map(|r| r.last_tool_result()) {
                return result;
            }
            assert!(std::time::Instant::now() < deadline, "no tool result; log:\n{}", context());
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
    }

    /// Waits (up to 20 s) for `n` requests whose last user text contains `needle`; returns them.
    pub async fn requests_for(&self, needle: &str, n: usize) -> Vec<RecordedRequest> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let found: Vec<_> = self.requests().into_iter().filter(|r| r.last_user_text().contains(needle)).collect();
            if found.len() >= n || std::time::Instant::now() > deadline {
                assert!(found.len() >= n, "expected {n} requests for {needle:?}, got {}", found.len());
                return found;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
    }

    /// The embedding requests received (the last 10,000), oldest first.
    pub fn embedding_requests(&self) -> Vec<EmbeddingRequest> {
        self.shared.embeddings.requests()
    }

    /// The next `n` embedding requests get a 500 `server_error`.
    pub fn fail_embeddings(&self, n: usize) {
        self.shared.embeddings.fail(n);
    }

    /// The next `n` embedding requests get a 429 `rate_limit_exceeded` with `Retry-After: secs`
    /// (before any `fail_embeddings`).
    pub fn embeddings_rate_limited(&self, n: usize, retry_after_secs: u64) {
        self.shared.embeddings.rate_limit(n, retry_after_secs);
    }

    /// Every embedding answer (success or error) waits `d` first (zero: no wait).
    pub fn embedding_delay(&self, d: Duration) {
        self.shared.embeddings.delay(d);
    }

    pub fn last_request(&self) -> Option<RecordedRequest> {
        self.shared.requests.lock().unwrap_or_else(|p| p.into_inner()).back().cloned()
    }

    /// How many requests arrived in total (recorded or not).
    pub fn request_count(&self) -> usize {
        self.shared.count.load(Ordering::SeqCst)
    }

    /// Waits until at least `n` requests arrived; false on timeout.
    pub async fn wait_for_requests(&self, n: usize, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.shared.arrived.notified();
            if self.request_count() >= n {
                return true;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return self.request_count() >= n;
            }
        }
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let protocol = match (method == Method::POST, uri.path()) {
        (true, "/v1/chat/completions") => Protocol::OpenAi,
        (true, "/v1/messages") => Protocol::Anthropic,
        _ => Protocol::Unknown,
    };
    let req = RecordedRequest {
        seq: 0,
        protocol,
        method: method.to_string(),
        path: uri.path().to_string(),
        headers: headers
            .iter()
            .map(|(k, v)| (k.as_str().to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
            .collect(),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    };
    let view = Request {
        protocol,
        model: req.model().to_string(),
        user_text: req.last_user_text(),
        all_text: {
            let texts = req.messages().iter().map(|m| text_of(m.get("content").unwrap_or(&Value::Null)));
            std::iter::once(req.system_text()).chain(texts).collect::<Vec<_>>().join("\n")
        },
        key: req.api_key().unwrap_or_default().to_string(),
        body_len: body.len(),
    };
    // Model listings are answered but not recorded: requests are the completions.
    if method == Method::GET && uri.path() == "/v1/models" {
        let script = shared.script.lock().unwrap_or_else(|p| p.into_inner());
        if script.api_key.as_ref().is_some_and(|k| *k != view.key) {
            let body = json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}});
            return json_response(401, &[], body.to_string());
        }
        let data: Vec<Value> =
            script.models.iter().map(|m| json!({"id": m, "object": "model", "owned_by": "fake"})).collect();
        return json_response(200, &[], json!({"object": "list", "data": data}).to_string());
    }
    // Embeddings have their own log and script: they are not completions.
    if method == Method::POST && uri.path() == "/v1/embeddings" {
        // OpenAI's endpoint: the key comes as `Authorization: Bearer`, nothing else.
        let key = req.header("authorization").and_then(|v| v.strip_prefix("Bearer ")).map(str::to_string);
        let wrong_key = {
            let script = shared.script.lock().unwrap_or_else(|p| p.into_inner());
            script.api_key.as_ref().is_some_and(|k| key.as_ref() != Some(k))
        };
        let refusal = wrong_key.then(|| failure_response(&Failure::BadKey, &Reply::bad_key(), &view));
        return shared.embeddings.answer(&body, key, refusal).await;
    }
    let problem = check(&req);
    record(&shared, req);

    if protocol == Protocol::Unknown {
        let body = json!({"error": {"message": format!("Unknown request URL: {method} {}", uri.path()),
                                    "type": "invalid_request_error", "param": null, "code": "unknown_url"}});
        return json_response(404, &[], body.to_string());
    }
    if let Some(message) = problem {
        return json_response(400, &[], invalid_request(protocol, &message).to_string());
    }
    let reply = {
        let mut script = shared.script.lock().unwrap_or_else(|p| p.into_inner());
        match &script.api_key {
            Some(k) if *k != view.key => Arc::new(Reply::bad_key()),
            _ => script.pick(&view.user_text),
        }
    };
    if !reply.first_byte_delay.is_zero() {
        tokio::time::sleep(reply.first_byte_delay).await;
    }
    match &reply.failure {
        Some(f) => failure_response(f, &reply, &view),
        None => stream_response(&reply, &view),
    }
}

/// What rendering a reply needs to know about its request.
struct Request {
    protocol: Protocol,
    model: String,
    user_text: String,
    /// The system prompt and every message's text, in order.
    all_text: String,
    key: String,
    body_len: usize,
}

fn record(shared: &Shared, mut req: RecordedRequest) {
    let limit = shared.record_limit.load(Ordering::Relaxed);
    {
        let mut requests = shared.requests.lock().unwrap_or_else(|p| p.into_inner());
        req.seq = shared.count.fetch_add(1, Ordering::SeqCst);
        if limit > 0 {
            while requests.len() >= limit {
                requests.pop_front();
            }
            requests.push_back(req);
        }
    }
    shared.arrived.notify_waiters();
}

/// The checks a real server makes before anything else; a message for a 400 on failure.
fn check(req: &RecordedRequest) -> Option<String> {
    if req.protocol == Protocol::Unknown {
        return None;
    }
    if req.body.is_null() {
        return Some("the request body is not valid JSON".into());
    }
    if req.model().is_empty() {
        return Some("model: field required".into());
    }
    if req.body.get("messages").and_then(Value::as_array).is_none() {
        return Some("messages: field required".into());
    }
    if req.protocol == Protocol::Anthropic && req.body.get("max_tokens").and_then(Value::as_u64).is_none() {
        return Some("max_tokens: field required".into());
    }
    None
}
