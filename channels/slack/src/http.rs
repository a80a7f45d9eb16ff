//! Slack's HTTP endpoints on Butler's server:
//! `POST /channels/slack/events` (Events API), `POST /channels/slack/interactive` (button
//! clicks, form field `payload=`), `POST /channels/slack/commands` (slash commands).
//!
//! Each request is verified first (v0 signature over the raw body, 5-minute window): a failure
//! is a JSON 401 (429 once one address sent too many, with one aggregated WARN line per
//! address a minute) and nothing is stored. Then the request is mapped and stored, and answered 200
//! only after the ingress said the event is durable; 503 when it could not be stored (Slack
//! retries), 400 with `X-Slack-No-Retry: 1` for a body that will never make sense. Retries
//! (`X-Slack-Retry-Num`) need nothing special: the event id is the same, the inbox drops it.
//!
//! This module must never log or return a body, a signature or the signing secret.

use crate::receive::{Refusal, Reply};
use crate::verify::verify;
use crate::Shared;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Extension, Json, Router};
use butler_channel::limit::{self, Refusals};
use butler_channel::{now_ms, Ingress};
use std::net::SocketAddr;
use std::sync::Arc;

pub const EVENTS_PATH: &str = "/channels/slack/events";
pub const INTERACTIVE_PATH: &str = "/channels/slack/interactive";
pub const COMMANDS_PATH: &str = "/channels/slack/commands";

#[derive(Clone)]
struct Ctx {
    shared: Arc<Shared>,
    ingress: Arc<dyn Ingress>,
    secret: Arc<str>,
    /// Requests that failed the signature check, per peer address.
    refusals: Arc<Refusals>,
}

/// The peer address the server recorded, if any.
type Peer = Option<Extension<ConnectInfo<SocketAddr>>>;

/// The three endpoints, verified with `secret`.
pub fn routes(shared: Arc<Shared>, ingress: Arc<dyn Ingress>, secret: &str) -> Router {
    let gate = shared.settings.gate.clone();
    let ctx = Ctx { shared, ingress, secret: secret.into(), refusals: Arc::new(Refusals::new("slack", gate)) };
    Router::new()
        .route(EVENTS_PATH, post(events))
        .route(INTERACTIVE_PATH, post(interactive))
        .route(COMMANDS_PATH, post(commands))
        .with_state(ctx)
}

fn error(status: StatusCode, code: &str, message: &str) -> Response {
    let mut resp = (status, Json(butler_channel::error_body(status.as_u16(), code, message))).into_response();
    if status.is_client_error() {
        // Slack: do not retry a request that will fail the same way again.
        resp.headers_mut().insert("x-slack-no-retry", HeaderValue::from_static("1"));
    }
    resp
}

/// The refusal for a request that is not from Slack, or None when it is: 401, or 429 once
/// its address sent too many; one aggregated WARN line per address a minute.
async fn check(ctx: &Ctx, peer: Peer, headers: &HeaderMap, body: &[u8], what: &str) -> Option<Response> {
    let why = verify(ctx.secret.as_bytes(), headers, body, now_ms().div_euclid(1000)).err()?;
    let peer = limit::source_key(peer.map(|Extension(ConnectInfo(a))| a));
    let refusal = ctx.refusals.refuse(&peer).await;
    {
        if let Some(refused) = refusal.log {
            tracing::warn!(
                endpoint = what, %peer, reason = why.code(), refused,
                "Slack requests refused: signature check failed (one line per address a minute)"
            );
        }
        let mut resp = match refusal.retry_after {
            Some(wait) => {
                let secs = limit::retry_after_secs(wait);
                let mut resp = error(
                    StatusCode::TOO_MANY_REQUESTS,
                    "rate_limited",
                    &format!("too many requests with a bad signature from this address; retry after {secs}s"),
                );
                resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
                resp
            }
            None => error(StatusCode::UNAUTHORIZED, why.code(), crate::verify::explain(why)),
        };
        resp.headers_mut().remove("x-slack-no-retry");
        Some(resp)
    }
}

fn answer(result: Result<Reply, Refusal>) -> Response {
    match result {
        Ok(Reply::Empty) => StatusCode::OK.into_response(),
        Ok(Reply::Json(v)) => (StatusCode::OK, Json(v)).into_response(),
        Err(Refusal::Unavailable) => {
            error(StatusCode::SERVICE_UNAVAILABLE, "unavailable", "Butler cannot store this right now; try again")
        }
        Err(Refusal::Bad(m)) => error(StatusCode::BAD_REQUEST, "invalid_request", &m),
    }
}

async fn events(State(ctx): State<Ctx>, peer: Peer, headers: HeaderMap, body: Bytes) -> Response {
    if let Some(resp) = check(&ctx, peer, &headers, &body, "events").await {
        return resp;
    }
    if let Some(n) = headers.get("x-slack-retry-num").and_then(|v| v.to_str().ok()) {
        let reason = headers.get("x-slack-retry-reason").and_then(|v| v.to_str().ok()).unwrap_or("");
        tracing::debug!(retry = n, reason, "Slack redelivery");
    }
    answer(ctx.shared.on_events(&*ctx.ingress, &body).await)
}

async fn interactive(State(ctx): State<Ctx>, peer: Peer, headers: HeaderMap, body: Bytes) -> Response {
    if let Some(resp) = check(&ctx, peer, &headers, &body, "interactive").await {
        return resp;
    }
    let payload = match crate::interact::form_payload(&body) {
        Ok(p) => p,
        Err(m) => return error(StatusCode::BAD_REQUEST, "invalid_request", &m),
    };
    answer(ctx.shared.on_interaction(&*ctx.ingress, payload.as_bytes()).await)
}

async fn commands(State(ctx): State<Ctx>, peer: Peer, headers: HeaderMap, body: Bytes) -> Response {
    if let Some(resp) = check(&ctx, peer, &headers, &body, "commands").await {
        return resp;
    }
    let cmd = match serde_urlencoded::from_bytes(&body) {
        Ok(c) => c,
        Err(e) => return error(StatusCode::BAD_REQUEST, "invalid_request", &format!("not a slash command: {e}")),
    };
    answer(ctx.shared.on_command(&*ctx.ingress, cmd).await)
}
