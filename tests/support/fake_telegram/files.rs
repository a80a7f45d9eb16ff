//! Files on the fake Bot API, as Telegram serves and takes them:
//! - `getFile` for files a test registered (`file_path`, `file_size`), Telegram's error JSON for
//!   unknown ids and for files over 20 MB ("Bad Request: file is too big");
//! - the download route `GET /file/bot<token>/<file_path>`: the token checked, the registered
//!   bytes streamed in 64 KiB pieces with a Content-Length (generated content is made piece by
//!   piece, so a large file is never held in memory), 404 otherwise;
//! - `sendPhoto` / `sendDocument` as multipart/form-data (the file part read binary-safe), the
//!   caption parsed like a message's text, answered with a real Message carrying the photo or
//!   document.
//!
//! It must never call out to the network or depend on Butler's types.

use super::{fail, html, lock, ok, Shared};
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// The largest file a bot may download from Telegram.
pub const MAX_DOWNLOAD: u64 = 20 * 1024 * 1024;
/// Uploads up to this size are kept whole in [`SentFile::bytes`]; larger ones by length and hash.
pub const KEEP_BYTES: usize = 1024 * 1024;
const PIECE: u64 = 64 * 1024;

/// What a registered file holds.
#[derive(Clone, Debug)]
pub enum Content {
    Bytes(Bytes),
    /// `len` bytes of a fixed pseudo-random pattern (see [`pattern`]), made as they are served.
    Generated(u64),
    /// getFile still answers for it, but the download route no longer serves it (404), as
    /// after a `file_path` expired.
    Expired(u64),
}

/// A file the fake serves: its `file_path` and content.
#[derive(Clone, Debug)]
pub struct FakeFile {
    pub path: String,
    pub content: Content,
}

/// Byte `i` of generated content (no short period, so a shifted or repeated piece shows).
pub fn pattern(i: u64) -> u8 {
    (i.wrapping_mul(2_654_435_761) >> 13) as u8 ^ (i >> 20) as u8
}

impl FakeFile {
    pub fn bytes(path: &str, data: impl Into<Bytes>) -> Self {
        Self { path: path.to_string(), content: Content::Bytes(data.into()) }
    }

    pub fn generated(path: &str, len: u64) -> Self {
        Self { path: path.to_string(), content: Content::Generated(len) }
    }

    pub fn expired(path: &str, len: u64) -> Self {
        Self { path: path.to_string(), content: Content::Expired(len) }
    }

    pub fn len(&self) -> u64 {
        match &self.content {
            Content::Bytes(b) => b.len() as u64,
            Content::Generated(n) | Content::Expired(n) => *n,
        }
    }

    /// Piece `at` (of at most [`PIECE`] bytes) of the content.
    fn piece(&self, at: u64) -> Bytes {
        let end = (at + PIECE).min(self.len());
        match &self.content {
            Content::Bytes(b) => b.slice(at as usize..end as usize),
            Content::Generated(_) | Content::Expired(_) => (at..end).map(pattern).collect::<Vec<u8>>().into(),
        }
    }

    /// SHA-256 of the content, hex.
    pub fn sha256(&self) -> String {
        let mut h = Sha256::new();
        let mut at = 0;
        while at < self.len() {
            h.update(self.piece(at));
            at += PIECE;
        }
        hex::encode(h.finalize())
    }
}

/// A file Butler uploaded with sendPhoto or sendDocument.
#[derive(Clone, Debug)]
pub struct SentFile {
    /// `sendPhoto` or `sendDocument`.
    pub method: String,
    /// The id the fake gave it (in the answer's photo or document).
    pub file_id: String,
    /// The file name of the multipart part.
    pub name: String,
    pub len: usize,
    pub sha256: String,
    /// The bytes, when at most [`KEEP_BYTES`].
    pub bytes: Option<Bytes>,
}

/// One part of a multipart/form-data body.
pub struct Part {
    pub name: String,
    pub file_name: Option<String>,
    /// The part's own `Content-Type`, if it has one.
    pub content_type: Option<String>,
    pub data: Bytes,
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    let first = *needle.first()?;
    let mut at = from;
    while at + needle.len() <= hay.len() {
        let next = at + hay[at..hay.len() - needle.len() + 1].iter().position(|b| *b == first)?;
        if &hay[next..next + needle.len()] == needle {
            return Some(next);
        }
        at = next + 1;
    }
    None
}

fn quoted(head: &str, key: &str) -> Option<String> {
    let at = head.find(&format!("{key}=\""))? + key.len() + 2;
    head[at..].split('"').next().map(str::to_string)
}

/// The parts of a multipart/form-data body (binary-safe: file parts keep their bytes).
pub fn parts(content_type: &str, body: &Bytes) -> Vec<Part> {
    let Some(boundary) = content_type.split("boundary=").nth(1) else { return Vec::new() };
    let delimiter = format!("\r\n--{}", boundary.trim_matches('"'));
    let opening = &delimiter.as_bytes()[2..];
    let Some(mut at) = find(body, opening, 0).map(|p| p + opening.len()) else { return Vec::new() };
    let mut out = Vec::new();
    // After each delimiter: "--" ends the body, else CRLF, headers, a blank line, the data.
    while body.get(at..at + 2) == Some(b"\r\n") {
        let Some(head_end) = find(body, b"\r\n\r\n", at) else { break };
        let head = String::from_utf8_lossy(&body[at + 2..head_end]).to_string();
        let data_at = head_end + 4;
        let Some(end) = find(body, delimiter.as_bytes(), data_at) else { break };
        if let Some(name) = quoted(&head, "name") {
            let content_type = head
                .lines()
                .find_map(|l| l.split_once(':').filter(|(k, _)| k.trim().eq_ignore_ascii_case("content-type")))
                .map(|(_, v)| v.trim().to_string());
            let file_name = quoted(&head, "filename");
            out.push(Part { name, file_name, content_type, data: body.slice(data_at..end) });
        }
        at = end + delimiter.len();
    }
    out
}

/// The text fields of a multipart body as a JSON object (values that parse as JSON kept as
/// such); a file part as `{"file_name", "len", "sha256"}`.
pub fn fields(parts: &[Part]) -> Value {
    let mut out = serde_json::Map::new();
    for p in parts {
        let value = match &p.file_name {
            Some(name) => {
                json!({"file_name": name, "len": p.data.len(), "sha256": hex::encode(Sha256::digest(&p.data))})
            }
            None => {
                let text = String::from_utf8_lossy(&p.data).to_string();
                serde_json::from_str(&text).unwrap_or(json!(text))
            }
        };
        out.insert(p.name.clone(), value);
    }
    Value::Object(out)
}

/// getFile: the registered file's path and size, or Telegram's errors.
pub(super) fn get_file(s: &Arc<Shared>, body: &Value) -> Response {
    let id = body["file_id"].as_str().unwrap_or("");
    let Some(file) = lock(s).files.get(id).cloned() else { return fail(400, "Bad Request: invalid file_id") };
    if file.len() > MAX_DOWNLOAD {
        return fail(400, "Bad Request: file is too big");
    }
    ok(json!({"file_id": id, "file_unique_id": format!("u-{id}"), "file_size": file.len(), "file_path": file.path}))
}

/// `GET /file/bot<token>/<file_path>`: the file's bytes, streamed.
pub(super) async fn download(State(s): State<Arc<Shared>>, Path((bot, path)): Path<(String, String)>) -> Response {
    if bot != format!("bot{}", s.token) {
        return fail(401, "Unauthorized");
    }
    let file = {
        let mut st = lock(&s);
        st.downloads.push(path.clone());
        st.files.values().find(|f| f.path == path && !matches!(f.content, Content::Expired(_))).cloned()
    };
    s.calls.notify_waiters();
    let Some(file) = file else {
        return (StatusCode::NOT_FOUND, Json(json!({"ok": false, "error_code": 404, "description": "Not Found"})))
            .into_response();
    };
    let len = file.len();
    let pieces = futures::stream::unfold(0u64, move |at| {
        let file = file.clone();
        async move { (at < len).then(|| (Ok::<_, std::io::Error>(file.piece(at)), at + PIECE)) }
    });
    ([(header::CONTENT_LENGTH, len.to_string())], Body::from_stream(pieces)).into_response()
}

/// A caption in the request's parse mode: (visible text, raw, entities), or the server's error.
fn caption(body: &Value) -> Result<(String, String, Vec<html::Entity>), String> {
    let raw = body["caption"].as_str().unwrap_or("").to_string();
    let (text, entities) = match body["parse_mode"].as_str() {
        Some("HTML") => html::parse(&raw)?,
        Some(other) => return Err(format!("Bad Request: unsupported parse_mode {other}")),
        None => (raw.clone(), vec![]),
    };
    if text.encode_utf16().count() > 1024 {
        return Err("Bad Request: message caption is too long".into());
    }
    Ok((text, raw, entities))
}

/// sendPhoto / sendDocument: the uploaded file shown in its chat and the Message answered, or
/// Telegram's error.
pub(super) fn send(s: &Arc<Shared>, method: &str, body: &Value, parts: &[Part]) -> Response {
    let field = if method == "sendPhoto" { "photo" } else { "document" };
    let Some(chat) = body["chat_id"].as_i64() else { return fail(400, "Bad Request: chat not found") };
    let attach = body[field].as_str().unwrap_or("");
    let Some(part) = attach.strip_prefix("attach://").and_then(|id| parts.iter().find(|p| p.name == id)) else {
        return fail(400, "Bad Request: wrong file identifier/HTTP URL specified");
    };
    if part.data.is_empty() {
        return fail(400, &format!("Bad Request: file must be non-empty ({field})"));
    }
    let (text, raw, entities) = match caption(body) {
        Ok(c) => c,
        Err(e) => return fail(400, &e),
    };
    let buttons = match super::buttons(&body["reply_markup"]) {
        Ok(b) => b,
        Err(e) => return fail(400, &e),
    };
    let mut st = lock(s);
    let id = st.next_message;
    st.next_message += 1;
    let sent = SentFile {
        method: method.to_string(),
        file_id: format!("sent-{id}"),
        name: part.file_name.clone().unwrap_or_default(),
        len: part.data.len(),
        sha256: hex::encode(Sha256::digest(&part.data)),
        bytes: (part.data.len() <= KEEP_BYTES).then(|| part.data.clone()),
    };
    let shown = super::Shown {
        chat,
        id,
        thread: body["message_thread_id"].as_i64(),
        text,
        html: raw,
        entities,
        buttons,
        reply_to: body["reply_parameters"]["message_id"].as_i64(),
        edits: 0,
        file: Some(sent),
    };
    let json = super::message_json(&shown);
    st.messages.push(shown);
    ok(json)
}

/// The photo or document of a message's JSON, as Telegram shows a sent file.
pub fn message_fields(sent: &SentFile, v: &mut Value) {
    let unique = format!("u-{}", sent.file_id);
    if sent.method == "sendPhoto" {
        let (w, h) = sent.bytes.as_deref().and_then(png_size).unwrap_or((1280, 960));
        v["photo"] = json!([{"file_id": sent.file_id, "file_unique_id": unique, "width": w, "height": h, "file_size": sent.len}]);
    } else {
        v["document"] = json!({"file_id": sent.file_id, "file_unique_id": unique, "file_name": sent.name,
            "mime_type": mime_of(&sent.name), "file_size": sent.len});
    }
}

/// Width and height from a PNG's IHDR chunk.
fn png_size(b: &[u8]) -> Option<(u32, u32)> {
    if b.len() < 24 || &b[..8] != b"\x89PNG\r\n\x1a\n" {
        return None;
    }
    let be = |at: usize| u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
    Some((be(16), be(20)))
}

/// The type Telegram gives a document by its name.
fn mime_of(name: &str) -> &'static str {
    match name.rsplit('.').next().map(str::to_ascii_lowercase).as_deref() {
        Some("pdf") => "application/pdf",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("txt") => "text/plain",
        Some("ogg" | "oga") => "audio/ogg",
        _ => "application/octet-stream",
    }
}
