//! The one seam to a language model: the [`Provider`] trait, the stream it returns, the errors
//! it reports by what the caller should do ([`LlmError`]), and [`complete`] for calls nobody
//! watches stream.
//!
//! Plain contract: no HTTP here (the providers are `openai.rs` and `anthropic.rs`), and an
//! error must never carry an API key.

use super::{Assembled, ChatRequest, StreamEvent};
use async_trait::async_trait;
use futures::Stream;
use std::pin::Pin;
use std::time::Duration;

/// The events of one streamed completion.
pub type LlmStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, LlmError>> + Send>>;

/// A language model endpoint.
#[async_trait]
pub trait Provider: Send + Sync {
    /// `openai`, `anthropic`, or `none`.
    fn name(&self) -> &str;
    fn model(&self) -> &str;
    /// Starts a streamed completion. Retries (429/5xx, before any byte of the body) happen inside.
    async fn stream(&self, req: &ChatRequest) -> Result<LlmStream, LlmError>;
}

/// What went wrong talking to the model, by what the caller (and the user) should do.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LlmError {
    #[error(
        "no language model is configured: set OPENAI_API_KEY (and optionally OPENAI_BASE_URL, BUTLER_MODEL), \
         or ANTHROPIC_API_KEY, or the [llm] section of the config file"
    )]
    NotConfigured,
    #[error(
        "a model name is needed: the model endpoint {0} is set but no model is; set BUTLER_MODEL (or [llm] model) \
         to one of the models it serves"
    )]
    MissingModel(String),
    #[error("the model provider refused the API key ({0}); check [llm] api_key")]
    Auth(String),
    #[error("the model provider does not know the model `{0}`; check [llm] model")]
    UnknownModel(String),
    #[error("the conversation is too long for the model's context window: {0}")]
    ContextTooLong(String),
    #[error("the model provider did not answer in time ({0})")]
    Timeout(String),
    #[error("the model provider is rate limiting Butler{}", retry_hint(.retry_after))]
    RateLimited { retry_after: Option<Duration> },
    #[error("the model provider failed with HTTP {status}: {message}")]
    Server { status: u16, message: String },
    #[error("the model provider rejected the request: {0}")]
    BadRequest(String),
    #[error("cannot reach the model provider at {0}")]
    Unreachable(String),
    #[error("the model provider sent a stream Butler cannot read: {0}")]
    Protocol(String),
}

fn retry_hint(d: &Option<Duration>) -> String {
    d.map(|d| format!("; retry after {}s", d.as_secs().max(1))).unwrap_or_default()
}

impl LlmError {
    /// A short name of the kind of failure, for metrics and logs.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::NotConfigured | Self::MissingModel(_) => "not_configured",
            Self::Auth(_) => "auth",
            Self::UnknownModel(_) => "unknown_model",
            Self::ContextTooLong(_) => "context_too_long",
            Self::Timeout(_) => "timeout",
            Self::RateLimited { .. } => "rate_limited",
            Self::Server { .. } => "server",
            Self::BadRequest(_) => "bad_request",
            Self::Unreachable(_) => "unreachable",
            Self::Protocol(_) => "protocol",
        }
    }

    /// Whether the model is away rather than refusing this request: a transient failure, or a
    /// stream that broke or ended early. A turn that meets one after the client's own retries
    /// is tried again later instead of answering with an apology.
    pub fn is_outage(&self) -> bool {
        self.is_transient() || matches!(self, Self::Protocol(_))
    }

    /// Whether the same request may succeed later (used by retries and fallbacks).
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::RateLimited { .. } | Self::Server { .. } | Self::Timeout(_) | Self::Unreachable(_))
    }
}

/// Runs a request to the end and returns the whole response (for calls nobody watches stream:
/// summaries, the archivist, classifiers, health checks).
pub async fn complete(provider: &dyn Provider, req: &ChatRequest) -> Result<Assembled, LlmError> {
    use futures::StreamExt;
    let mut stream = provider.stream(req).await?;
    let mut asm = Assembled::default();
    while let Some(ev) = stream.next().await {
        asm.push(&ev?);
    }
    Ok(asm)
}
