//! Request limits applied in front of every route, and the layer that gives every error response
//! the JSON shape `{"error": {"code", "message", "type"}}`.
//!
//! [`body_limits`]: a declared `Content-Length` over `[server] max_body_bytes` gets 413 before
//! a byte of the body is read; any other body is read here, whole, within
//! `[server] body_timeout_secs` (408 when slower) and up to the limit (413 past it), then handed
//! to the route as bytes. [`json_errors`]: an error response that is not JSON (axum's own
//! rejections, a route that forgot) is rewritten through [`rejection`]. Neither may ever store
//! anything or log a body.

use super::error::{rejection, Part};
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use std::time::Duration;

/// The limits [`body_limits`] enforces.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BodyLimits {
    pub max_bytes: usize,
    pub timeout: Duration,
}

/// The most of a non-JSON error body [`json_errors`] reads for its message.
const ERROR_TEXT_MAX: usize = 1024;

/// Why a body was not read.
enum Refused {
    TooLarge,
    /// The connection broke or the chunked encoding was bad.
    Broken,
}

/// Refuses an oversized declared body at once, and reads any other body within the limits.
pub(crate) async fn body_limits(State(limits): State<BodyLimits>, req: Request, next: Next) -> Response {
    if declared_length(req.headers()).is_some_and(|n| n > limits.max_bytes as u64) {
        return refuse(StatusCode::PAYLOAD_TOO_LARGE);
    }
    if req.body().size_hint().exact() == Some(0) {
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    let read = tokio::time::timeout(limits.timeout, read_body(body, limits.max_bytes)).await;
    match read {
        Ok(Ok(bytes)) => next.run(Request::from_parts(parts, Body::from(bytes))).await,
        Ok(Err(Refused::TooLarge)) => refuse(StatusCode::PAYLOAD_TOO_LARGE),
        Err(_) => {
            tracing::info!(path = parts.uri.path(), "a request body did not arrive in time; refused");
            refuse(StatusCode::REQUEST_TIMEOUT)
        }
        Ok(Err(Refused::Broken)) => {
            refuse_with(StatusCode::BAD_REQUEST, "the request body could not be read (connection or encoding)")
        }
    }
}

fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers.get(header::CONTENT_LENGTH)?.to_str().ok()?.trim().parse().ok()
}

async fn read_body(body: Body, max: usize) -> Result<Bytes, Refused> {
    let mut stream = body.into_data_stream();
    let mut buf = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|_| Refused::Broken)?;
        if buf.len() + chunk.len() > max {
            return Err(Refused::TooLarge);
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(buf))
}

/// A JSON refusal that also closes the connection: the rest of the body is not wanted.
fn refuse(status: StatusCode) -> Response {
    close(rejection(status, Part::Other, "").into_response())
}

fn refuse_with(status: StatusCode, text: &str) -> Response {
    close(rejection(status, Part::Other, text).into_response())
}

fn close(mut resp: Response) -> Response {
    resp.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    resp
}

/// Gives an error response that is not JSON the shape of Butler's errors, keeping the headers
/// that matter to the caller (`Allow`, `Retry-After`, `WWW-Authenticate`, `Connection`).
pub(crate) async fn json_errors(resp: Response) -> Response {
    let status = resp.status();
    if !(status.is_client_error() || status.is_server_error()) || is_json(resp.headers()) {
        return resp;
    }
    let (parts, body) = resp.into_parts();
    let text = match axum::body::to_bytes(body, ERROR_TEXT_MAX).await {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(_) => String::new(),
    };
    let mut out = rejection(status, guess_part(&text), &text).into_response();
    for name in [header::ALLOW, header::RETRY_AFTER, header::WWW_AUTHENTICATE, header::CONNECTION] {
        if let Some(v) = parts.headers.get(&name) {
            out.headers_mut().insert(name, v.clone());
        }
    }
    out
}

/// Whether `Content-Type` says JSON (`application/json`, or any `+json` type), as the JSON
/// routes require of a request body and [`json_errors`] checks of a response.
pub(crate) fn is_json(headers: &HeaderMap) -> bool {
    headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|ct| {
        let ct = ct.split(';').next().unwrap_or("").trim();
        ct == "application/json" || ct.ends_with("+json")
    })
}

/// The part an axum rejection text is about (axum names it in its messages).
fn guess_part(text: &str) -> Part {
    if text.starts_with("Invalid URL") || text.contains("path param") {
        Part::Path
    } else if text.contains("query string") {
        Part::Query
    } else {
        Part::Other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_lengths() {
        let cases: &[(Option<&str>, Option<u64>)] =
            &[(None, None), (Some("12"), Some(12)), (Some(" 7 "), Some(7)), (Some("x"), None), (Some("-1"), None)];
        for (value, want) in cases {
            let mut h = HeaderMap::new();
            if let Some(v) = value {
                h.insert(header::CONTENT_LENGTH, HeaderValue::from_str(v).unwrap());
            }
            assert_eq!(declared_length(&h), *want, "{value:?}");
        }
    }

    #[test]
    fn json_content_types() {
        let cases = [
            ("application/json", true),
            ("application/json; charset=utf-8", true),
            ("application/problem+json", true),
            ("text/plain; charset=utf-8", false),
            ("text/html", false),
        ];
        for (ct, want) in cases {
            let mut h = HeaderMap::new();
            h.insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
            assert_eq!(is_json(&h), want, "{ct}");
        }
    }
}
