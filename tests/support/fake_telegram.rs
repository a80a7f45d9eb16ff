//! A fake Telegram Bot API server for tests and benchmarks, spoken to by the real teloxide
//! client through `api_url`: `POST /bot<token>/<method>` with JSON bodies, answered in the Bot
//! API's envelope (`{"ok": true, "result": ...}` / `{"ok": false, "error_code", "description",
//! "parameters"}`, see tests/fixtures/telegram/api_responses.json).
//!
//! Methods: getMe, deleteWebhook, setWebhook, getUpdates (long poll, offsets confirm updates as
//! Telegram does; 409 while a webhook is set, and - after `refuse_concurrent_polls` - 409 to a
//! getUpdates that arrives while another is still waiting, as Telegram answers a second bot
//! instance), sendMessage, editMessageText,
//! editMessageReplyMarkup, answerCallbackQuery, sendChatAction, setMyCommands; getFile, the file
//! download route, sendPhoto and sendDocument (`files.rs`). HTML is parsed as Telegram parses it
//! (`html.rs`): bad markup and over-long texts are refused.
//! Every call is recorded with its arrival time; `fail_next` scripts a 429 with retry_after,
//! 400 "message is not modified", 5xx or any error for the next call of a method. `violations`
//! lists where Butler broke Telegram's rate limits (two messages to one chat within 1 s, more
//! than 30 in a second).
//!
//! It must never call out to the network or depend on Butler's types: it stands in for Telegram.

pub mod files;
pub mod html;
pub mod updates;

use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

pub const BOT_ID: i64 = 7_000_000_001;
pub const BOT_USERNAME: &str = "butler_test_bot";
const NOT_MODIFIED: &str = "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message";

/// One call Butler made.
#[derive(Clone, Debug)]
pub struct Call {
    pub seq: usize,
    pub at: Instant,
    pub method: String,
    pub body: Value,
}

/// A scripted answer for the next call of a method.
#[derive(Clone, Debug)]
pub enum Failure {
    /// 429 with `retry_after` seconds (header and parameters, as the server sends it).
    RetryAfter(u32),
    /// 400 "message is not modified".
    NotModified,
    /// A 5xx with the server's JSON error body.
    Server(u16),
    /// Any other error: HTTP status = error_code, and the description.
    Error(u16, String),
}

/// A message as the chat shows it.
#[derive(Clone, Debug)]
pub struct Shown {
    pub chat: i64,
    pub id: i64,
    pub thread: Option<i64>,
    /// The visible text (after HTML parsing).
    pub text: String,
    pub html: String,
    pub entities: Vec<html::Entity>,
    /// (label, callback_data) of the inline keyboard, row by row flattened.
    pub buttons: Vec<(String, String)>,
    pub reply_to: Option<i64>,
    pub edits: usize,
    /// The photo or document of a sendPhoto / sendDocument (`text` is then its caption).
    pub file: Option<files::SentFile>,
}

#[derive(Default)]
struct Inner {
    pending: VecDeque<Value>,
    next_update: i64,
    webhook: Option<(String, Option<String>)>,
    messages: Vec<Shown>,
    next_message: i64,
    calls: Vec<Call>,
    failures: HashMap<String, VecDeque<Failure>>,
    /// Updates handed out by getUpdates (update ids, with repeats when re-fetched).
    handed_out: Vec<i64>,
    /// getUpdates calls waiting now, and those refused because another was waiting.
    polling: usize,
    conflicts: usize,
    /// `refuse_concurrent_polls` was called.
    exclusive_polls: bool,
    /// Files getFile knows, by file_id.
    files: HashMap<String, files::FakeFile>,
    /// file_path of every download asked for, in order.
    downloads: Vec<String>,
}

struct Shared {
    token: String,
    inner: Mutex<Inner>,
    updates: Notify,
    calls: Notify,
}

pub struct FakeTelegram {
    shared: Arc<Shared>,
    addr: std::net::SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeTelegram {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub fn bot_user() -> Value {
    json!({"id": BOT_ID, "is_bot": true, "first_name": "Butler", "username": BOT_USERNAME})
}

impl FakeTelegram {
    /// Starts the fake on an ephemeral loopback port; `token` is the one valid bot token.
    pub async fn start(token: &str) -> Self {
        Self::start_on(token, 0).await
    }

    /// Starts it on `port` (0 for any), e.g. again on the same port after a restart.
    pub async fn start_on(token: &str, port: u16) -> Self {
        let shared = Arc::new(Shared {
            token: token.to_string(),
            inner: Mutex::new(Inner { next_update: 100_000, next_message: 1, ..Inner::default() }),
            updates: Notify::new(),
            calls: Notify::new(),
        });
        let app = Router::new()
            .route("/{bot}/{method}", post(api).get(api))
            .route("/file/{bot}/{*path}", get(files::download))
            // Bots may upload up to 50 MB.
            .layer(DefaultBodyLimit::max(64 * 1024 * 1024))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await.expect("bind fake telegram");
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { shared, addr, task }
    }

    /// The `api_url` for Butler's config.
    pub fn api_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        lock(&self.shared)
    }

    /// Queues an update (an object like `{"message": ...}`); returns its update_id.
    pub fn push(&self, mut update: Value) -> i64 {
        let id = {
            let mut s = self.lock();
            let id = match update["update_id"].as_i64() {
                Some(id) => id,
                None => {
                    s.next_update += 1;
                    s.next_update
                }
            };
            update["update_id"] = json!(id);
            // Handed out in update_id order, as Telegram does.
            let at =
                s.pending.iter().position(|u| u["update_id"].as_i64().unwrap_or(0) > id).unwrap_or(s.pending.len());
            s.pending.insert(at, update);
            id
        };
        self.shared.updates.notify_waiters();
        id
    }

    /// Updates not yet confirmed by a getUpdates offset.
    /// From now on a getUpdates that arrives while another waits is answered 409 Conflict, as
    /// Telegram answers a second bot instance.
    pub fn refuse_concurrent_polls(&self) {
        lock(&self.shared).exclusive_polls = true;
    }

    /// getUpdates calls answered 409 because another one was waiting.
    pub fn conflicts(&self) -> usize {
        lock(&self.shared).conflicts
    }

    pub fn pending(&self) -> usize {
        self.lock().pending.len()
    }

    /// Every update id getUpdates handed out, in order (repeats show re-fetches).
    pub fn handed_out(&self) -> Vec<i64> {
        self.lock().handed_out.clone()
    }

    /// The next call of `method` fails with `failure` (several queue up in order).
    pub fn fail_next(&self, method: &str, failure: Failure) {
        self.lock().failures.entry(method.to_string()).or_default().push_back(failure);
    }

    pub fn calls(&self, method: &str) -> Vec<Call> {
        self.lock().calls.iter().filter(|c| c.method == method).cloned().collect()
    }

    pub fn all_calls(&self) -> Vec<Call> {
        self.lock().calls.clone()
    }

    /// Waits (up to `secs`) until `method` was called `n` times; returns those calls.
    pub async fn wait_calls(&self, method: &str, n: usize, secs: u64) -> Vec<Call> {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let notified = self.shared.calls.notified();
            let calls = self.calls(method);
            if calls.len() >= n {
                return calls;
            }
            if Instant::now() > deadline {
                panic!("{method} was called {} times, not {n}; calls: {:#?}", calls.len(), self.summary());
            }
            let _ = tokio::time::timeout(Duration::from_millis(100), notified).await;
        }
    }

    /// Waits until `pred` holds for the messages of `chat`; returns them.
    pub async fn wait_chat(&self, chat: i64, secs: u64, what: &str, pred: impl Fn(&[Shown]) -> bool) -> Vec<Shown> {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let notified = self.shared.calls.notified();
            let shown = self.chat(chat);
            if pred(&shown) {
                return shown;
            }
            if Instant::now() > deadline {
                panic!("{what} never happened in chat {chat}: {shown:#?}\ncalls: {:#?}", self.summary());
            }
            let _ = tokio::time::timeout(Duration::from_millis(100), notified).await;
        }
    }

    /// The messages of one chat, oldest first.
    pub fn chat(&self, chat: i64) -> Vec<Shown> {
        self.lock().messages.iter().filter(|m| m.chat == chat).cloned().collect()
    }

    pub fn message(&self, chat: i64, id: i64) -> Option<Shown> {
        self.lock().messages.iter().find(|m| m.chat == chat && m.id == id).cloned()
    }

    /// The Message object Telegram would put in a callback query for a shown message.
    pub fn message_json(&self, chat: i64, id: i64) -> Value {
        let m = self.message(chat, id).expect("a message the fake showed");
        message_json(&m)
    }

    /// Registers a file getFile answers for `file_id` (and the download route serves).
    pub fn add_file(&self, file_id: &str, file: files::FakeFile) {
        self.lock().files.insert(file_id.to_string(), file);
    }

    /// The file_path of every download Butler asked for, in order.
    pub fn downloads(&self) -> Vec<String> {
        self.lock().downloads.clone()
    }

    /// The webhook set with setWebhook: (url, secret_token).
    pub fn webhook(&self) -> Option<(String, Option<String>)> {
        self.lock().webhook.clone()
    }

    /// Method names in call order, for failure messages.
    pub fn summary(&self) -> Vec<String> {
        self.lock().calls.iter().map(|c| format!("{} {}", c.method, c.body)).collect()
    }

    /// Places Butler broke Telegram's limits: two message calls (sends of text or files, edits) to one
    /// chat less than `gap` apart, or more than 30 in any second overall.
    pub fn violations(&self, gap: Duration) -> Vec<String> {
        let calls: Vec<Call> = self
            .all_calls()
            .into_iter()
            .filter(|c| {
                ["sendMessage", "sendPhoto", "sendDocument", "editMessageText", "editMessageReplyMarkup"]
                    .contains(&c.method.as_str())
            })
            .collect();
        let mut out = Vec::new();
        let mut last: HashMap<String, Instant> = HashMap::new();
        for c in &calls {
            let chat = c.body["chat_id"].to_string();
            if let Some(prev) = last.insert(chat.clone(), c.at) {
                if c.at.duration_since(prev) < gap {
                    out.push(format!("chat {chat}: {} after {:?}", c.method, c.at.duration_since(prev)));
                }
            }
        }
        for (i, c) in calls.iter().enumerate() {
            let n = calls[i..].iter().take_while(|d| d.at.duration_since(c.at) < Duration::from_millis(950)).count();
            if n > 30 {
                out.push(format!("{n} messages within a second from call {}", c.seq));
            }
        }
        out
    }
}

fn lock(s: &Shared) -> MutexGuard<'_, Inner> {
    s.inner.lock().unwrap_or_else(|p| p.into_inner())
}

fn ok(result: Value) -> Response {
    Json(json!({"ok": true, "result": result})).into_response()
}

fn fail(code: u16, description: &str) -> Response {
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::BAD_REQUEST);
    (status, Json(json!({"ok": false, "error_code": code, "description": description}))).into_response()
}

fn failure(f: Failure) -> Response {
    match f {
        Failure::RetryAfter(n) => {
            let body = json!({"ok": false, "error_code": 429, "description": format!("Too Many Requests: retry after {n}"), "parameters": {"retry_after": n}});
            (StatusCode::TOO_MANY_REQUESTS, [("Retry-After", n.to_string())], Json(body)).into_response()
        }
        Failure::NotModified => fail(400, NOT_MODIFIED),
        Failure::Server(code) => fail(code, if code == 502 { "Bad Gateway" } else { "Internal Server Error" }),
        Failure::Error(code, d) => fail(code, &d),
    }
}

fn now_secs() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64
}

fn message_json(m: &Shown) -> Value {
    let mut v = json!({"message_id": m.id, "from": bot_user(), "chat": updates::chat(m.chat, m.thread.is_some()), "date": now_secs()});
    match &m.file {
        None => v["text"] = json!(m.text),
        Some(f) => {
            files::message_fields(f, &mut v);
            if !m.text.is_empty() {
                v["caption"] = json!(m.text);
            }
        }
    }
    if let Some(t) = m.thread {
        v["message_thread_id"] = json!(t);
        v["is_topic_message"] = json!(true);
    }
    if !m.buttons.is_empty() {
        let row: Vec<Value> = m.buttons.iter().map(|(l, d)| json!({"text": l, "callback_data": d})).collect();
        v["reply_markup"] = json!({"inline_keyboard": [row]});
    }
    v
}

fn buttons(markup: &Value) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for row in markup["inline_keyboard"].as_array().into_iter().flatten() {
        for b in row.as_array().into_iter().flatten() {
            let data = b["callback_data"].as_str().unwrap_or("").to_string();
            if data.is_empty() || data.len() > 64 {
                return Err("Bad Request: BUTTON_DATA_INVALID".into());
            }
            out.push((b["text"].as_str().unwrap_or("").to_string(), data));
        }
    }
    Ok(out)
}

/// The visible text and entities of a text in the given parse mode, or the server's error.
fn render(body: &Value) -> Result<(String, String, Vec<html::Entity>), String> {
    let raw = body["text"].as_str().unwrap_or("").to_string();
    let (text, entities) = match body["parse_mode"].as_str() {
        Some("HTML") => html::parse(&raw)?,
        Some(other) => return Err(format!("Bad Request: unsupported parse_mode {other}")),
        None => (raw.clone(), vec![]),
    };
    if text.trim().is_empty() {
        return Err("Bad Request: message text is empty".into());
    }
    if text.encode_utf16().count() > 4096 {
        return Err("Bad Request: message is too long".into());
    }
    Ok((text, raw, entities))
}

async fn api(
    State(s): State<Arc<Shared>>,
    Path((bot, method)): Path<(String, String)>,
    headers: axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let content_type = headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("");
    // teloxide sends setWebhook and file uploads as multipart/form-data.
    let parts =
        if content_type.starts_with("multipart/form-data") { files::parts(content_type, &body) } else { vec![] };
    let body: Value = if content_type.starts_with("multipart/form-data") {
        files::fields(&parts)
    } else {
        serde_json::from_slice(&body).unwrap_or(json!({}))
    };
    // Method names are case-insensitive (teloxide sends `GetMe`); record them as documented.
    let mut method = method;
    if let Some(first) = method.get(..1).map(str::to_ascii_lowercase) {
        method.replace_range(..1, &first);
    }
    if bot != format!("bot{}", s.token) {
        return fail(401, "Unauthorized");
    }
    let scripted = {
        let mut st = lock(&s);
        let seq = st.calls.len();
        st.calls.push(Call { seq, at: Instant::now(), method: method.clone(), body: body.clone() });
        st.failures.get_mut(&method).and_then(VecDeque::pop_front)
    };
    s.calls.notify_waiters();
    if let Some(f) = scripted {
        return failure(f);
    }
    match method.as_str() {
        "getMe" => ok(
            json!({"id": BOT_ID, "is_bot": true, "first_name": "Butler", "username": BOT_USERNAME, "can_join_groups": true, "can_read_all_group_messages": false, "supports_inline_queries": false, "can_connect_to_business": false, "has_main_web_app": false}),
        ),
        "deleteWebhook" => {
            lock(&s).webhook = None;
            ok(json!(true))
        }
        "setWebhook" => {
            let url = body["url"].as_str().unwrap_or("").to_string();
            lock(&s).webhook = Some((url, body["secret_token"].as_str().map(str::to_string)));
            ok(json!(true))
        }
        "getUpdates" => get_updates(&s, &body).await,
        "sendMessage" => send_message(&s, &body),
        "editMessageText" | "editMessageReplyMarkup" => edit(&s, &method, &body),
        "answerCallbackQuery" => {
            if body["text"].as_str().is_some_and(|t| t.chars().count() > 200) {
                return fail(400, "Bad Request: MESSAGE_TOO_LONG");
            }
            ok(json!(true))
        }
        "sendChatAction" | "setMyCommands" => ok(json!(true)),
        "getFile" => files::get_file(&s, &body),
        "sendPhoto" | "sendDocument" => files::send(&s, &method, &body, &parts),
        _ => fail(404, &format!("Not Found: method {method} not found")),
    }
}

async fn get_updates(s: &Arc<Shared>, body: &Value) -> Response {
    {
        let mut st = lock(s);
        if st.exclusive_polls && st.polling > 0 {
            st.conflicts += 1;
            return fail(
                409,
                "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running",
            );
        }
        st.polling += 1;
    }
    /// Counts the call out however it ends (the client may go away mid-poll).
    struct Polling<'a>(&'a Arc<Shared>);
    impl Drop for Polling<'_> {
        fn drop(&mut self) {
            lock(self.0).polling -= 1;
        }
    }
    let _polling = Polling(s);
    let timeout = Duration::from_secs(body["timeout"].as_u64().unwrap_or(0));
    let limit = body["limit"].as_u64().unwrap_or(100) as usize;
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let notified = s.updates.notified();
        {
            let mut st = lock(s);
            if st.webhook.is_some() {
                return fail(409, "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first");
            }
            if let Some(offset) = body["offset"].as_i64() {
                // An offset confirms every update below it: Telegram forgets them.
                st.pending.retain(|u| u["update_id"].as_i64().unwrap_or(0) >= offset);
            }
            if !st.pending.is_empty() {
                let batch: Vec<Value> = st.pending.iter().take(limit).cloned().collect();
                let ids: Vec<i64> = batch.iter().filter_map(|u| u["update_id"].as_i64()).collect();
                st.handed_out.extend(ids);
                return ok(Value::Array(batch));
            }
        }
        if tokio::time::timeout_at(deadline, notified).await.is_err() {
            return ok(json!([]));
        }
    }
}

fn thread_of(body: &Value) -> Option<i64> {
    body["message_thread_id"].as_i64()
}

fn send_message(s: &Arc<Shared>, body: &Value) -> Response {
    let Some(chat) = body["chat_id"].as_i64() else { return fail(400, "Bad Request: chat not found") };
    let (text, html, entities) = match render(body) {
        Ok(r) => r,
        Err(e) => return fail(400, &e),
    };
    let buttons = match buttons(&body["reply_markup"]) {
        Ok(b) => b,
        Err(e) => return fail(400, &e),
    };
    let mut st = lock(s);
    let id = st.next_message;
    st.next_message += 1;
    let shown = Shown {
        chat,
        id,
        thread: thread_of(body),
        text,
        html,
        entities,
        buttons,
        reply_to: body["reply_parameters"]["message_id"].as_i64(),
        edits: 0,
        file: None,
    };
    let json = message_json(&shown);
    st.messages.push(shown);
    ok(json)
}

fn edit(s: &Arc<Shared>, method: &str, body: &Value) -> Response {
    let (Some(chat), Some(id)) = (body["chat_id"].as_i64(), body["message_id"].as_i64()) else {
        return fail(400, "Bad Request: message identifier is not specified");
    };
    let new_buttons = match buttons(&body["reply_markup"]) {
        Ok(b) => b,
        Err(e) => return fail(400, &e),
    };
    let rendered = if method == "editMessageText" {
        match render(body) {
            Ok(r) => Some(r),
            Err(e) => return fail(400, &e),
        }
    } else {
        None
    };
    let mut st = lock(s);
    let Some(m) = st.messages.iter_mut().find(|m| m.chat == chat && m.id == id) else {
        return fail(400, "Bad Request: message to edit not found");
    };
    let (text, html, entities) = rendered.unwrap_or_else(|| (m.text.clone(), m.html.clone(), m.entities.clone()));
    if html == m.html && new_buttons == m.buttons {
        return fail(400, NOT_MODIFIED);
    }
    (m.text, m.html, m.entities, m.buttons) = (text, html, entities, new_buttons);
    m.edits += 1;
    let json = message_json(m);
    ok(json)
}
