//! A fake of Meta's WhatsApp Business Cloud API for tests, spoken to by Butler's real adapter
//! through `api_url` (`http://127.0.0.1:<port>/v23.0`), and a webhook sender that signs
//! deliveries as Meta does (`X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body with
//! the app secret>`). Payload shapes follow Meta's documentation; the base payloads are the
//! fixtures in tests/fixtures/whatsapp/ (sources in tests/fixtures/SOURCES.md).
//!
//! Graph API routes: `GET /v23.0/{id}` (the phone number, or a media id's URL),
//! `POST /v23.0/{phone_number_id}/messages` (text, interactive, image, document, read receipts),
//! `POST /v23.0/{phone_number_id}/media` (multipart upload), `GET /files/{media_id}` (the
//! download). It checks what WhatsApp checks (the bearer token, a text of at most 4,096
//! characters, at most 3 reply buttons with titles of at most 20 characters, at most 10 list
//! rows) and answers with Graph API error objects; `fail_next` scripts an error code for the
//! next message.
//!
//! It must never call out to the network or depend on Butler's types: it stands in for Meta.

use axum::extract::{Multipart, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub const TOKEN: &str = "EAAG-fake-whatsapp-token";
pub const PHONE_NUMBER_ID: &str = "106540352242922";
pub const APP_SECRET: &str = "fake-app-secret-7c1d";
pub const VERIFY_TOKEN: &str = "fake-verify-token-42";

/// One message Butler sent (or a read receipt), as the fake received it.
#[derive(Clone, Debug)]
pub struct Sent {
    pub id: String,
    pub to: String,
    /// `text`, `interactive`, `image`, `document`, or `read` for a read receipt.
    pub kind: String,
    pub body: Value,
}

impl Sent {
    /// The text a person sees: the body of a text, an interactive message's body, a caption.
    pub fn text(&self) -> String {
        let b = &self.body;
        let t = match self.kind.as_str() {
            "text" => &b["text"]["body"],
            "interactive" => &b["interactive"]["body"]["text"],
            "image" | "document" => &b[self.kind.as_str()]["caption"],
            "template" => &b["template"]["components"][0]["parameters"][0]["text"],
            _ => &Value::Null,
        };
        t.as_str().unwrap_or_default().to_string()
    }

    /// (title, id) of reply buttons or list rows.
    pub fn buttons(&self) -> Vec<(String, String)> {
        let i = &self.body["interactive"];
        let items: Vec<&Value> = if i["type"] == "list" {
            i["action"]["sections"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|s| s["rows"].as_array().into_iter().flatten())
                .collect()
        } else {
            i["action"]["buttons"].as_array().into_iter().flatten().map(|b| &b["reply"]).collect()
        };
        items
            .iter()
            .map(|r| (r["title"].as_str().unwrap_or_default().into(), r["id"].as_str().unwrap_or_default().into()))
            .collect()
    }
}

#[derive(Default)]
struct Inner {
    sent: Vec<Sent>,
    next: u64,
    failures: VecDeque<i64>,
    /// Uploaded media: id -> (mime, bytes).
    media: HashMap<String, (String, Vec<u8>)>,
    /// Requests refused for a bad token.
    unauthorized: usize,
}

struct Shared {
    inner: Mutex<Inner>,
    base: Mutex<String>,
}

pub struct FakeWhatsApp {
    shared: Arc<Shared>,
    addr: std::net::SocketAddr,
    http: reqwest::Client,
}

fn graph_error(code: i64, message: &str) -> Response {
    let status = if code == 190 { StatusCode::UNAUTHORIZED } else { StatusCode::BAD_REQUEST };
    let body = json!({"error": {"message": format!("(#{code}) {message}"), "type": "OAuthException", "code": code,
        "error_data": {"messaging_product": "whatsapp", "details": message}, "fbtrace_id": "AfakeTrace"}});
    (status, Json(body)).into_response()
}

fn authorized(shared: &Shared, headers: &HeaderMap) -> bool {
    let ok = headers.get("authorization").and_then(|v| v.to_str().ok()) == Some(&format!("Bearer {TOKEN}"));
    if !ok {
        shared.inner.lock().unwrap().unauthorized += 1;
    }
    ok
}

/// What WhatsApp would refuse in a message object, as (code, message).
fn refusal(body: &Value) -> Option<(i64, String)> {
    if body["messaging_product"] != "whatsapp" {
        return Some((100, "messaging_product must be whatsapp".into()));
    }
    match body["type"].as_str().unwrap_or_default() {
        "text" => {
            let text = body["text"]["body"].as_str().unwrap_or_default();
            if text.is_empty() || text.chars().count() > 4096 {
                return Some((100, format!("text.body must be 1-4096 characters, got {}", text.chars().count())));
            }
        }
        "interactive" => {
            let i = &body["interactive"];
            let text = i["body"]["text"].as_str().unwrap_or_default();
            if text.is_empty() || text.chars().count() > 1024 {
                return Some((100, "interactive body.text must be 1-1024 characters".into()));
            }
            if i["type"] == "button" {
                let buttons = i["action"]["buttons"].as_array().cloned().unwrap_or_default();
                let bad = buttons
                    .iter()
                    .any(|b| b["reply"]["title"].as_str().is_none_or(|t| t.is_empty() || t.chars().count() > 20));
                if buttons.is_empty() || buttons.len() > 3 || bad {
                    return Some((131009, "at most 3 buttons with titles of 1-20 characters".into()));
                }
            } else {
                let rows: usize = i["action"]["sections"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|s| s["rows"].as_array().map_or(0, Vec::len))
                    .sum();
                if rows == 0 || rows > 10 {
                    return Some((131009, "a list holds 1-10 rows".into()));
                }
            }
        }
        "template" => {
            let t = &body["template"];
            let params = t["components"][0]["parameters"].as_array().cloned().unwrap_or_default();
            let bad = params
                .iter()
                .any(|p| p["text"].as_str().is_none_or(|x| x.contains(['\n', '\t']) || x.contains("     ")));
            if t["name"].as_str().is_none() || t["language"]["code"].as_str().is_none() || bad {
                return Some((132018, "template parameters may hold no new-line, tab or more than 4 spaces".into()));
            }
        }
        "image" | "document" => {
            if body[body["type"].as_str().unwrap_or_default()]["id"].as_str().is_none() {
                return Some((100, "media id missing".into()));
            }
        }
        other => return Some((100, format!("unknown type {other}"))),
    }
    None
}

async fn messages(
    State(s): State<Arc<Shared>>,
    Path(pn): Path<String>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    if !authorized(&s, &headers) {
        return graph_error(190, "Error validating access token");
    }
    if pn != PHONE_NUMBER_ID {
        return graph_error(100, "Unsupported post request: unknown phone number id");
    }
    let mut inner = s.inner.lock().unwrap();
    if body["status"] == "read" {
        inner.sent.push(Sent { id: String::new(), to: String::new(), kind: "read".into(), body });
        return Json(json!({"success": true})).into_response();
    }
    if let Some(code) = inner.failures.pop_front() {
        return graph_error(code, "scripted failure");
    }
    if let Some((code, why)) = refusal(&body) {
        return graph_error(code, &why);
    }
    inner.next += 1;
    let id = format!("wamid.out{}", inner.next);
    let to = body["to"].as_str().unwrap_or_default().to_string();
    inner.sent.push(Sent {
        id: id.clone(),
        to: to.clone(),
        kind: body["type"].as_str().unwrap_or_default().into(),
        body,
    });
    Json(json!({"messaging_product": "whatsapp", "contacts": [{"input": to, "wa_id": to}], "messages": [{"id": id}]}))
        .into_response()
}

async fn upload(State(s): State<Arc<Shared>>, headers: HeaderMap, mut form: Multipart) -> Response {
    if !authorized(&s, &headers) {
        return graph_error(190, "Error validating access token");
    }
    let (mut product, mut mime, mut bytes) = (String::new(), String::new(), Vec::new());
    while let Ok(Some(field)) = form.next_field().await {
        match field.name().unwrap_or_default().to_string().as_str() {
            "messaging_product" => product = field.text().await.unwrap_or_default(),
            "type" => mime = field.text().await.unwrap_or_default(),
            "file" => bytes = field.bytes().await.map(|b| b.to_vec()).unwrap_or_default(),
            _ => {}
        }
    }
    if product != "whatsapp" || bytes.is_empty() {
        return graph_error(100, "messaging_product and file are required");
    }
    let mut inner = s.inner.lock().unwrap();
    inner.next += 1;
    let id = format!("90000{}", inner.next);
    inner.media.insert(id.clone(), (mime, bytes));
    Json(json!({"id": id})).into_response()
}

async fn object(State(s): State<Arc<Shared>>, Path(id): Path<String>, headers: HeaderMap) -> Response {
    if !authorized(&s, &headers) {
        return graph_error(190, "Error validating access token");
    }
    if id == PHONE_NUMBER_ID {
        return Json(json!({"verified_name": "Butler Test", "display_phone_number": "+1 555-000-1111", "id": id}))
            .into_response();
    }
    let inner = s.inner.lock().unwrap();
    match inner.media.get(&id) {
        Some((mime, bytes)) => {
            let url = format!("{}/files/{id}", s.base.lock().unwrap());
            Json(json!({"messaging_product": "whatsapp", "url": url, "mime_type": mime, "file_size": bytes.len(), "id": id})).into_response()
        }
        None => graph_error(100, "Unsupported get request. Object does not exist"),
    }
}

async fn download(State(s): State<Arc<Shared>>, Path(id): Path<String>, headers: HeaderMap) -> Response {
    if !authorized(&s, &headers) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    match s.inner.lock().unwrap().media.get(&id) {
        Some((mime, bytes)) => ([("content-type", mime.clone())], bytes.clone()).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

impl FakeWhatsApp {
    pub async fn start() -> Self {
        let shared = Arc::new(Shared { inner: Mutex::new(Inner::default()), base: Mutex::new(String::new()) });
        let app = Router::new()
            .route("/v23.0/{pn}/messages", post(messages))
            .route("/v23.0/{pn}/media", post(upload))
            .route("/v23.0/{id}", get(object))
            .route("/files/{id}", get(download))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind fake whatsapp");
        let addr = listener.local_addr().unwrap();
        *shared.base.lock().unwrap() = format!("http://{addr}");
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { shared, addr, http: reqwest::Client::new() }
    }

    pub fn api_url(&self) -> String {
        format!("http://{}/v23.0", self.addr)
    }

    /// Offers a file people can send: its media id.
    pub fn add_media(&self, mime: &str, bytes: &[u8]) -> String {
        let mut inner = self.shared.inner.lock().unwrap();
        inner.next += 1;
        let id = format!("80000{}", inner.next);
        inner.media.insert(id.clone(), (mime.into(), bytes.to_vec()));
        id
    }

    /// A file Butler uploaded (or one offered with `add_media`): (mime, bytes).
    pub fn media(&self, id: &str) -> Option<(String, Vec<u8>)> {
        self.shared.inner.lock().unwrap().media.get(id).cloned()
    }

    /// Requests refused for a wrong token so far.
    pub fn unauthorized(&self) -> usize {
        self.shared.inner.lock().unwrap().unauthorized
    }

    /// The next message send fails with this Graph API error code.
    pub fn fail_next(&self, code: i64) {
        self.shared.inner.lock().unwrap().failures.push_back(code);
    }

    /// Everything sent so far (read receipts included), in order.
    pub fn sent(&self) -> Vec<Sent> {
        self.shared.inner.lock().unwrap().sent.clone()
    }

    /// Messages (not read receipts) sent to `to`.
    pub fn sent_to(&self, to: &str) -> Vec<Sent> {
        self.sent().into_iter().filter(|m| m.kind != "read" && m.to == to).collect()
    }

    /// Waits up to `secs` until the messages sent to `to` satisfy `done`.
    pub async fn wait_sent(&self, to: &str, secs: u64, what: &str, done: impl Fn(&[Sent]) -> bool) -> Vec<Sent> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
        loop {
            let sent = self.sent_to(to);
            if done(&sent) {
                return sent;
            }
            if tokio::time::Instant::now() > deadline {
                panic!("timed out waiting for {what} to {to}; sent: {sent:#?}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// POSTs `body` to Butler's webhook at `base` with `signature` (None: no header); the status.
    pub async fn deliver_signed(&self, base: &str, body: &[u8], signature: Option<String>) -> u16 {
        let mut req =
            self.http.post(format!("{base}/channels/whatsapp/webhook")).header("content-type", "application/json");
        if let Some(sig) = signature {
            req = req.header("x-hub-signature-256", sig);
        }
        req.body(body.to_vec()).send().await.expect("webhook request").status().as_u16()
    }

    /// POSTs `payload` to Butler's webhook signed with the app secret, as Meta does.
    pub async fn deliver(&self, base: &str, payload: &Value) -> u16 {
        let body = serde_json::to_vec(payload).unwrap();
        let sig = sign(APP_SECRET, &body);
        self.deliver_signed(base, &body, Some(sig)).await
    }
}

/// `sha256=<hex HMAC-SHA256 of body with secret>`, Meta's `X-Hub-Signature-256`.
pub fn sign(secret: &str, body: &[u8]) -> String {
    use hmac::{Hmac, Mac};
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// A fixture from tests/fixtures/whatsapp/.
pub fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/whatsapp/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).expect("fixture")).expect("fixture JSON")
}

/// The documented text message delivery, from `from` with message id `id`.
pub fn text(from: &str, id: &str, body: &str) -> Value {
    let mut v = delivery("webhook_text.json", from, id);
    v["entry"][0]["changes"][0]["value"]["messages"][0]["text"]["body"] = json!(body);
    v
}

/// A fixture delivery to our number, its first message from `from` with id `id`, sent now.
fn delivery(fixture_name: &str, from: &str, id: &str) -> Value {
    let mut v = fixture(fixture_name);
    let value = &mut v["entry"][0]["changes"][0]["value"];
    value["metadata"]["phone_number_id"] = json!(PHONE_NUMBER_ID);
    value["contacts"][0]["wa_id"] = json!(from);
    let m = &mut value["messages"][0];
    m["from"] = json!(from);
    m["id"] = json!(id);
    m["timestamp"] = json!((butler_now_secs()).to_string());
    v
}

/// The documented reply-button click: `from` pressed the button `action` on message `on`.
pub fn button_reply(from: &str, id: &str, on: &str, action: &str, title: &str) -> Value {
    let mut v = delivery("webhook_button_reply.json", from, id);
    let m = &mut v["entry"][0]["changes"][0]["value"]["messages"][0];
    m["context"]["id"] = json!(on);
    m["interactive"]["button_reply"] = json!({"id": action, "title": title});
    v
}

/// A list-row choice: `from` picked the row `action` of the list message `on` (the documented
/// `interactive.list_reply` shape).
pub fn list_reply(from: &str, id: &str, on: &str, action: &str, title: &str) -> Value {
    let mut v = button_reply(from, id, on, action, title);
    let i = &mut v["entry"][0]["changes"][0]["value"]["messages"][0]["interactive"];
    *i = json!({"type": "list_reply", "list_reply": {"id": action, "title": title, "description": ""}});
    v
}

/// A reaction: `from` reacted `emoji` to message `on` (the documented `reaction` message; an
/// empty emoji removes a reaction).
pub fn reaction(from: &str, id: &str, on: &str, emoji: &str) -> Value {
    let mut v = text(from, id, "");
    let m = &mut v["entry"][0]["changes"][0]["value"]["messages"][0];
    m.as_object_mut().unwrap().remove("text");
    m["type"] = json!("reaction");
    m["reaction"] = json!({"message_id": on, "emoji": emoji});
    v
}

/// A status callback fixture (`webhook_status_delivered.json` or `webhook_status_failed.json`).
pub fn status(name: &str) -> Value {
    let mut v = fixture(name);
    v["entry"][0]["changes"][0]["value"]["metadata"]["phone_number_id"] = json!(PHONE_NUMBER_ID);
    v
}

fn butler_now_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}
