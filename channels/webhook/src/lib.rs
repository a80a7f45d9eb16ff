//! Butler's signed inbound webhooks: `POST /hooks/{name}` for each configured source.
//!
//! A request is checked in this order, and each failure is a JSON error
//! (`{"error": {"code", "message", "type"}}`) with nothing stored: another method -> 405, unknown
//! source -> 404, body over the server's limit -> 413, missing or bad signature (HMAC-SHA256
//! over the raw body bytes, constant-time) -> 401 (or 429 once one address sent too many such
//! requests, with one aggregated WARN line per address a minute), over the source's rate limit
//! (only signed requests count) -> 429 with `Retry-After`, a body that is not JSON or an unusable delivery
//! id -> 400. The event id comes from the signed bytes only (see [`event_key`]): with Butler's
//! scheme one event per (timestamp, body), with GitHub's one per body. A good request becomes an
//! [`InboundEvent`](butler_channel::InboundEvent) with `EventBody::Trigger` and is handed to
//! [`Ingress::accept`]; the answer is 202 only after that returned `Ok` (a repeat is 202 too),
//! 503 when the ingress cannot store it.
//!
//! Both limits (per source, and refused requests per address) are kept in the [`Gate`] the
//! router is given, so with the replicas' shared gate a source gets its rate once, whichever
//! replica its requests land on.
//!
//! This crate must never touch a database, Redis or an LLM, never import Butler's root crate,
//! and never log or return a secret, a signature or a body. Deciding what an event means
//! (drop, notify, agent turn) is triage's job, not this crate's.

#[doc(hidden)] // public for the fuzz targets (fuzz/)
pub mod event;
mod verify;

pub use event::{content_hash, event_key, DELIVERY_HEADERS, KEPT_HEADERS};
pub use verify::{verify, Rejection, Scheme, BUTLER_SIGNATURE, BUTLER_TIMESTAMP, GITHUB_SIGNATURE, TOLERANCE_SECS};

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Extension, Json, Router};
use butler_channel::limit::{self, Gate, Rate};
use butler_channel::{now_ms, Accepted, Ingress, IngressError};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

/// The channel name of trigger events: identities and conversations are `hook:<source>`.
pub const CHANNEL: &str = "hook";

/// One configured source (`[[triggers]]`).
#[derive(Clone)]
pub struct Source {
    /// The path segment of `POST /hooks/{name}`.
    pub name: String,
    /// The HMAC key shared with the sender.
    pub secret: String,
    pub scheme: Scheme,
    /// Requests accepted per minute (a burst of this many, refilled evenly); more get 429.
    pub rate_limit_per_minute: u32,
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Source")
            .field("name", &self.name)
            .field("secret", &"********")
            .field("scheme", &self.scheme)
            .field("rate_limit_per_minute", &self.rate_limit_per_minute)
            .finish()
    }
}

struct Entry {
    source: Source,
    /// The source's gate key and rate.
    key: String,
    rate: Rate,
}

struct Hooks {
    sources: HashMap<String, Entry>,
    ingress: Arc<dyn Ingress>,
    /// Requests that failed the signature check, per peer address.
    refusals: limit::Refusals,
    gate: Gate,
}

/// The router for `POST /hooks/{name}`, its limits kept in `gate`. The body size limit is the
/// server's (`DefaultBodyLimit` applied around it); a body over it gets a JSON 413.
pub fn routes(sources: Vec<Source>, ingress: Arc<dyn Ingress>, gate: Gate) -> Router {
    let sources = sources
        .into_iter()
        .map(|s| {
            let entry = Entry {
                key: format!("hook:source:{}", s.name),
                rate: Rate::per_minute(s.rate_limit_per_minute),
                source: s,
            };
            (entry.source.name.clone(), entry)
        })
        .collect();
    Router::new().route("/hooks/{name}", post(receive).fallback(only_post)).with_state(Arc::new(Hooks {
        sources,
        ingress,
        refusals: limit::Refusals::new(CHANNEL, gate.clone()),
        gate,
    }))
}

/// A JSON error in the shape the rest of Butler's API uses.
struct HookError {
    status: StatusCode,
    code: &'static str,
    message: String,
    retry_after: Option<u64>,
}

impl HookError {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self { status, code, message: message.into(), retry_after: None }
    }
}

impl IntoResponse for HookError {
    fn into_response(self) -> Response {
        let body = Json(butler_channel::error_body(self.status.as_u16(), self.code, &self.message));
        let mut resp = (self.status, body).into_response();
        if let Some(secs) = self.retry_after {
            resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        resp
    }
}

async fn only_post() -> Response {
    let mut resp =
        HookError::new(StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed", "webhooks are delivered with POST")
            .into_response();
    resp.headers_mut().insert(header::ALLOW, HeaderValue::from_static("POST"));
    resp
}

async fn receive(
    State(hooks): State<Arc<Hooks>>,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    name: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, HookError> {
    let unknown = || {
        HookError::new(
            StatusCode::NOT_FOUND,
            "unknown_source",
            "no trigger source has this name; sources are configured as [[triggers]]",
        )
    };
    let Path(name) = name.map_err(|_| unknown())?;
    let entry = hooks.sources.get(&name).ok_or_else(unknown)?;
    let source = &entry.source;
    let body = body.map_err(|r| {
        if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
            HookError::new(r.status(), "body_too_large", "the body is larger than [server] max_body_bytes allows")
        } else {
            HookError::new(StatusCode::BAD_REQUEST, "invalid_request", "the body could not be read")
        }
    })?;
    let now = now_ms();
    if let Err(why) = verify(source.scheme, source.secret.as_bytes(), &headers, &body, now.div_euclid(1000)) {
        let peer = limit::source_key(peer.map(|Extension(ConnectInfo(a))| a));
        let refusal = hooks.refusals.refuse(&peer).await;
        if let Some(refused) = refusal.log {
            tracing::warn!(
                source = %name, %peer, reason = why.code(), refused,
                "webhook requests refused: signature check failed (one line per address a minute)"
            );
        }
        if let Some(wait) = refusal.retry_after {
            let secs = limit::retry_after_secs(wait);
            let mut err = HookError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limited",
                format!("too many requests with a bad signature from this address; retry after {secs}s"),
            );
            err.retry_after = Some(secs);
            return Err(err);
        }
        return Err(HookError::new(StatusCode::UNAUTHORIZED, why.code(), verify::explain(why)));
    }
    if let Err(wait) = hooks.gate.take(&entry.key, entry.rate).await {
        let secs = limit::retry_after_secs(wait);
        tracing::warn!(source = %name, retry_after = secs, "webhook request refused: over the rate limit");
        let mut err = HookError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            format!(
                "this source sends more than {} requests a minute; retry after {secs}s",
                source.rate_limit_per_minute
            ),
        );
        err.retry_after = Some(secs);
        return Err(err);
    }
    let json: Value = serde_json::from_slice(&body).map_err(|e| {
        HookError::new(
            StatusCode::BAD_REQUEST,
            "malformed_json",
            format!(
                "the body is not JSON ({e}); send it as application/json (for GitHub: Content type application/json)"
            ),
        )
    })?;
    // The delivery id is checked (it is kept with the event) but never names the event: it is
    // not signed, so a captured request re-posted under another id must stay one event.
    event::delivery_id(&headers).map_err(|m| HookError::new(StatusCode::BAD_REQUEST, "invalid_delivery_id", m))?;
    let key = event::event_key(source.scheme, &headers, &body);
    let prefix = match source.scheme {
        Scheme::Github => "github",
        Scheme::Butler => source.name.as_str(),
    };
    let ev = event::build(&source.name, prefix, &key, event::kept_headers(&headers), json, now);
    let event_id = ev.id.0.clone();
    match hooks.ingress.accept(ev).await {
        Ok(outcome) => {
            let duplicate = outcome == Accepted::Duplicate;
            Ok((StatusCode::ACCEPTED, Json(json!({"event_id": event_id, "duplicate": duplicate}))).into_response())
        }
        Err(IngressError::Invalid(m)) => Err(HookError::new(StatusCode::BAD_REQUEST, "invalid_request", m)),
        Err(IngressError::Unavailable(cause)) => {
            tracing::warn!(source = %name, error = %cause, "webhook event could not be stored");
            Err(HookError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "Butler cannot store this right now; try again",
            ))
        }
    }
}
