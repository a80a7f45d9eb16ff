//! Maps what a provider says went wrong (HTTP status, error JSON, in-stream error events) to
//! the distinct [`LlmError`] variants, the same way for every provider.
//!
//! Each provider parses its own error JSON into a [`ProviderError`]; [`classify`] decides the
//! variant. This module must never put an API key in an error: `Auth` errors carry only the
//! status and the provider's error type or code (never its message, which may quote part of the
//! key), and [`scrub`] removes the configured key from any text that leaves the LLM layer.

use super::LlmError;
use std::time::Duration;

/// Longest provider message copied into an error.
const MAX_MESSAGE: usize = 300;

/// An error as the provider described it, before classification.
#[derive(Clone, Debug, Default)]
pub(crate) struct ProviderError {
    /// HTTP status, when the error came as a response (in-stream errors have none).
    pub status: Option<u16>,
    /// The provider's error type (`invalid_request_error`, `overloaded_error`, ...).
    pub kind: String,
    /// OpenAI's `code` (`model_not_found`, `context_length_exceeded`, ...).
    pub code: String,
    pub message: String,
}

impl ProviderError {
    /// An error whose body is not the provider's JSON (an HTML page from a proxy, plain text).
    pub(crate) fn plain(status: u16, body: &str) -> Self {
        Self { status: Some(status), message: body.trim().to_string(), ..Self::default() }
    }
}

/// Decides the variant. `model` is the configured model (named in `UnknownModel`);
/// `retry_after` is what the response's headers asked for.
pub(crate) fn classify(e: &ProviderError, model: &str, retry_after: Option<Duration>) -> LlmError {
    let status = e.status.unwrap_or(0);
    let kind = e.kind.as_str();
    let code = e.code.as_str();
    let message = clip(&e.message);
    let lower = message.to_ascii_lowercase();
    let label = describe(e);

    if matches!(status, 401 | 403)
        || matches!(kind, "authentication_error" | "permission_error")
        || code == "invalid_api_key"
    {
        return LlmError::Auth(label);
    }
    if code == "model_not_found" || ((status == 404 || kind == "not_found_error") && names_missing_model(&lower)) {
        return LlmError::UnknownModel(model.to_string());
    }
    if code == "context_length_exceeded" || kind == "request_too_large" || is_context_too_long(&lower) {
        return LlmError::ContextTooLong(or_label(message, &label));
    }
    if code == "insufficient_quota" {
        return LlmError::BadRequest(format!("the account has no quota left: {}", or_label(message, &label)));
    }
    if status == 429 || kind == "rate_limit_error" || code == "rate_limit_exceeded" {
        return LlmError::RateLimited { retry_after };
    }
    if status >= 500 || matches!(kind, "overloaded_error" | "api_error" | "server_error") {
        let status = match (status, kind) {
            (s, _) if s >= 500 => s,
            (_, "overloaded_error") => 529,
            _ => 500,
        };
        return LlmError::Server { status, message: or_label(message, &label) };
    }
    if status == 408 {
        return LlmError::Timeout("the provider gave up waiting for the request (HTTP 408)".into());
    }
    if status == 404 || kind == "not_found_error" {
        return LlmError::BadRequest(format!("{}; check [llm] base_url", or_label(message, &label)));
    }
    LlmError::BadRequest(or_label(message, &label))
}

/// `HTTP 401, invalid_api_key`: what may be said about an error without its message.
fn describe(e: &ProviderError) -> String {
    let mut parts = Vec::new();
    if let Some(s) = e.status {
        parts.push(format!("HTTP {s}"));
    }
    for id in [&e.kind, &e.code] {
        let plain = !id.is_empty() && id.len() <= 64 && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if plain && !parts.iter().any(|p| p == id) {
            parts.push(id.clone());
        }
    }
    if parts.is_empty() {
        "provider error".into()
    } else {
        parts.join(", ")
    }
}

fn or_label(message: String, label: &str) -> String {
    if message.is_empty() {
        label.to_string()
    } else {
        message
    }
}

/// "The model `x` does not exist", "model \"x\" not found, try pulling it first",
/// Anthropic's "model: x".
fn names_missing_model(lower: &str) -> bool {
    lower.contains("model")
        && (lower.contains("not found")
            || lower.contains("does not exist")
            || lower.contains("not exist")
            || lower.starts_with("model:")
            || lower.contains("unknown model"))
}

/// OpenAI and vLLM ("maximum context length"), Anthropic ("prompt is too long"), llama.cpp
/// ("exceeds the available context size") and similar wordings.
fn is_context_too_long(lower: &str) -> bool {
    [
        "maximum context length",
        "context_length_exceeded",
        "prompt is too long",
        "context length",
        "context window",
        "available context size",
        "exceed_context_size",
        "input is too long",
        "too many tokens",
    ]
    .iter()
    .any(|needle| lower.contains(needle))
}

/// One line, at most [`MAX_MESSAGE`] characters.
pub(crate) fn clip(s: &str) -> String {
    let one_line: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= MAX_MESSAGE {
        return one_line;
    }
    let mut cut: String = one_line.chars().take(MAX_MESSAGE).collect();
    cut.push_str("...");
    cut
}

/// Removes `secret` (when non-empty) from every text the error carries.
pub(crate) fn scrub(err: LlmError, secret: &str) -> LlmError {
    if secret.is_empty() {
        return err;
    }
    let s = |t: String| {
        if t.contains(secret) {
            t.replace(secret, "[redacted]")
        } else {
            t
        }
    };
    match err {
        LlmError::Auth(m) => LlmError::Auth(s(m)),
        LlmError::UnknownModel(m) => LlmError::UnknownModel(s(m)),
        LlmError::ContextTooLong(m) => LlmError::ContextTooLong(s(m)),
        LlmError::Timeout(m) => LlmError::Timeout(s(m)),
        LlmError::Server { status, message } => LlmError::Server { status, message: s(message) },
        LlmError::BadRequest(m) => LlmError::BadRequest(s(m)),
        LlmError::Unreachable(m) => LlmError::Unreachable(s(m)),
        LlmError::Protocol(m) => LlmError::Protocol(s(m)),
        LlmError::MissingModel(m) => LlmError::MissingModel(s(m)),
        other @ (LlmError::NotConfigured | LlmError::RateLimited { .. }) => other,
    }
}
