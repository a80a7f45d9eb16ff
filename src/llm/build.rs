//! Builds the provider the rest of Butler uses from `[llm]`: the primary endpoint, then each
//! `fallback` entry in order, behind one [`Provider`].
//!
//! An empty model gives a provider that answers every request with `NotConfigured` (Butler still
//! starts and says what to set), or `MissingModel` when a base URL is set without a model. The fallback moves on only when an endpoint fails with a
//! transient error before streaming starts; it must never move on after content was delivered,
//! nor on errors that another endpoint would repeat to no purpose (Auth, BadRequest, ...).

use super::anthropic::Anthropic;
use super::http::{Timeouts, Transport};
use super::models::{display_url, resolved_base};
use super::openai::OpenAi;
use super::{ChatRequest, LlmError, LlmStream, Provider};
use crate::config::{LlmConfig, ProviderKind, Secret};
use async_trait::async_trait;
use std::sync::Arc;
use std::time::Duration;

/// The provider described by `cfg`, with its fallbacks. Never fails: problems show up as the
/// error of each request.
pub fn from_config(cfg: &LlmConfig) -> Arc<dyn Provider> {
    if cfg.model.trim().is_empty() {
        if cfg.base_url.as_deref().is_some_and(|b| !b.trim().is_empty()) {
            return Arc::new(Unavailable {
                name: super::models::provider_name(cfg.provider),
                model: String::new(),
                error: LlmError::MissingModel(super::models::base_url(cfg)),
            });
        }
        return Arc::new(Unavailable::not_configured());
    }
    let timeouts = Timeouts {
        connect: Duration::from_secs(cfg.connect_timeout_secs.max(1)),
        first_byte: Duration::from_secs(cfg.first_byte_timeout_secs.max(1)),
        idle: Duration::from_secs(cfg.idle_timeout_secs.max(1)),
    };
    let client = match reqwest::Client::builder()
        .connect_timeout(timeouts.connect)
        .tcp_nodelay(true)
        .pool_idle_timeout(Duration::from_secs(60))
        .user_agent(concat!("butler/", env!("CARGO_PKG_VERSION")))
        .build()
    {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "cannot build the HTTP client for the LLM");
            return Arc::new(Unavailable {
                name: super::models::provider_name(cfg.provider),
                model: cfg.model.clone(),
                error: LlmError::BadRequest(format!("cannot build the HTTP client: {e}")),
            });
        }
    };
    let endpoint = |kind: ProviderKind, base_url: Option<&str>, api_key: Option<&Secret>, model: &str| {
        endpoint(
            kind,
            base_url,
            api_key,
            Transport::new(client.clone(), timeouts, cfg.max_retries, model),
            cfg.max_tokens,
        )
    };
    let primary = endpoint(cfg.provider, cfg.base_url.as_deref(), cfg.api_key.as_ref(), &cfg.model);
    let mut fallbacks = Vec::new();
    for fb in &cfg.fallback {
        if fb.model.trim().is_empty() {
            tracing::warn!(provider = ?fb.provider, "llm fallback without a model is skipped");
            continue;
        }
        fallbacks.push(endpoint(fb.provider, fb.base_url.as_deref(), fb.api_key.as_ref(), &fb.model));
    }
    if fallbacks.is_empty() {
        primary
    } else {
        Arc::new(Fallback::new(primary, fallbacks))
    }
}

fn endpoint(
    kind: ProviderKind,
    base_url: Option<&str>,
    api_key: Option<&Secret>,
    transport: Transport,
    max_tokens: u32,
) -> Arc<dyn Provider> {
    let base = resolved_base(kind, base_url);
    let shown = display_url(base);
    let api_key = api_key.filter(|k| !k.expose().trim().is_empty()).cloned();
    tracing::debug!(provider = ?kind, base_url = %shown, model = %transport.model(), has_key = api_key.is_some(), "llm endpoint");
    let provider: Arc<dyn Provider> = match kind {
        ProviderKind::Openai => Arc::new(OpenAi::new(transport.at("openai", shown, api_key), base, max_tokens)),
        ProviderKind::Anthropic => {
            Arc::new(Anthropic::new(transport.at("anthropic", shown, api_key), base, max_tokens))
        }
    };
    super::measured::Measured::wrap(provider)
}

/// A provider that fails every request with the same error.
pub(crate) struct Unavailable {
    name: &'static str,
    model: String,
    error: LlmError,
}

impl Unavailable {
    /// No model configured: every request fails with [`LlmError::NotConfigured`].
    pub(crate) fn not_configured() -> Self {
        Self { name: "none", model: String::new(), error: LlmError::NotConfigured }
    }
}

#[async_trait]
impl Provider for Unavailable {
    fn name(&self) -> &str {
        self.name
    }

    fn model(&self) -> &str {
        &self.model
    }

    async fn stream(&self, _req: &ChatRequest) -> Result<LlmStream, LlmError> {
        Err(self.error.clone())
    }
}

/// Tries each provider in order; moves to the next only on a transient error (rate limit,
/// server error, timeout, unreachable) raised before the stream started.
pub(crate) struct Fallback {
    primary: Arc<dyn Provider>,
    fallbacks: Vec<Arc<dyn Provider>>,
}

impl Fallback {
    pub(crate) fn new(primary: Arc<dyn Provider>, fallbacks: Vec<Arc<dyn Provider>>) -> Self {
        Self { primary, fallbacks }
    }
}

#[async_trait]
impl Provider for Fallback {
    fn name(&self) -> &str {
        self.primary.name()
    }

    fn model(&self) -> &str {
        self.primary.model()
    }

    async fn stream(&self, req: &ChatRequest) -> Result<LlmStream, LlmError> {
        let mut error = match self.primary.stream(req).await {
            Ok(stream) => return Ok(stream),
            Err(e) => e,
        };
        for (i, provider) in self.fallbacks.iter().enumerate() {
            if !error.is_transient() {
                break;
            }
            tracing::warn!(error = %error, next = provider.name(), next_model = provider.model(), "llm endpoint failed; trying the next");
            match provider.stream(req).await {
                Ok(stream) => {
                    tracing::info!(
                        provider = provider.name(),
                        model = provider.model(),
                        position = i + 1,
                        "llm fallback answered"
                    );
                    return Ok(stream);
                }
                Err(e) => error = e,
            }
        }
        Err(error)
    }
}
