//! The fake LLM's `POST /v1/embeddings` in OpenAI's real shape, answered with the deterministic
//! vectors of `support::embedder` (so a test can compute what the server returns), and its
//! script: failures, 429s and a delay for the next embedding requests. It must never record an
//! embedding request as a chat request (they have their own log here) and never sleep unless
//! `embedding_delay` asks for it.

use super::super::embedder::embed;
use super::wire::json_response;
use axum::response::Response;
use base64::Engine as _;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

/// Dimensions of the vectors when the request does not say.
const DEFAULT_DIMENSIONS: usize = 64;
/// OpenAI's limit on inputs per request.
const MAX_INPUTS: usize = 2048;
/// Embedding requests kept (the oldest are dropped first).
const RECORD_LIMIT: usize = 10_000;

/// One well-formed embedding request the fake received (whatever it was answered).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmbeddingRequest {
    pub model: String,
    /// The texts, in order (a single string input is one text).
    pub inputs: Vec<String>,
    /// `None` when the request left `dimensions` out (the fake then answers with 64).
    pub dimensions: Option<usize>,
    /// The key sent as `Authorization: Bearer ...`, if any.
    pub api_key: Option<String>,
}

#[derive(Default)]
struct Script {
    requests: VecDeque<EmbeddingRequest>,
    /// The next this-many requests get 429 (before any `fail`).
    rate_limited: usize,
    retry_after_secs: u64,
    /// The next this-many requests (after the 429s) get 500.
    fail: usize,
    delay: Duration,
}

/// The embedding endpoint's state, shared by the server and the `FakeLlm` handle.
#[derive(Default)]
pub(super) struct Embeddings {
    script: Mutex<Script>,
}

impl Embeddings {
    fn script(&self) -> std::sync::MutexGuard<'_, Script> {
        self.script.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn requests(&self) -> Vec<EmbeddingRequest> {
        self.script().requests.iter().cloned().collect()
    }

    pub(super) fn fail(&self, n: usize) {
        self.script().fail = n;
    }

    pub(super) fn rate_limit(&self, n: usize, retry_after_secs: u64) {
        let mut script = self.script();
        script.rate_limited = n;
        script.retry_after_secs = retry_after_secs;
    }

    pub(super) fn delay(&self, d: Duration) {
        self.script().delay = d;
    }

    pub(super) fn reset(&self) {
        *self.script() = Script::default();
    }

    /// Answers one `POST /v1/embeddings`. `refusal` is the answer for a missing or wrong key
    /// (decided by the caller, the same way as for chat), sent after the request is recorded.
    pub(super) async fn answer(&self, body: &[u8], api_key: Option<String>, refusal: Option<Response>) -> Response {
        let parsed = match parse(body) {
            Ok(p) => p,
            Err(message) => return error(400, "invalid_request_error", Value::Null, &message, &[]),
        };
        let delay = {
            let mut script = self.script();
            while script.requests.len() >= RECORD_LIMIT {
                script.requests.pop_front();
            }
            script.requests.push_back(EmbeddingRequest {
                model: parsed.model.clone(),
                inputs: parsed.inputs.clone(),
                dimensions: parsed.dimensions,
                api_key,
            });
            script.delay
        };
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        if let Some(refusal) = refusal {
            return refusal;
        }
        let scripted = {
            let mut script = self.script();
            if script.rate_limited > 0 {
                script.rate_limited -= 1;
                Some(Some(script.retry_after_secs))
            } else if script.fail > 0 {
                script.fail -= 1;
                Some(None)
            } else {
                None
            }
        };
        match scripted {
            Some(Some(secs)) => {
                let message = format!(
                    "Rate limit reached for {} in organization org-fake on tokens per min (TPM): Limit 1000000, \
                     Used 1000000, Requested 8. Please try again in {secs}s.",
                    parsed.model
                );
                let retry = [("retry-after".to_string(), secs.to_string())];
                error(429, "requests", json!("rate_limit_exceeded"), &message, &retry)
            }
            Some(None) => error(
                500,
                "server_error",
                Value::Null,
                "The server had an error while processing your request. Sorry about that!",
                &[],
            ),
            None => success(&parsed),
        }
    }
}

struct Parsed {
    model: String,
    inputs: Vec<String>,
    dimensions: Option<usize>,
    base64: bool,
}

/// The checks OpenAI makes; the message of its 400 on failure.
fn parse(body: &[u8]) -> Result<Parsed, String> {
    let body: Value = serde_json::from_slice(body).map_err(|_| {
        "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP \
         library correctly.)"
            .to_string()
    })?;
    let model = match body.get("model").and_then(Value::as_str) {
        Some(m) if !m.is_empty() => m.to_string(),
        _ => return Err("you must provide a model parameter".into()),
    };
    let invalid_input = || {
        "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference."
            .to_string()
    };
    let inputs: Vec<String> = match body.get("input") {
        None | Some(Value::Null) => return Err("'input' is a required property".into()),
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => {
            items.iter().map(|v| v.as_str().map(str::to_string)).collect::<Option<_>>().ok_or_else(invalid_input)?
        }
        Some(_) => return Err(invalid_input()),
    };
    if inputs.is_empty() || inputs.len() > MAX_INPUTS || inputs.iter().any(String::is_empty) {
        return Err(invalid_input());
    }
    let dimensions = match body.get("dimensions") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_u64() {
            Some(n) if n >= 1 => Some(n as usize),
            _ => return Err(format!("Invalid value for 'dimensions' = {v}. Must be greater or equal to 1.")),
        },
    };
    let base64 = match body.get("encoding_format").and_then(Value::as_str) {
        None | Some("float") => false,
        Some("base64") => true,
        Some(other) => {
            return Err(format!(
                "Invalid value for 'encoding_format' = {other}. Supported values are 'float' and 'base64'."
            ))
        }
    };
    Ok(Parsed { model, inputs, dimensions, base64 })
}

fn success(req: &Parsed) -> Response {
    let dims = req.dimensions.unwrap_or(DEFAULT_DIMENSIONS);
    let data: Vec<Value> = req
        .inputs
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let vector = embed(&req.model, text, dims);
            let embedding = if req.base64 {
                let bytes: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
                json!(base64::engine::general_purpose::STANDARD.encode(bytes))
            } else {
                json!(vector)
            };
            json!({"object": "embedding", "index": i, "embedding": embedding})
        })
        .collect();
    // About one token per word, at least one per input.
    let tokens: usize = req.inputs.iter().map(|t| t.split_whitespace().count().max(1)).sum();
    let body = json!({"object": "list", "data": data, "model": req.model,
                      "usage": {"prompt_tokens": tokens, "total_tokens": tokens}});
    json_response(200, &[], body.to_string())
}

fn error(status: u16, kind: &str, code: Value, message: &str, headers: &[(String, String)]) -> Response {
    let body = json!({"error": {"message": message, "type": kind, "param": null, "code": code}});
    json_response(status, headers, body.to_string())
}
