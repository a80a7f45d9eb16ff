//! What can go wrong asking the embedding service, in words that name the setting to change.
//!
//! Texts here reach logs, `butler memory reembed` and `doctor`: they must never carry the API
//! key (the client scrubs the service's own messages of it).

use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// HTTP 429: try again after `retry_after` (the service's `Retry-After`, when it gave one).
    #[error("the embedding service at {base_url} is rate limiting (HTTP 429); Butler tries again later")]
    RateLimited { base_url: String, retry_after: Option<Duration> },
    /// HTTP 401/403.
    #[error(
        "the embedding service at {base_url} refused the API key (HTTP {status}): check [memory.embeddings] api_key"
    )]
    Unauthorized { base_url: String, status: u16 },
    /// HTTP 404: no such endpoint or model.
    #[error("the embedding service at {base_url} has no /embeddings endpoint or no model \"{model}\" (HTTP 404): check [memory.embeddings] base_url and model")]
    NotFound { base_url: String, model: String },
    /// Nothing answers at the base URL.
    #[error(
        "could not reach the embedding service at {base_url}: is it running? (check [memory.embeddings] base_url)"
    )]
    Unreachable { base_url: String },
    /// No answer in time.
    #[error("the embedding service at {base_url} did not answer within {secs} s ([memory.embeddings] timeout_secs)")]
    Timeout { base_url: String, secs: u64 },
    /// Any other refusal; `detail` is the service's own message, shortened. A 4xx here is about
    /// the texts (one too long, say), so a batch is retried text by text.
    #[error("the embedding service at {base_url} answered HTTP {status}: {detail}")]
    Failed { base_url: String, status: u16, detail: String },
    /// A 2xx answer that is not a list of vectors, one per text.
    #[error(
        "the embedding service at {base_url} answered without usable vectors ({detail}); is it OpenAI-compatible?"
    )]
    BadAnswer { base_url: String, detail: String },
    /// The vectors have another length than `[memory.embeddings] dimensions`.
    #[error("the embedding model returned {got} dimensions, but [memory.embeddings] dimensions is {want}: set it to {got} or to what the model supports")]
    Dimensions { want: usize, got: usize },
}

impl EmbedError {
    /// Whether the texts themselves were refused (a batch is then retried one text at a time).
    pub fn is_about_the_texts(&self) -> bool {
        matches!(self, Self::Failed { status: 400 | 413 | 422, .. })
    }
}
