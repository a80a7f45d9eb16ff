//! Shared request sending for every provider: timeouts, retries and the live SSE stream.
//!
//! One [`Transport`] per endpoint. [`Transport::open`] sends the request and reads until the
//! first piece of content (text, a tool call or the finish) has been decoded; everything that
//! goes wrong before that point is an error of `open` and may be retried (429 and 5xx, with
//! exponential backoff and jitter, honouring `Retry-After` in seconds or as an HTTP date, up to
//! `max_retries`). Timeouts: connect (in the client), first byte (request start to the first
//! body chunk), idle (between body chunks afterwards). This module must never retry once content
//! has been handed to the caller, never log or return the API key, and never sleep longer than
//! [`MAX_RETRY_WAIT`] for one retry.

use super::decode::{Decode, Flow};
use super::errors::{classify, scrub, ProviderError};
use super::sse::{SseEvent, SseParser};
use super::{LlmError, LlmStream, StreamEvent};
use crate::config::Secret;
use bytes::Bytes;
use futures::{FutureExt, Stream, StreamExt};
use rand::Rng;
use reqwest::header::{HeaderMap, CONTENT_TYPE, RETRY_AFTER};
use std::collections::VecDeque;
use std::pin::Pin;
use std::time::Duration;
use tokio::time::{timeout_at, Instant};

/// A server asking for a longer pause than this is not waited for: the caller gets
/// `RateLimited { retry_after }` at once.
pub(crate) const MAX_RETRY_WAIT: Duration = Duration::from_secs(60);
const BACKOFF_BASE: Duration = Duration::from_millis(250);
const BACKOFF_CAP: Duration = Duration::from_secs(8);
/// Error bodies are read up to this size.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// How long each phase of a request may take.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Timeouts {
    pub connect: Duration,
    pub first_byte: Duration,
    pub idle: Duration,
}

/// Parses a provider's error body (any status) into the neutral description.
pub(crate) type ErrorParser = fn(u16, &str) -> ProviderError;

/// One endpoint: the client, where it is, how patient to be.
#[derive(Clone)]
pub(crate) struct Transport {
    client: reqwest::Client,
    /// The base URL without credentials, as shown in errors.
    base_url: String,
    timeouts: Timeouts,
    max_retries: u32,
    provider: &'static str,
    model: String,
    api_key: Option<Secret>,
}

type Failure = (LlmError, Option<Duration>);

impl Transport {
    /// A transport for `model` that names no endpoint yet; [`Transport::at`] aims it.
    pub(crate) fn new(client: reqwest::Client, timeouts: Timeouts, max_retries: u32, model: &str) -> Self {
        Self {
            client,
            base_url: String::new(),
            timeouts,
            max_retries,
            provider: "",
            model: model.trim().to_string(),
            api_key: None,
        }
    }

    /// This transport aimed at `provider`: `base_url` is the form without credentials shown in
    /// errors, `api_key` the key to send (if any).
    pub(crate) fn at(self, provider: &'static str, base_url: String, api_key: Option<Secret>) -> Self {
        Self { provider, base_url, api_key, ..self }
    }

    /// A POST to `url` on the shared client (the caller adds headers and body).
    pub(crate) fn post(&self, url: &str) -> reqwest::RequestBuilder {
        self.client.post(url)
    }

    /// The model every request names.
    pub(crate) fn model(&self) -> &str {
        &self.model
    }

    /// The key to send, if one is configured and non-empty.
    pub(crate) fn key(&self) -> Option<&str> {
        self.api_key.as_ref().map(Secret::expose).filter(|k| !k.is_empty())
    }

    /// Sends the request built by `build` (called once per attempt) and returns the stream once
    /// content starts. See the module docs for retries and timeouts.
    pub(crate) async fn open<D: Decode>(
        &self,
        build: impl Fn() -> reqwest::RequestBuilder,
        decoder: impl Fn() -> D,
        parse_error: ErrorParser,
    ) -> Result<LlmStream, LlmError> {
        let mut attempt: u32 = 0;
        loop {
            let (err, hint) = match self.attempt(build(), decoder(), parse_error).await {
                Ok(stream) => return Ok(stream),
                Err(failure) => failure,
            };
            let err = scrub(err, self.key().unwrap_or_default());
            let retryable = matches!(err, LlmError::RateLimited { .. } | LlmError::Server { .. });
            if !retryable || attempt >= self.max_retries {
                tracing::warn!(provider = self.provider, model = %self.model, attempts = attempt + 1, error = %err, "llm request failed");
                return Err(err);
            }
            let wait = match hint {
                Some(d) if d > MAX_RETRY_WAIT => {
                    tracing::warn!(provider = self.provider, model = %self.model, retry_after_s = d.as_secs(), "llm asks for a long pause; not waiting");
                    return Err(err);
                }
                Some(d) => d,
                None => backoff(attempt),
            };
            tracing::info!(provider = self.provider, model = %self.model, attempt = attempt + 1, wait_ms = wait.as_millis() as u64, error = %err, "llm request retrying");
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }

    async fn attempt<D: Decode>(
        &self,
        request: reqwest::RequestBuilder,
        decoder: D,
        parse_error: ErrorParser,
    ) -> Result<LlmStream, Failure> {
        let deadline = Instant::now() + self.timeouts.first_byte;
        let response = match timeout_at(deadline, request.send()).await {
            Err(_) => return Err((self.first_byte_timeout(), None)),
            Ok(Err(e)) => return Err((self.send_error(&e), None)),
            Ok(Ok(r)) => r,
        };
        let status = response.status();
        tracing::debug!(provider = self.provider, model = %self.model, status = status.as_u16(), "llm response");
        if !status.is_success() {
            let hint = retry_after(response.headers());
            let body = read_error_body(response, self.timeouts.idle).await;
            let described = parse_error(status.as_u16(), &body);
            return Err((classify(&described, &self.model, hint), hint));
        }
        if is_json(response.headers()) {
            // Not a stream: an error some servers send with 200, or a server ignoring `stream`.
            let body = read_error_body(response, self.timeouts.idle).await;
            return Err((self.json_instead_of_stream(&body, parse_error), None));
        }
        let mut live = Live {
            body: Box::pin(response.bytes_stream()),
            parser: SseParser::new(),
            decoder,
            frames: Vec::new(),
            out: VecDeque::new(),
            finished: false,
            failed: None,
            timeouts: self.timeouts,
            secret: self.api_key.clone(),
        };
        live.prefetch(deadline).await.map_err(|e| (e, None))?;
        // Who answers goes first, so usage is recorded under this endpoint's model.
        live.out.push_front(StreamEvent::Model(self.model.clone()));
        Ok(live.into_stream())
    }

    fn json_instead_of_stream(&self, body: &str, parse_error: ErrorParser) -> LlmError {
        let v: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
        let error =
            v.get("error").is_some_and(|e| !e.is_null()) || v.get("type").and_then(|t| t.as_str()) == Some("error");
        if error {
            let mut described = parse_error(200, body);
            described.status = None;
            return classify(&described, &self.model, None);
        }
        LlmError::Protocol(
            "the server answered with plain JSON instead of an event stream; does it support `stream: true`?".into(),
        )
    }

    fn first_byte_timeout(&self) -> LlmError {
        LlmError::Timeout(format!("no response within {}s", self.timeouts.first_byte.as_secs_f64()))
    }

    fn send_error(&self, e: &reqwest::Error) -> LlmError {
        if e.is_timeout() {
            LlmError::Timeout(format!(
                "could not connect to {} within {}s",
                self.base_url,
                self.timeouts.connect.as_secs_f64()
            ))
        } else if e.is_connect() {
            LlmError::Unreachable(self.base_url.clone())
        } else {
            LlmError::Unreachable(format!("{} ({})", self.base_url, root_cause(e)))
        }
    }
}

/// The innermost cause of an error, which reqwest keeps out of its own Display.
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

/// Exponential backoff with "equal jitter": half of each step fixed, half random.
fn backoff(attempt: u32) -> Duration {
    let step = BACKOFF_BASE.saturating_mul(1u32 << attempt.min(16)).min(BACKOFF_CAP);
    step.mul_f64(rand::rng().random_range(0.5..=1.0))
}

/// `retry-after-ms` (OpenAI), then `Retry-After` as seconds or as an HTTP date.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = |name| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        if ms.is_finite() && ms >= 0.0 {
            return Some(Duration::from_secs_f64(ms / 1000.0));
        }
    }
    parse_retry_after(text(RETRY_AFTER.as_str())?)
}

/// `120`, `1.5` or `Wed, 21 Oct 2015 07:28:00 GMT` (a date in the past means "now").
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let when = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let delta = when.with_timezone(&chrono::Utc) - chrono::Utc::now();
    Some(delta.to_std().unwrap_or(Duration::ZERO))
}

async fn read_error_body(response: reqwest::Response, idle: Duration) -> String {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while body.len() < MAX_ERROR_BODY {
        match tokio::time::timeout(idle, stream.next()).await {
            Ok(Some(Ok(chunk))) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    body.truncate(MAX_ERROR_BODY);
    String::from_utf8_lossy(&body).into_owned()
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.trim_start().starts_with("application/json"))
}

fn is_content(ev: &StreamEvent) -> bool {
    !matches!(ev, StreamEvent::Usage(_))
}

type Body = Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>;

/// A response body being read, parsed and decoded.
struct Live<D> {
    body: Body,
    parser: SseParser,
    decoder: D,
    frames: Vec<SseEvent>,
    out: VecDeque<StreamEvent>,
    /// The decoder reported the end, the body ended, or reading failed.
    finished: bool,
    /// Why reading stopped early; handed out after the events decoded before it.
    failed: Option<LlmError>,
    timeouts: Timeouts,
    secret: Option<Secret>,
}

impl<D: Decode> Live<D> {
    /// Reads until the first content event is decoded or the response ends. Fails only when
    /// something went wrong before any content: an error decoded after content in the same
    /// chunk is kept and handed out after that content, so chunking never changes the outcome.
    async fn prefetch(&mut self, first_deadline: Instant) -> Result<(), LlmError> {
        let mut deadline = first_deadline;
        let mut first = true;
        while !self.finished && !self.out.iter().any(is_content) {
            self.pump(deadline, first).await;
            first = false;
            deadline = Instant::now() + self.timeouts.idle;
        }
        match self.failed.take() {
            Some(e) if !self.out.iter().any(is_content) => Err(e),
            other => {
                self.failed = other;
                Ok(())
            }
        }
    }

    /// Reads and decodes one body chunk; an error ends the response and is kept in `failed`.
    async fn pump(&mut self, deadline: Instant, first: bool) {
        if let Err(e) = self.read(deadline, first).await {
            self.finished = true;
            self.failed = Some(e);
        }
    }

    async fn read(&mut self, deadline: Instant, first: bool) -> Result<(), LlmError> {
        let next = match timeout_at(deadline, self.body.next()).await {
            Ok(next) => next,
            Err(_) if first => {
                return Err(LlmError::Timeout(format!(
                    "no response within {}s",
                    self.timeouts.first_byte.as_secs_f64()
                )))
            }
            Err(_) => {
                return Err(LlmError::Timeout(format!("the stream stalled for {}s", self.timeouts.idle.as_secs_f64())))
            }
        };
        self.frames.clear();
        let ended = next.is_none();
        match next {
            Some(Ok(chunk)) => self.parser.feed(&chunk, &mut self.frames),
            Some(Err(e)) => {
                return Err(LlmError::Protocol(format!("the connection broke mid-stream ({})", root_cause(&e))))
            }
            None => self.parser.finish(&mut self.frames),
        }
        for frame in &self.frames {
            if self.decoder.event(frame, &mut self.out)? == Flow::Done {
                self.finished = true;
                // Let the connection go back to the pool when its end is already here.
                let _ = self.body.next().now_or_never();
                return Ok(());
            }
        }
        if ended {
            self.finished = true;
            self.decoder.end(&mut self.out)?;
        }
        Ok(())
    }

    fn into_stream(self) -> LlmStream {
        Box::pin(futures::stream::unfold(Some(self), |state| async move {
            let mut live = state?;
            loop {
                if let Some(ev) = live.out.pop_front() {
                    return Some((Ok(ev), Some(live)));
                }
                if let Some(e) = live.failed.take() {
                    let secret = live.secret.as_ref().map(Secret::expose).unwrap_or_default();
                    let e = scrub(e, secret);
                    tracing::warn!(error = %e, "llm stream failed");
                    return Some((Err(e), None));
                }
                if live.finished {
                    return None;
                }
                let deadline = Instant::now() + live.timeouts.idle;
                live.pump(deadline, false).await;
            }
        }))
    }
}
