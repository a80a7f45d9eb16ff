//! A fake of signal-cli's HTTP daemon (`signal-cli daemon --http --receive-mode=manual`) for
//! Butler's Signal tests, spoken to through the config `url` (`http://127.0.0.1:<port>`):
//! `GET /api/v1/check`, `GET /api/v1/events` (server-sent events `event:receive` +
//! `data:{"envelope":..,"account":..}`, keep-alive `:` lines) and `POST /api/v1/rpc` (JSON-RPC 2.0:
//! send, sendTyping, sendReceipt, sendReaction, getAttachment, getUserStatus). Answers, error codes
//! and messages follow signal-cli's source (USER_ERROR -1, INVALID_PARAMS -32602, METHOD_NOT_FOUND
//! -32601, INTERNAL_ERROR -32603; "Specified account does not exist" as the multi-account daemon).
//! Items pushed while no stream is connected wait for the next one; each goes to exactly one
//! stream, the newest open one (so a half-closed old stream never swallows an item). Stricter
//! than signal-cli on purpose: `recipient` and `groupId` together, and `textStyle`/`mention`
//! ranges outside the message (UTF-16 units), are refused with -32602. Envelope builders produce signal-cli's JSON shapes; the fixtures in
//! tests/fixtures/signal/ are the same shapes written out (sources in tests/fixtures/SOURCES.md).
//!
//! It must never call out to the network or depend on Butler's types: it stands in for signal-cli.

use axum::body::{Body, Bytes};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use base64::Engine;
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub mod envelopes;
pub use envelopes::{uuid_for, ACCOUNT, BOT_UUID};

/// A JSON-RPC error: (code, message).
type RpcError = (i64, String);

const USER_ERROR: i64 = -1;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;
const INTERNAL_ERROR: i64 = -32603;

/// One JSON-RPC call the daemon received (`params` is `null` when absent).
#[derive(Clone, Debug)]
pub struct Call {
    pub method: String,
    pub params: Value,
}

/// One message Butler sent with `send`, per recipient.
#[derive(Clone, Debug)]
pub struct Sent {
    pub timestamp: i64,
    /// The number, or `group:<groupId>`.
    pub to: String,
    pub text: String,
    /// `start:length:STYLE` as given.
    pub styles: Vec<String>,
    /// (mime, filename, bytes).
    pub attachments: Vec<(String, String, Vec<u8>)>,
    /// `quoteTimestamp`.
    pub quote: Option<i64>,
}

#[derive(Default)]
struct Inner {
    queue: VecDeque<Value>,
    last: Option<Value>,
    calls: Vec<Call>,
    sent: Vec<Sent>,
    last_ts: i64,
    failures: HashMap<String, VecDeque<RpcError>>,
    http_fail: (u16, usize),
    attachments: HashMap<String, Vec<u8>>,
    /// number -> uuid of registered Signal users.
    registered: HashMap<String, String>,
    streams_opened: usize,
    /// Ids of the open streams; only the newest takes items (a half-dead older one never does).
    open: std::collections::BTreeSet<usize>,
    /// Bumped by `drop_streams`: a stream opened in an older generation ends.
    generation: u64,
}

struct Shared {
    inner: Mutex<Inner>,
    wake: tokio::sync::Notify,
    keep_alive: Mutex<Duration>,
}

pub struct FakeSignal {
    shared: Arc<Shared>,
    addr: std::net::SocketAddr,
}

fn rpc_error(id: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "error": {"code": code, "message": message, "data": null}, "id": id})
}

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64
}

/// A string or an array of strings (signal-cli accepts both for list parameters); None if absent.
fn list(v: &Value) -> Option<Vec<String>> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(vec![s.clone()]),
        Value::Array(a) => {
            Some(a.iter().map(|x| x.as_str().map(String::from).unwrap_or_else(|| x.to_string())).collect())
        }
        other => Some(vec![other.to_string()]),
    }
}

fn valid_recipient(r: &str) -> bool {
    let number = r.strip_prefix('+').is_some_and(|d| d.len() >= 5 && d.chars().all(|c| c.is_ascii_digit()));
    number || (r.len() == 36 && r.chars().all(|c| c.is_ascii_hexdigit() || c == '-'))
}

/// Checks `start:length:X` ranges against `text` in UTF-16 code units; (start, length, X).
fn ranges(items: &[String], text: &str, what: &str) -> Result<Vec<(usize, usize, String)>, RpcError> {
    let units = text.encode_utf16().count();
    let mut out = Vec::new();
    for item in items {
        let mut parts = item.splitn(3, ':');
        let (s, l, x) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let (Ok(start), Ok(len)) = (s.parse::<usize>(), l.parse::<usize>()) else {
            let expected = if what == "textStyle" { "start:length:STYLE" } else { "start:length:recipientNumber" };
            return Err((USER_ERROR, format!("Invalid {what} syntax ({item}) expected '{expected}'")));
        };
        if x.is_empty() {
            return Err((USER_ERROR, format!("Invalid {what} syntax ({item}) expected 'start:length:...'")));
        }
        if start + len > units {
            return Err((INVALID_PARAMS, format!("{what} {item} lies outside the message ({units} UTF-16 units)")));
        }
        out.push((start, len, x.to_string()));
    }
    Ok(out)
}

/// `data:<mime>;filename=<name>;base64,<data>` or a file path: (mime, filename, bytes).
fn attachment(a: &str) -> Result<(String, String, Vec<u8>), String> {
    if let Some(rest) = a.strip_prefix("data:") {
        let (head, data) = rest.split_once(',').ok_or("data URI without ','")?;
        let mut parts = head.split(';');
        let mime = parts.next().filter(|m| !m.is_empty()).unwrap_or("text/plain").to_string();
        let mut name = String::new();
        let mut b64 = false;
        for p in parts {
            if let Some(n) = p.strip_prefix("filename=") {
                name = n.to_string();
            } else if p == "base64" {
                b64 = true;
            }
        }
        if !b64 {
            return Err("only base64 data URIs are supported".into());
        }
        let bytes = base64::engine::general_purpose::STANDARD.decode(data).map_err(|e| e.to_string())?;
        return Ok((mime, name, bytes));
    }
    let bytes = std::fs::read(a).map_err(|_| a.to_string())?;
    let name = std::path::Path::new(a).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    Ok(("application/octet-stream".into(), name, bytes))
}

impl Inner {
    fn next_ts(&mut self) -> i64 {
        self.last_ts = now_ms().max(self.last_ts + 1);
        self.last_ts
    }

    /// `{"timestamp", "results"}` as signal-cli's send-like commands answer.
    fn sent_result(&mut self, numbers: &[String]) -> Value {
        let ts = self.next_ts();
        let results: Vec<Value> = numbers
            .iter()
            .map(|n| {
                let uuid = self.registered.get(n).cloned().unwrap_or_else(|| uuid_for(n));
                json!({"recipientAddress": {"uuid": uuid, "number": n, "username": null}, "type": "SUCCESS"})
            })
            .collect();
        json!({"timestamp": ts, "results": results})
    }

    /// The recipients of a send-like call: (numbers, group ids).
    fn targets(&self, p: &Value) -> Result<(Vec<String>, Vec<String>), RpcError> {
        let numbers = list(&p["recipient"]).unwrap_or_default();
        let groups = list(&p["groupId"]).unwrap_or_default();
        if numbers.is_empty() && groups.is_empty() {
            return Err((USER_ERROR, "No recipients given".into()));
        }
        if !numbers.is_empty() && !groups.is_empty() {
            return Err((INVALID_PARAMS, "give recipient or groupId, not both".into()));
        }
        if let Some(bad) = numbers.iter().find(|n| !valid_recipient(n)) {
            return Err((USER_ERROR, format!("Invalid phone number '{bad}': not a phone number or uuid")));
        }
        Ok((numbers, groups))
    }

    fn send(&mut self, p: &Value) -> Result<Value, RpcError> {
        let (numbers, groups) = self.targets(p)?;
        let text = p["message"].as_str().unwrap_or_default().to_string();
        let mut files = Vec::new();
        for a in list(&p["attachments"]).or_else(|| list(&p["attachment"])).unwrap_or_default() {
            let f = attachment(&a)
                .map_err(|e| (INTERNAL_ERROR, format!("Failed to send message: {e} (AttachmentInvalidException)")))?;
            files.push(f);
        }
        let styles = list(&p["textStyle"]).or_else(|| list(&p["textStyles"])).unwrap_or_default();
        for (_, _, style) in ranges(&styles, &text, "textStyle")? {
            if !["NONE", "BOLD", "ITALIC", "SPOILER", "STRIKETHROUGH", "MONOSPACE"].contains(&style.as_str()) {
                return Err((USER_ERROR, format!("Invalid style: {style}")));
            }
        }
        let mentions = list(&p["mention"]).or_else(|| list(&p["mentions"])).unwrap_or_default();
        ranges(&mentions, &text, "mention")?;
        let quote = p["quoteTimestamp"].as_i64();
        if quote.is_some() && p["quoteAuthor"].as_str().is_none() {
            return Err((USER_ERROR, "Quote author parameter is missing".into()));
        }
        if text.is_empty() && files.is_empty() && quote.is_none() {
            return Err((
                USER_ERROR,
                "Sending empty message is not allowed, either a message, attachment or sticker must be given.".into(),
            ));
        }
        let result = self.sent_result(&numbers);
        let timestamp = self.last_ts;
        let tos = numbers.iter().cloned().chain(groups.iter().map(|g| format!("group:{g}")));
        for to in tos.collect::<Vec<_>>() {
            let (text, styles, attachments) = (text.clone(), styles.clone(), files.clone());
            self.sent.push(Sent { timestamp, to, text, styles, attachments, quote });
        }
        Ok(result)
    }

    fn dispatch(&mut self, method: &str, p: &Value) -> Result<Value, RpcError> {
        match method {
            "send" => self.send(p),
            "sendTyping" | "sendReaction" => {
                let (numbers, _) = self.targets(p)?;
                if method == "sendReaction"
                    && (p["emoji"].as_str().is_none() || p["targetTimestamp"].as_i64().is_none())
                {
                    return Err((USER_ERROR, "emoji and targetTimestamp are required".into()));
                }
                Ok(self.sent_result(&numbers))
            }
            "sendReceipt" => {
                let Some(to) = p["recipient"].as_str().filter(|r| valid_recipient(r)) else {
                    return Err((USER_ERROR, format!("Invalid phone number '{}'", p["recipient"])));
                };
                if list(&p["targetTimestamp"]).is_none_or(|t| t.is_empty()) {
                    return Err((USER_ERROR, "No target timestamps given".into()));
                }
                match p["type"].as_str() {
                    None | Some("read") | Some("viewed") => Ok(self.sent_result(&[to.to_string()])),
                    Some(other) => Err((USER_ERROR, format!("Unknown receipt type: {other}"))),
                }
            }
            "getAttachment" => {
                let Some(id) = p["id"].as_str() else {
                    return Err((USER_ERROR, "Missing attachment id parameter".into()));
                };
                match self.attachments.get(id) {
                    Some(b) => Ok(json!({"data": base64::engine::general_purpose::STANDARD.encode(b)})),
                    None => Err((USER_ERROR, format!("Could not find attachment with ID: {id}"))),
                }
            }
            "getUserStatus" => {
                let statuses: Vec<Value> = list(&p["recipient"])
                    .unwrap_or_default()
                    .iter()
                    .map(|r| {
                        let uuid = self.registered.get(r);
                        json!({"recipient": r, "number": r, "uuid": uuid, "isRegistered": uuid.is_some()})
                    })
                    .collect();
                Ok(Value::Array(statuses))
            }
            _ => Err((METHOD_NOT_FOUND, "Method not implemented".into())),
        }
    }

    /// One request object: its response, or None for a notification (no `id`).
    fn handle(&mut self, req: &Value) -> Option<Value> {
        let id = req.get("id").cloned().unwrap_or(Value::Null);
        if req["jsonrpc"] != "2.0" {
            return Some(rpc_error(&id, INVALID_REQUEST, "only jsonrpc version 2.0 is supported"));
        }
        let Some(method) = req["method"].as_str() else {
            return Some(rpc_error(&id, INVALID_REQUEST, "method field must be set"));
        };
        let params = req.get("params").cloned().unwrap_or(Value::Null);
        self.calls.push(Call { method: method.to_string(), params: params.clone() });
        const KNOWN: [&str; 6] =
            ["send", "sendTyping", "sendReceipt", "sendReaction", "getAttachment", "getUserStatus"];
        let outcome = if !KNOWN.contains(&method) {
            Err((METHOD_NOT_FOUND, "Method not implemented".to_string()))
        } else if params["account"].as_str().is_some_and(|a| a != ACCOUNT) {
            Err((INVALID_PARAMS, "Specified account does not exist".to_string()))
        } else if let Some(f) = self.failures.get_mut(method).and_then(VecDeque::pop_front) {
            Err(f)
        } else {
            self.dispatch(method, &params)
        };
        req.get("id")?;
        Some(match outcome {
            Ok(result) => json!({"jsonrpc": "2.0", "result": result, "id": id}),
            Err((code, message)) => rpc_error(&id, code, &message),
        })
    }
}

async fn rpc(State(s): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let mut inner = s.inner.lock().unwrap();
    if inner.http_fail.1 > 0 {
        inner.http_fail.1 -= 1;
        return StatusCode::from_u16(inner.http_fail.0).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR).into_response();
    }
    let json_type =
        headers.get("content-type").and_then(|v| v.to_str().ok()).is_some_and(|c| c.starts_with("application/json"));
    if !json_type {
        return StatusCode::UNSUPPORTED_MEDIA_TYPE.into_response();
    }
    let answer = match serde_json::from_slice::<Value>(&body) {
        Err(e) => Some(rpc_error(&Value::Null, -32700, &e.to_string())),
        Ok(Value::Array(batch)) if !batch.is_empty() => {
            let all: Vec<Value> = batch.iter().filter_map(|r| inner.handle(r)).collect();
            (!all.is_empty()).then_some(Value::Array(all))
        }
        Ok(req @ Value::Object(_)) => inner.handle(&req),
        Ok(other) => Some(rpc_error(&Value::Null, INVALID_REQUEST, &format!("unexpected type: {other}"))),
    };
    match answer {
        Some(v) => ([("content-type", "application/json")], v.to_string()).into_response(),
        None => StatusCode::CREATED.into_response(),
    }
}

/// An open stream (its id) while alive.
struct Open(Arc<Shared>, usize);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.inner.lock().unwrap().open.remove(&self.1);
        self.0.wake.notify_waiters();
    }
}

async fn events(State(s): State<Arc<Shared>>, Query(q): Query<HashMap<String, String>>) -> Response {
    if q.get("account").is_some_and(|a| !a.is_empty() && a != ACCOUNT && a != BOT_UUID) {
        return StatusCode::BAD_REQUEST.into_response();
    }
    let (generation, id) = {
        let mut inner = s.inner.lock().unwrap();
        inner.streams_opened += 1;
        let id = inner.streams_opened;
        inner.open.insert(id);
        (inner.generation, id)
    };
    let state = (Open(s.clone(), id), tokio::time::Instant::now());
    let stream = futures::stream::unfold(state, move |(open, mut last_beat)| async move {
        let s = open.0.clone();
        loop {
            let woken = s.wake.notified();
            {
                let mut inner = s.inner.lock().unwrap();
                if inner.generation != generation {
                    return None;
                }
                let newest = inner.open.last() == Some(&id);
                if let Some(item) = if newest { inner.queue.pop_front() } else { None } {
                    inner.last = Some(item.clone());
                    let frame = format!("event:receive\ndata:{item}\n\n");
                    return Some((Ok::<_, std::convert::Infallible>(frame), (open, last_beat)));
                }
            }
            let beat = *s.keep_alive.lock().unwrap();
            if last_beat.elapsed() >= beat {
                last_beat = tokio::time::Instant::now();
                return Some((Ok(":\n".to_string()), (open, last_beat)));
            }
            tokio::select! {
                _ = woken => {}
                _ = tokio::time::sleep_until(last_beat + beat) => {}
            }
        }
    });
    ([("content-type", "text/event-stream"), ("cache-control", "no-cache")], Body::from_stream(stream)).into_response()
}

impl FakeSignal {
    pub async fn start() -> Self {
        let mut inner = Inner::default();
        inner.registered.insert(ACCOUNT.into(), BOT_UUID.into());
        let shared = Arc::new(Shared {
            inner: Mutex::new(inner),
            wake: tokio::sync::Notify::new(),
            keep_alive: Mutex::new(Duration::from_secs(1)),
        });
        let app = Router::new()
            .route("/api/v1/check", get(|| async { StatusCode::OK }))
            .route("/api/v1/events", get(events))
            .route("/api/v1/rpc", post(rpc))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind fake signal");
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { shared, addr }
    }

    /// Butler's config `url`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// How often open streams send a keep-alive comment (default 1 s; the real daemon: 15 s).
    pub fn set_keep_alive(&self, every: Duration) {
        *self.shared.keep_alive.lock().unwrap() = every;
        self.shared.wake.notify_waiters();
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.shared.inner.lock().unwrap()
    }

    /// Queues an envelope (wrapped as `{"envelope":..,"account":ACCOUNT}`; a value that already
    /// has `envelope` is queued as is) for the next stream; registers its sender.
    pub fn push(&self, envelope: Value) {
        let item = if envelope.get("envelope").is_some() {
            envelope
        } else {
            json!({"envelope": envelope, "account": ACCOUNT})
        };
        let e = &item["envelope"];
        if let (Some(n), Some(u)) = (e["sourceNumber"].as_str(), e["sourceUuid"].as_str()) {
            self.inner().registered.entry(n.into()).or_insert_with(|| u.into());
        }
        self.inner().queue.push_back(item);
        self.shared.wake.notify_waiters();
    }

    /// Queues the last delivered item again (a redelivery of the same envelope).
    pub fn redeliver_last(&self) {
        let mut inner = self.inner();
        if let Some(last) = inner.last.clone() {
            inner.queue.push_back(last);
        }
        drop(inner);
        self.shared.wake.notify_waiters();
    }

    /// Items queued and not yet handed to a stream.
    pub fn pending(&self) -> usize {
        self.inner().queue.len()
    }

    pub fn streams_opened(&self) -> usize {
        self.inner().streams_opened
    }

    pub fn streams_open(&self) -> usize {
        self.inner().open.len()
    }

    /// Ends every open event stream (the daemon restarting); queued items stay.
    pub fn drop_streams(&self) {
        self.inner().generation += 1;
        self.shared.wake.notify_waiters();
    }

    /// Marks `number` as a registered Signal user with `uuid` (for getUserStatus).
    pub fn register(&self, number: &str, uuid: &str) {
        self.inner().registered.insert(number.into(), uuid.into());
    }

    /// A received attachment `getAttachment` can return.
    pub fn add_attachment(&self, id: &str, bytes: Vec<u8>) {
        self.inner().attachments.insert(id.into(), bytes);
    }

    /// The next call of `method` answers this JSON-RPC error.
    pub fn fail_next(&self, method: &str, code: i64, message: &str) {
        self.inner().failures.entry(method.into()).or_default().push_back((code, message.into()));
    }

    /// The next `n` POSTs to /api/v1/rpc answer HTTP `status` with no body.
    pub fn fail_http(&self, status: u16, n: usize) {
        self.inner().http_fail = (status, n);
    }

    pub fn calls(&self) -> Vec<Call> {
        self.inner().calls.clone()
    }

    pub fn calls_of(&self, method: &str) -> Vec<Call> {
        self.calls().into_iter().filter(|c| c.method == method).collect()
    }

    pub fn sent(&self) -> Vec<Sent> {
        self.inner().sent.clone()
    }

    /// Waits up to `secs` until the messages sent so far satisfy `done`.
    pub async fn wait_sent(&self, secs: u64, what: &str, done: impl Fn(&[Sent]) -> bool) -> Vec<Sent> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
        loop {
            let sent = self.sent();
            if done(&sent) {
                return sent;
            }
            if tokio::time::Instant::now() > deadline {
                panic!("timed out waiting for {what}; sent: {sent:#?}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}
