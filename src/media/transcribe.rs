//! Speech to text through an OpenAI-compatible `POST {base_url}/audio/transcriptions` (OpenAI,
//! Groq, a local whisper.cpp server): the saved file streamed from disk as multipart `file` with
//! a name and MIME type the service recognises, `model`, `response_format=json` and `language`
//! when set; the answer's `text` is the transcript.
//!
//! Errors name the endpoint's problem and the setting that fixes it. This file must never put
//! the API key in a log line or an error text, nor read a whole file into memory.

use super::error::MediaError;
use super::words::shorten;
use crate::config::{redact_url, TranscriptionConfig};
use futures::StreamExt;
use std::path::Path;
use std::time::Duration;

/// Most bytes of an error answer read for its message.
const ERROR_BODY: usize = 8 * 1024;

/// A configured speech-to-text endpoint.
pub struct Transcriber {
    client: reqwest::Client,
    cfg: TranscriptionConfig,
    /// The base URL as errors show it (credentials in it masked).
    shown: String,
}

impl Transcriber {
    pub fn new(cfg: &TranscriptionConfig) -> Self {
        let client = service_client(cfg.timeout_secs);
        let base = cfg.base_url.trim().trim_end_matches('/');
        Self { client, cfg: cfg.clone(), shown: redact_url(base) }
    }

    pub fn config(&self) -> &TranscriptionConfig {
        &self.cfg
    }

    /// Sends the file at `path` as `upload_name` (`voice.ogg`, `audio.mp3`) of type `mime` and
    /// returns the transcript (trimmed; empty when no speech was heard).
    pub async fn transcribe(&self, path: &Path, upload_name: &str, mime: &str) -> Result<String, MediaError> {
        let base = self.cfg.base_url.trim().trim_end_matches('/');
        let url = format!("{base}/audio/transcriptions");
        let file = tokio::fs::File::open(path)
            .await
            .map_err(|e| self.broken(format!("the audio file could not be opened ({e})")))?;
        let len = file.metadata().await.map(|m| m.len()).map_err(|e| self.broken(e.to_string()))?;
        let body = reqwest::Body::wrap_stream(tokio_util::io::ReaderStream::new(file));
        let part = reqwest::multipart::Part::stream_with_length(body, len)
            .file_name(upload_name.to_string())
            .mime_str(mime)
            .map_err(|e| self.broken(e.without_url().to_string()))?;
        let mut form = reqwest::multipart::Form::new()
            .part("file", part)
            .text("model", self.cfg.model.trim().to_string())
            .text("response_format", "json");
        if !self.cfg.language.trim().is_empty() {
            form = form.text("language", self.cfg.language.trim().to_string());
        }
        let mut request = self.client.post(&url).multipart(form);
        if let Some(key) = self.cfg.api_key.as_ref().filter(|k| !k.is_empty()) {
            request = request.bearer_auth(key.expose());
        }
        let started = std::time::Instant::now();
        let response = request.send().await.map_err(|e| self.send_error(e))?;
        let status = response.status();
        tracing::debug!(
            status = status.as_u16(),
            ms = started.elapsed().as_millis() as u64,
            bytes = len,
            "media: transcription answered"
        );
        if !status.is_success() {
            return Err(self.refused(status.as_u16(), response).await);
        }
        let bytes = response.bytes().await.map_err(|e| self.send_error(e))?;
        #[derive(serde::Deserialize)]
        struct Answer {
            text: String,
        }
        match serde_json::from_slice::<Answer>(&bytes) {
            Ok(a) => Ok(a.text.trim().to_string()),
            Err(e) => {
                Err(MediaError::SttBadAnswer { base_url: self.shown.clone(), detail: format!("no JSON \"text\": {e}") })
            }
        }
    }

    fn send_error(&self, e: reqwest::Error) -> MediaError {
        if e.is_timeout() {
            MediaError::SttTimeout { base_url: self.shown.clone(), secs: self.cfg.timeout_secs }
        } else if e.is_connect() || e.is_request() {
            MediaError::SttUnreachable { base_url: self.shown.clone() }
        } else {
            self.broken(e.without_url().to_string())
        }
    }

    fn broken(&self, detail: String) -> MediaError {
        MediaError::SttBadAnswer { base_url: self.shown.clone(), detail: self.scrub(&detail) }
    }

    /// The error for a non-2xx answer, with the service's own message when it gives one.
    async fn refused(&self, status: u16, response: reqwest::Response) -> MediaError {
        match status {
            401 | 403 => return MediaError::SttUnauthorized { base_url: self.shown.clone(), status },
            404 => {
                return MediaError::SttNotFound {
                    base_url: self.shown.clone(),
                    model: self.cfg.model.trim().to_string(),
                }
            }
            _ => {}
        }
        let mut body = Vec::new();
        let mut stream = response.bytes_stream();
        while let Some(Ok(piece)) = stream.next().await {
            body.extend_from_slice(&piece[..piece.len().min(ERROR_BODY - body.len())]);
            if body.len() >= ERROR_BODY {
                break;
            }
        }
        MediaError::SttFailed { base_url: self.shown.clone(), status, detail: self.scrub(&service_message(&body)) }
    }

    /// `text` without the API key in it (a service may echo it back).
    fn scrub(&self, text: &str) -> String {
        match self.cfg.api_key.as_ref().map(|k| k.expose()).filter(|k| k.len() >= 4) {
            Some(key) => text.replace(key, "********"),
            None => text.to_string(),
        }
    }
}

/// The HTTP client of an OpenAI-compatible service: `timeout_secs` for a whole request, at most
/// 10 s to connect.
pub(crate) fn service_client(timeout_secs: u64) -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(timeout_secs.max(1)))
        .connect_timeout(Duration::from_secs(timeout_secs.clamp(1, 10)))
        .build()
        .unwrap_or_default()
}

/// The message of an error answer: OpenAI's `{"error": {"message"}}`, `{"error": "..."}`,
/// `{"message"}` or `{"detail"}`, else the body's text; shortened.
pub(crate) fn service_message(body: &[u8]) -> String {
    let json: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    let from_json = json.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("error"))
            .or_else(|| v.get("message"))
            .or_else(|| v.get("detail"))
            .and_then(|m| m.as_str())
            .map(str::to_string)
    });
    let text = from_json.unwrap_or_else(|| String::from_utf8_lossy(body).into_owned());
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.is_empty() {
        "no message".into()
    } else {
        shorten(&text, 200)
    }
}
