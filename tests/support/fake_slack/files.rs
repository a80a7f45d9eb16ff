//! The fake's files, as Slack serves them:
//! - `files.info` with Slack's file object (`url_private_download` on the fake's file host);
//! - the file host, `GET /files-pri/{team}-{id}/download/{name}` (and without `/download`):
//!   the bytes for a bot token with `files:read`, streamed in pieces with a `Content-Length`;
//!   Slack's HTML login page (200, `text/html`) for any other or missing token, or for a token
//!   marked as lacking `files:read` ([`super::FakeSlack::without_files_read`]); every request
//!   recorded with its Host header and token;
//! - `files.getUploadURLExternal` (filename, length) -> an upload URL on the fake and a file id;
//!   `POST /upload/v1/{ticket}` records the bytes (Slack answers `OK - <length>`);
//!   `files.completeUploadExternal` shares the uploaded files (channel_id, thread_ts,
//!   initial_comment recorded) and answers Slack's `files` list.

use super::{Shared, State, BOT_TOKEN, TEAM};
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Path, State as AxState};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Value};
use std::sync::Arc;

/// Slack's login page, as its file host answers a token that may not read files.
pub const LOGIN_PAGE: &str = "<!DOCTYPE html><html lang=\"en-US\"><head><meta charset=\"utf-8\">\
    <title>Slack</title></head><body><div id=\"page\"><h1>Sign in to your workspace</h1>\
    <form id=\"signin_form\" action=\"/\" method=\"post\"></form></div></body></html>";

/// A file the fake holds.
#[derive(Clone, Debug)]
pub struct FakeFile {
    pub id: String,
    pub name: String,
    pub mimetype: String,
    pub bytes: Bytes,
    /// Extra fields of its file object (`subtype`, `duration_ms`, …).
    pub extra: Value,
}

/// One request to the file host.
#[derive(Clone, Debug)]
pub struct FileRequest {
    pub path: String,
    /// The Host header (`127.0.0.1:PORT`, `localhost:PORT`).
    pub host: String,
    pub token: Option<String>,
    pub status: u16,
    /// Whether the login page was served instead of the file.
    pub login_page: bool,
}

/// An upload Butler started with files.getUploadURLExternal.
#[derive(Clone, Debug, Default)]
pub struct Upload {
    pub file_id: String,
    pub filename: String,
    pub length: usize,
    /// The bytes POSTed to the upload URL (None until then).
    pub bytes: Option<Bytes>,
    pub content_type: Option<String>,
    /// An Authorization header sent to the upload URL (it needs none).
    pub token: Option<String>,
}

/// A files.completeUploadExternal call that shared files.
#[derive(Clone, Debug)]
pub struct SharedFiles {
    pub channel: String,
    pub thread_ts: Option<String>,
    pub initial_comment: Option<String>,
    /// (file id, title, the upload).
    pub files: Vec<(String, Option<String>, Upload)>,
}

pub fn routes(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/files-pri/{key}/download/{name}", get(download))
        .route("/files-pri/{key}/{name}", get(download))
        .route("/upload/v1/{ticket}", post(upload).layer(DefaultBodyLimit::disable()))
        .with_state(shared)
}

/// Slack's file object for `f`, its URLs on the fake (`base`: `http://127.0.0.1:PORT`).
pub fn file_object(base: &str, f: &FakeFile) -> Value {
    let (id, name) = (&f.id, &f.name);
    let filetype = name.rsplit_once('.').map_or("binary", |(_, ext)| ext).to_ascii_lowercase();
    let mut o = json!({
        "id": id, "created": 1700000001, "timestamp": 1700000001, "name": name, "title": name,
        "mimetype": f.mimetype, "filetype": filetype, "pretty_type": filetype.to_uppercase(), "user": "UALICE",
        "user_team": TEAM, "editable": false, "size": f.bytes.len(), "mode": "hosted", "is_external": false,
        "external_type": "", "is_public": false, "public_url_shared": false, "display_as_bot": false,
        "username": "",
        "url_private": format!("{base}/files-pri/{TEAM}-{id}/{name}"),
        "url_private_download": format!("{base}/files-pri/{TEAM}-{id}/download/{name}"),
        "permalink": format!("https://fake.slack.com/files/UALICE/{id}/{name}"),
        "permalink_public": format!("https://slack-files.com/{TEAM}-{id}-0ce8936320"),
        "has_rich_preview": false, "file_access": "visible", "comments_count": 0, "is_starred": false,
        "shares": {}, "channels": [], "groups": [], "ims": []
    });
    for (k, v) in f.extra.as_object().into_iter().flatten() {
        o[k] = v.clone();
    }
    o
}

fn str_param<'a>(p: &'a Value, k: &str) -> &'a str {
    p.get(k).and_then(Value::as_str).unwrap_or("")
}

/// The files methods of the Web API (None: not one of them). The token was checked already.
pub fn answer(s: &mut State, method: &str, p: &Value) -> Option<Result<Value, &'static str>> {
    Some(match method {
        "files.info" if s.no_files_read => Err("missing_scope"),
        "files.info" => match s.files.get(str_param(p, "file")) {
            Some(f) => {
                Ok(json!({"file": file_object(&s.base, f), "comments": [], "response_metadata": {"next_cursor": ""}}))
            }
            None => Err("file_not_found"),
        },
        "files.getUploadURLExternal" => {
            let filename = str_param(p, "filename").to_string();
            let length = match p.get("length") {
                Some(Value::Number(n)) => n.as_u64(),
                Some(Value::String(t)) => t.parse().ok(),
                _ => None,
            };
            match (filename.is_empty(), length) {
                (true, _) | (_, None | Some(0)) => Err("invalid_arguments"),
                (false, Some(length)) => {
                    s.ts_counter += 1;
                    let file_id = format!("F0UP{:06}", s.ts_counter);
                    let ticket = format!("ticket-{}", s.ts_counter);
                    let upload =
                        Upload { file_id: file_id.clone(), filename, length: length as usize, ..Upload::default() };
                    s.uploads.insert(ticket.clone(), upload);
                    Ok(json!({"upload_url": format!("{}/upload/v1/{ticket}", s.base), "file_id": file_id}))
                }
            }
        }
        "files.completeUploadExternal" => complete(s, p),
        _ => return None,
    })
}

fn complete(s: &mut State, p: &Value) -> Result<Value, &'static str> {
    let files = match p.get("files") {
        Some(Value::String(t)) => serde_json::from_str(t).map_err(|_| "invalid_arguments")?,
        Some(v) => v.clone(),
        None => return Err("invalid_arguments"),
    };
    let list = files.as_array().filter(|l| !l.is_empty()).ok_or("invalid_arguments")?;
    let channel = str_param(p, "channel_id").to_string();
    let is_id = channel.len() > 1 && channel.starts_with(['C', 'D', 'G']);
    if !channel.is_empty() && !is_id {
        return Err("channel_not_found");
    }
    let mut out = Vec::new();
    let mut done = Vec::new();
    for f in list {
        let id = str_param(f, "id");
        let title = f.get("title").and_then(Value::as_str).map(str::to_string);
        let up = s.uploads.values().find(|u| u.file_id == id).cloned().ok_or("file_not_found")?;
        let bytes = up.bytes.clone().ok_or("file_upload_not_completed")?;
        if bytes.len() != up.length {
            return Err("file_upload_size_mismatch");
        }
        out.push(json!({"id": id, "title": title.clone().unwrap_or_else(|| up.filename.clone())}));
        done.push((id.to_string(), title, up));
    }
    let thread_ts = p.get("thread_ts").and_then(Value::as_str).map(str::to_string);
    let initial_comment = p.get("initial_comment").and_then(Value::as_str).map(str::to_string);
    s.shared_files.push(SharedFiles { channel, thread_ts, initial_comment, files: done });
    Ok(json!({"files": out}))
}

fn bearer(headers: &HeaderMap) -> Option<String> {
    let v = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    Some(v.strip_prefix("Bearer ").unwrap_or(v).to_string())
}

/// Bytes in pieces of 64 KiB, as a stream (so the client reads them as they come).
fn pieces(bytes: Bytes) -> Body {
    let chunks: Vec<Result<Bytes, std::io::Error>> =
        (0..bytes.len()).step_by(64 * 1024).map(|at| Ok(bytes.slice(at..(at + 64 * 1024).min(bytes.len())))).collect();
    Body::from_stream(futures::stream::iter(chunks))
}

async fn download(
    AxState(shared): AxState<Arc<Shared>>,
    Path((key, _name)): Path<(String, String)>,
    uri: axum::http::Uri,
    headers: HeaderMap,
) -> Response {
    let token = bearer(&headers);
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    let mut s = shared.lock();
    let id = key.strip_prefix(&format!("{TEAM}-")).unwrap_or("").to_string();
    let file = s.files.get(&id).cloned();
    let allowed = token.as_deref() == Some(BOT_TOKEN) && !s.no_files_read;
    let (status, login) = match (&file, allowed) {
        (None, _) => (404, false),
        (Some(_), false) => (200, true),
        (Some(_), true) => (200, false),
    };
    s.file_requests.push(FileRequest { path: uri.path().to_string(), host, token, status, login_page: login });
    drop(s);
    shared.changed.notify_waiters();
    match file {
        None => (StatusCode::NOT_FOUND, "file not found").into_response(),
        Some(_) if login => ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], LOGIN_PAGE).into_response(),
        Some(f) => {
            let len = f.bytes.len();
            let mut resp = pieces(f.bytes).into_response();
            let h = resp.headers_mut();
            h.insert(header::CONTENT_TYPE, f.mimetype.parse().unwrap());
            h.insert(header::CONTENT_LENGTH, len.into());
            h.insert(header::CONTENT_DISPOSITION, format!("attachment; filename=\"{}\"", f.name).parse().unwrap());
            resp
        }
    }
}

async fn upload(
    AxState(shared): AxState<Arc<Shared>>,
    Path(ticket): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mut s = shared.lock();
    let Some(up) = s.uploads.get_mut(&ticket) else {
        return (StatusCode::NOT_FOUND, "unknown upload").into_response();
    };
    up.content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(str::to_string);
    up.token = bearer(&headers);
    let len = body.len();
    up.bytes = Some(body);
    drop(s);
    shared.changed.notify_waiters();
    (StatusCode::OK, [(header::CONTENT_TYPE, "text/plain")], format!("OK - {len}")).into_response()
}
