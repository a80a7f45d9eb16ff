//! Every model endpoint behind one wrapper that measures it: a `llm` span around the request
//! (a child of the turn's span, with provider and model), the request's duration to the end of
//! its stream in `butler_llm_request_seconds{provider}`, and its failures by kind in
//! `butler_llm_errors_total{provider,kind}`. It must never change what the endpoint returns.

use super::{ChatRequest, LlmError, LlmStream, Provider};
use crate::metrics::METRICS;
use async_trait::async_trait;
use futures::Stream;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;
use tracing::Instrument;

pub(super) struct Measured {
    inner: Arc<dyn Provider>,
}

impl Measured {
    pub(super) fn wrap(inner: Arc<dyn Provider>) -> Arc<dyn Provider> {
        Arc::new(Self { inner })
    }
}

fn failed(provider: &str, started: Instant, e: &LlmError) {
    METRICS.llm_seconds.observe(provider, started.elapsed().as_secs_f64());
    METRICS.llm_errors.inc(&[provider, e.kind()]);
    tracing::info!(error.kind = e.kind(), "model request failed");
}

#[async_trait]
impl Provider for Measured {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn model(&self) -> &str {
        self.inner.model()
    }

    async fn stream(&self, req: &ChatRequest) -> Result<LlmStream, LlmError> {
        let span = tracing::info_span!("llm", provider = %self.inner.name(), model = %self.inner.model());
        let started = Instant::now();
        let provider = self.inner.name().to_string();
        match self.inner.stream(req).instrument(span.clone()).await {
            Ok(inner) => Ok(Box::pin(Watched { inner, provider, started, span, done: false })),
            Err(e) => {
                span.in_scope(|| failed(&provider, started, &e));
                Err(e)
            }
        }
    }
}

/// The stream of one request: ends the measurement when it ends (or is dropped unfinished).
struct Watched {
    inner: LlmStream,
    provider: String,
    started: Instant,
    span: tracing::Span,
    done: bool,
}

impl Stream for Watched {
    type Item = <LlmStream as Stream>::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let _entered = this.span.enter();
        let next = this.inner.as_mut().poll_next(cx);
        if !this.done {
            match &next {
                Poll::Ready(None) => {
                    this.done = true;
                    METRICS.llm_seconds.observe(&this.provider, this.started.elapsed().as_secs_f64());
                }
                Poll::Ready(Some(Err(e))) => {
                    this.done = true;
                    failed(&this.provider, this.started, e);
                }
                _ => {}
            }
        }
        next
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        // Stopped by the person or cut short: the time it ran still counts.
        if !self.done {
            METRICS.llm_seconds.observe(&self.provider, self.started.elapsed().as_secs_f64());
        }
    }
}
