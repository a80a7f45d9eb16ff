//! Butler's own HTTP intake: signed webhook triggers, the OpenAI-compatible request, the web
//! API's JSON bodies and file uploads.
//!
//! Each body must never reach an ingress or a store; an upload is written only into this
//! process's scratch folder and removed again.

use crate::harness::{block_on, check_event, cuts, header, headers_with, request, scratch, NOW_MS, NOW_SECS};
use axum::http::HeaderValue;
use butler::web::{check_body, parse_request, UploadError, Uploads};
use butler_channel::signature::sign_hex;
use butler_webhook::event::{build, delivery_id, event_key, kept_headers};
use butler_webhook::{verify, Scheme, BUTLER_SIGNATURE, BUTLER_TIMESTAMP, GITHUB_SIGNATURE};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

const HOOK_SECRET: &[u8] = b"fuzz-webhook-secret";
/// The upload cap (`[media] max_bytes`) of the upload body: small, so that inputs pass it.
const UPLOAD_MAX: u64 = 4096;

/// `POST /hooks/{name}` under both schemes: a valid signature is added when the input has none.
pub fn webhook(data: &[u8]) {
    let req = request(data);
    let given = |name: &str| req.headers.as_ref().is_some_and(|h| h.contains_key(name));
    for scheme in [Scheme::Github, Scheme::Butler] {
        let must_pass = match scheme {
            Scheme::Github => !given(GITHUB_SIGNATURE),
            Scheme::Butler => !given(BUTLER_SIGNATURE) && !given(BUTLER_TIMESTAMP),
        };
        let mut headers = headers_with(&req, |h| match scheme {
            Scheme::Github => vec![(GITHUB_SIGNATURE, format!("sha256={}", sign_hex(HOOK_SECRET, &[req.body])))],
            Scheme::Butler => {
                let ts = header(h, BUTLER_TIMESTAMP).map_or_else(|| NOW_SECS.to_string(), |t| t.trim().to_string());
                let sig = sign_hex(HOOK_SECRET, &[ts.as_bytes(), b".", req.body]);
                vec![(BUTLER_TIMESTAMP, ts), (BUTLER_SIGNATURE, format!("sha256={sig}"))]
            }
        });
        let result = verify(scheme, HOOK_SECRET, &headers, req.body, NOW_SECS);
        if must_pass {
            assert_eq!(result, Ok(()), "{scheme:?}: a request signed with the source's secret must pass");
        }
        if result.is_err() {
            continue;
        }
        assert!(verify(scheme, b"another secret", &headers, req.body, NOW_SECS).is_err(), "another secret passed");
        let Ok(json) = serde_json::from_slice::<Value>(req.body) else { continue };
        if delivery_id(&headers).is_err() {
            continue;
        }
        let key = event_key(scheme, &headers, req.body);
        let prefix = if scheme == Scheme::Github { "github" } else { "deploys" };
        let ev = build("deploys", prefix, &key, kept_headers(&headers), json, NOW_MS);
        check_event(&ev, "hook");
        // The delivery id is not signed: a re-post under another one is the same event.
        headers.insert("x-github-delivery", HeaderValue::from_static("another-delivery-id"));
        assert_eq!(event_key(scheme, &headers, req.body), key, "the delivery id changed the event");
    }
}

/// `POST /v1/chat/completions`: the request Butler takes, or an OpenAI-shaped 400.
pub fn openai_request(data: &[u8]) {
    match parse_request(data) {
        Ok(r) => assert!(!r.text.trim().is_empty(), "a request with no text was taken"),
        Err(e) => {
            assert_eq!(e.status.as_u16(), 400, "{}: {}", e.code, e.message);
            assert_eq!(e.kind, "invalid_request_error");
        }
    }
}

/// The web API's JSON bodies, each input through each route (with the input's headers, or a
/// JSON content type): taken, or refused with a 4xx, never anything else.
pub fn web_api(data: &[u8]) {
    let req = request(data);
    for route in ["messages", "actions", "conversations"] {
        let headers = headers_with(&req, |_| vec![("content-type", "application/json".into())]);
        let mut http = axum::http::Request::builder().method("POST").uri(format!("/api/v1/{route}"));
        for (name, value) in &headers {
            http = http.header(name, value);
        }
        let http = http.body(axum::body::Body::from(req.body.to_vec())).expect("a request");
        if let Err((status, code)) = block_on(check_body(route, http)) {
            assert!((400..500).contains(&status), "{route}: {status} {code}");
        }
    }
}

fn upload_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| scratch("uploads"))
}

/// `POST /api/v1/files`: the name (`x-name` here, `?name=` there), the claimed type and the
/// declared length from the headers, the body streamed in pieces under the cap.
pub fn upload(data: &[u8]) {
    let req = request(data);
    let headers = req.headers.clone().unwrap_or_default();
    let name =
        headers.get("x-name").map_or_else(|| "file".into(), |v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let mime = header(&headers, "content-type").unwrap_or("");
    let declared: Option<u64> = header(&headers, "content-length").and_then(|v| v.trim().parse().ok());
    let store = Uploads::new(upload_dir().clone(), UPLOAD_MAX, Duration::from_secs(60));
    let pieces: Vec<bytes::Bytes> =
        cuts(req.body).pop().unwrap_or_default().into_iter().map(bytes::Bytes::copy_from_slice).collect();
    let body = futures::stream::iter(pieces.into_iter().map(Ok::<_, std::io::Error>));
    let over = req.body.len() as u64 > UPLOAD_MAX || declared.is_some_and(|n| n > UPLOAD_MAX);
    match block_on(store.save("web:fuzz", &name, mime, declared, body)) {
        Ok(meta) => {
            assert!(!over, "an upload over the cap was stored");
            assert_eq!(meta.size, req.body.len() as u64);
            let path = upload_dir().join(&meta.id);
            assert_eq!(std::fs::read(&path).expect("the stored upload"), req.body, "the stored bytes differ");
            let _ = std::fs::remove_file(&path);
            let _ = std::fs::remove_file(upload_dir().join(format!("{}.json", meta.id)));
            let n = &meta.name;
            assert!(!n.is_empty() && n.chars().count() <= 120, "name {n:?}");
            assert!(!n.contains(['/', '\\']) && !n.starts_with('.') && !n.chars().any(char::is_control), "name {n:?}");
            let m = &meta.mime;
            assert!(m.len() <= 100 && m.split_once('/').is_some_and(|(t, s)| !t.is_empty() && !s.is_empty()), "{m:?}");
        }
        Err(UploadError::TooLarge { .. }) => assert!(over, "an upload under the cap was refused"),
        Err(e) => panic!("an upload from memory failed: {e}"),
    }
}
