//! The fake's files, as Discord handles them:
//! - `multipart/form-data` message bodies (RFC 7578): `payload_json` and `files[n]` parts,
//!   parsed here by hand from the raw body (no client library on this side of the wire);
//! - attachment objects for stored files, their URLs on the fake's CDN,
//!   `GET /attachments/{channel}/{id}/{filename}?ex=…&is=…&hm=…`, which serves the bytes in
//!   pieces with a `Content-Length` when the signature matches, and records each request with
//!   its Host and Authorization headers.

use super::State;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, State as AxState};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Discord's upload limit for a bot in an unboosted server.
pub const UPLOAD_LIMIT: usize = 10 * 1024 * 1024;

/// One part of a multipart body.
#[derive(Clone, Debug)]
pub struct Part {
    pub name: String,
    pub filename: Option<String>,
    pub content_type: Option<String>,
    pub data: Bytes,
}

/// A file on the fake's CDN.
#[derive(Clone, Debug)]
pub struct StoredFile {
    pub id: String,
    pub channel: String,
    pub filename: String,
    pub content_type: Option<String>,
    pub bytes: Bytes,
}

/// One request to the CDN.
#[derive(Clone, Debug)]
pub struct CdnRequest {
    pub path: String,
    pub host: String,
    pub authorization: Option<String>,
    pub status: u16,
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    let first = *needle.first()?;
    let mut at = from;
    while at + needle.len() <= hay.len() {
        let next = hay[at..].iter().position(|b| *b == first)? + at;
        if hay[next..].starts_with(needle) {
            return Some(next);
        }
        at = next + 1;
    }
    None
}

/// The parts of a `multipart/form-data` body, or None when it is not one.
pub fn parse(content_type: &str, body: &Bytes) -> Option<Vec<Part>> {
    let (kind, params) = content_type.split_once(';')?;
    if kind.trim() != "multipart/form-data" {
        return None;
    }
    let boundary = params.split(';').find_map(|p| p.trim().strip_prefix("boundary="))?.trim_matches('"');
    let delimiter = format!("--{boundary}").into_bytes();
    let mut at = find(body, &delimiter, 0)? + delimiter.len();
    let mut parts = Vec::new();
    loop {
        if body[at..].starts_with(b"--") {
            return Some(parts);
        }
        at += 2; // CRLF after the delimiter
        let head_end = find(body, b"\r\n\r\n", at)?;
        let head = std::str::from_utf8(&body[at..head_end]).ok()?;
        let data_start = head_end + 4;
        let next = find(body, &[b"\r\n".as_slice(), &delimiter].concat(), data_start)?;
        let (mut name, mut filename, mut ctype) = (String::new(), None, None);
        for line in head.split("\r\n") {
            let (k, v) = line.split_once(':')?;
            match k.trim().to_ascii_lowercase().as_str() {
                "content-disposition" => {
                    for p in v.split(';').map(str::trim) {
                        if let Some(n) = p.strip_prefix("name=") {
                            name = n.trim_matches('"').to_string();
                        } else if let Some(f) = p.strip_prefix("filename=") {
                            filename = Some(f.trim_matches('"').to_string());
                        }
                    }
                }
                "content-type" => ctype = Some(v.trim().to_string()),
                _ => {}
            }
        }
        parts.push(Part { name, filename, content_type: ctype, data: body.slice(data_start..next) });
        at = next + 2 + delimiter.len();
    }
}

/// The signature the fake puts on a CDN URL.
fn signature(id: &str) -> String {
    format!("{:x}", id.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)))
}

/// Stores a file and returns its attachment object (URL on the fake's CDN at `base`).
pub fn store(s: &mut State, base: &str, channel: &str, filename: &str, ctype: Option<&str>, bytes: Bytes) -> Value {
    let id = super::next_snowflake(s);
    let url = format!("{base}/attachments/{channel}/{id}/{filename}?ex=67a1b2c3&is=67a06143&hm={}&", signature(&id));
    let mut a = json!({
        "id": id, "filename": filename, "size": bytes.len(), "url": url,
        "proxy_url": url.replace("/attachments/", "/media/attachments/"),
    });
    if let Some(t) = ctype {
        a["content_type"] = json!(t);
    }
    s.files.insert(
        id.clone(),
        StoredFile {
            id,
            channel: channel.into(),
            filename: filename.into(),
            content_type: ctype.map(str::to_string),
            bytes,
        },
    );
    a
}

/// Bytes in pieces of 64 KiB, as a stream.
fn pieces(bytes: Bytes) -> Body {
    let chunks: Vec<Result<Bytes, std::io::Error>> =
        (0..bytes.len()).step_by(64 * 1024).map(|at| Ok(bytes.slice(at..(at + 64 * 1024).min(bytes.len())))).collect();
    Body::from_stream(futures::stream::iter(chunks))
}

pub async fn download(
    AxState(st): AxState<Arc<Mutex<State>>>,
    Path((_channel, id, _name)): Path<(String, String, String)>,
    Query(query): Query<HashMap<String, String>>,
    uri: axum::http::Uri,
    headers: HeaderMap,
) -> Response {
    let text = |h: header::HeaderName| headers.get(h).and_then(|v| v.to_str().ok()).map(str::to_string);
    let mut s = st.lock().unwrap_or_else(|p| p.into_inner());
    let file = s.files.get(&id).cloned().filter(|_| query.get("hm") == Some(&signature(&id)));
    let status = if file.is_some() { 200 } else { 404 };
    s.cdn_requests.push(CdnRequest {
        path: uri.path().to_string(),
        host: text(header::HOST).unwrap_or_default(),
        authorization: text(header::AUTHORIZATION),
        status,
    });
    drop(s);
    let Some(f) = file else {
        return (StatusCode::NOT_FOUND, "This content is no longer available.").into_response();
    };
    let len = f.bytes.len();
    let mut resp = pieces(f.bytes).into_response();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, f.content_type.as_deref().unwrap_or("application/octet-stream").parse().unwrap());
    h.insert(header::CONTENT_LENGTH, len.into());
    resp
}
