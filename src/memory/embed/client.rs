//! The embedding service: an OpenAI-compatible `POST {base_url}/embeddings` (OpenAI, Ollama,
//! llama.cpp's server, vLLM) with `model`, `input` (a list of texts) and `dimensions` when set;
//! the answer's `data[].embedding`, put back in input order by `index`.
//!
//! This file must never put the API key in a log line or an error text, and never send a text
//! longer than [`MAX_CHARS`] (it is cut first).

use super::error::EmbedError;
use crate::config::{redact_url, EmbeddingsConfig};
use futures::StreamExt;
use std::time::Duration;

/// Longest text sent, in characters (about 2,000 tokens: under every common model's limit).
pub const MAX_CHARS: usize = 8_000;
/// Most bytes of an error answer read for its message.
const ERROR_BODY: usize = 8 * 1024;

/// A configured embedding model.
pub struct Embedder {
    client: reqwest::Client,
    cfg: EmbeddingsConfig,
    url: String,
    /// The base URL as errors show it (credentials in it masked).
    shown: String,
}

impl Embedder {
    pub fn new(cfg: &EmbeddingsConfig) -> Self {
        let client = crate::media::service_client(cfg.timeout_secs);
        let base = cfg.base_url.trim().trim_end_matches('/');
        Self { client, cfg: cfg.clone(), url: format!("{base}/embeddings"), shown: redact_url(base) }
    }

    /// The model name stored with each vector.
    pub fn model(&self) -> &str {
        self.cfg.model.trim()
    }

    pub fn config(&self) -> &EmbeddingsConfig {
        &self.cfg
    }

    /// One vector per text, in order. `wait` overrides the configured timeout (a query made
    /// while a person waits gives up sooner than a background batch).
    pub async fn embed(&self, texts: &[String], wait: Option<Duration>) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let input: Vec<&str> = texts.iter().map(|t| cut(t)).collect();
        let mut body = serde_json::json!({ "model": self.model(), "input": input });
        if let Some(d) = self.cfg.dimensions {
            body["dimensions"] = d.into();
        }
        let mut request = self.client.post(&self.url).json(&body);
        if let Some(wait) = wait {
            request = request.timeout(wait);
        }
        if let Some(key) = self.cfg.api_key.as_ref().filter(|k| !k.is_empty()) {
            request = request.bearer_auth(key.expose());
        }
        let started = std::time::Instant::now();
        let secs = wait.map_or(self.cfg.timeout_secs, |w| w.as_secs().max(1));
        let response = request.send().await.map_err(|e| self.send_error(e, secs))?;
        let status = response.status();
        tracing::debug!(
            status = status.as_u16(),
            texts = texts.len(),
            ms = started.elapsed().as_millis() as u64,
            "memory: embeddings answered"
        );
        if !status.is_success() {
            return Err(self.refused(status.as_u16(), response).await);
        }
        let bytes = response.bytes().await.map_err(|e| self.send_error(e, secs))?;
        self.vectors(&bytes, texts.len())
    }

    /// The answer's vectors in input order, each checked for its length.
    fn vectors(&self, bytes: &[u8], want: usize) -> Result<Vec<Vec<f32>>, EmbedError> {
        #[derive(serde::Deserialize)]
        struct Item {
            index: Option<usize>,
            embedding: Vec<f32>,
        }
        #[derive(serde::Deserialize)]
        struct Answer {
            data: Vec<Item>,
        }
        let bad = |detail: String| EmbedError::BadAnswer { base_url: self.shown.clone(), detail };
        let answer: Answer = serde_json::from_slice(bytes).map_err(|e| bad(format!("no JSON \"data\" list: {e}")))?;
        if answer.data.len() != want {
            return Err(bad(format!("{} vectors for {want} texts", answer.data.len())));
        }
        let mut out: Vec<Option<Vec<f32>>> = vec![None; want];
        for (n, item) in answer.data.into_iter().enumerate() {
            let at = item.index.unwrap_or(n);
            match out.get_mut(at) {
                Some(slot @ None) => *slot = Some(item.embedding),
                _ => return Err(bad(format!("index {at} is out of range or repeated"))),
            }
        }
        let out: Vec<Vec<f32>> = out.into_iter().flatten().collect();
        let first = out.first().map_or(0, Vec::len);
        let want_len = self.cfg.dimensions.unwrap_or(first);
        if let Some(v) = out.iter().find(|v| v.len() != want_len || v.is_empty()) {
            return Err(EmbedError::Dimensions { want: want_len, got: v.len() });
        }
        Ok(out)
    }

    fn send_error(&self, e: reqwest::Error, secs: u64) -> EmbedError {
        if e.is_timeout() {
            EmbedError::Timeout { base_url: self.shown.clone(), secs }
        } else if e.is_connect() || e.is_request() {
            EmbedError::Unreachable { base_url: self.shown.clone() }
        } else {
            EmbedError::BadAnswer { base_url: self.shown.clone(), detail: self.scrub(&e.without_url().to_string()) }
        }
    }

    /// The error for a non-2xx answer, with the service's own message when it gives one.
    async fn refused(&self, status: u16, response: reqwest::Response) -> EmbedError {
        let base_url = self.shown.clone();
        match status {
            401 | 403 => return EmbedError::Unauthorized { base_url, status },
            404 => return EmbedError::NotFound { base_url, model: self.model().to_string() },
            429 => {
                return EmbedError::RateLimited { base_url, retry_after: crate::llm::retry_after(response.headers()) }
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
        EmbedError::Failed { base_url, status, detail: self.scrub(&crate::media::service_message(&body)) }
    }

    /// `text` without the API key in it (a service may echo it back).
    fn scrub(&self, text: &str) -> String {
        match self.cfg.api_key.as_ref().map(|k| k.expose()).filter(|k| k.len() >= 4) {
            Some(key) => text.replace(key, "********"),
            None => text.to_string(),
        }
    }
}

/// `text` cut to [`MAX_CHARS`] characters (on a character boundary); never empty (services
/// refuse an empty input).
fn cut(text: &str) -> &str {
    let text = match text.char_indices().nth(MAX_CHARS) {
        Some((at, _)) => &text[..at],
        None => text,
    };
    if text.trim().is_empty() {
        "."
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::cut;

    #[test]
    fn texts_are_cut_on_character_boundaries_and_never_empty() {
        let long = "é".repeat(super::MAX_CHARS + 5);
        let cases: &[(&str, usize)] = &[("hello", 5), ("", 1), ("   ", 1), (&long, super::MAX_CHARS)];
        for (input, chars) in cases {
            assert_eq!(cut(input).chars().count(), *chars, "{:?}", &input[..input.len().min(10)]);
        }
    }
}
