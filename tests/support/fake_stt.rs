//! A fake OpenAI-compatible speech-to-text server: `POST /v1/audio/transcriptions` as
//! multipart/form-data (OpenAI, Groq and whisper.cpp's server take the same form), answering
//! `{"text": ...}` and recording every request it got.

use super::fake_telegram::files::parts;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::json;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

/// One transcription request as the server saw it.
#[derive(Clone, Debug)]
pub struct SttRequest {
    pub model: String,
    pub response_format: Option<String>,
    pub language: Option<String>,
    pub file_name: String,
    pub content_type: Option<String>,
    pub file: Bytes,
    pub authorization: Option<String>,
}

#[derive(Default)]
struct Shared {
    text: String,
    requests: Vec<SttRequest>,
    /// Answer this status (with OpenAI's error JSON) instead of a transcript.
    fail: Option<u16>,
}

pub struct FakeStt {
    addr: SocketAddr,
    shared: Arc<Mutex<Shared>>,
}

impl FakeStt {
    /// A server answering every request with `text`.
    pub async fn start(text: &str) -> Self {
        let shared = Arc::new(Mutex::new(Shared { text: text.into(), ..Default::default() }));
        let app = Router::new()
            .route("/v1/audio/transcriptions", post(transcribe))
            .layer(axum::extract::DefaultBodyLimit::max(64 * 1024 * 1024))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self { addr, shared }
    }

    /// The `[media.transcription] base_url` for this server.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn fail_with(&self, status: u16) {
        self.shared.lock().unwrap().fail = Some(status);
    }

    pub fn requests(&self) -> Vec<SttRequest> {
        self.shared.lock().unwrap().requests.clone()
    }
}

async fn transcribe(State(shared): State<Arc<Mutex<Shared>>>, headers: HeaderMap, body: Bytes) -> Response {
    let content_type = headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    let parts = parts(&content_type, &body);
    let field = |n: &str| parts.iter().find(|p| p.name == n).map(|p| String::from_utf8_lossy(&p.data).to_string());
    let Some(file) = parts.iter().find(|p| p.name == "file") else {
        return (StatusCode::BAD_REQUEST, Json(json!({"error": {"message": "file is required"}}))).into_response();
    };
    let req = SttRequest {
        model: field("model").unwrap_or_default(),
        response_format: field("response_format"),
        language: field("language"),
        file_name: file.file_name.clone().unwrap_or_default(),
        content_type: file.content_type.clone(),
        file: file.data.clone(),
        authorization: headers.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_string),
    };
    let mut s = shared.lock().unwrap();
    s.requests.push(req);
    if let Some(status) = s.fail {
        let body = json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}});
        return (StatusCode::from_u16(status).unwrap(), Json(body)).into_response();
    }
    Json(json!({"text": s.text})).into_response()
}
