//! `GET` and `POST /channels/whatsapp/webhook`, mounted in Butler's one HTTP server.
//!
//! - `GET`: Meta's verification handshake. `hub.mode=subscribe` with `hub.verify_token` equal
//!   to the configured one (constant time) is answered with `hub.challenge` as plain text;
//!   anything else gets 403.
//! - `POST`: `X-Hub-Signature-256: sha256=<hex>` is checked over the raw body with the app
//!   secret (constant time) before the body is parsed. A missing or wrong signature gets 401
//!   (429 once an address sent too many; one WARN line per address a minute) and nothing is
//!   stored. A signed delivery is answered 200 only after the ingress made each of its messages
//!   durable, and 503 when it could not, so Meta delivers it again. Status callbacks are logged
//!   and counted (`butler_channel_delivery_statuses_total{channel,status}`), never events.
//!
//! It must never answer 200 for a message that was not stored, nor parse an unsigned body.

use crate::normalize::{delivery, CHANNEL};
use crate::WhatsAppChannel;
use axum::extract::{ConnectInfo, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Json, Router};
use butler_channel::limit::{self, Gate, Refusals};
use butler_channel::signature::{self, ct_eq};
use butler_channel::{Accepted, EventBody, Ingress, IngressError};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

/// The route's path in Butler's server.
pub const WEBHOOK_PATH: &str = "/channels/whatsapp/webhook";
/// The header Meta signs each delivery in.
pub const SIGNATURE_HEADER: &str = "x-hub-signature-256";

struct Hook {
    channel: Arc<WhatsAppChannel>,
    ingress: Arc<dyn Ingress>,
    /// Requests with a missing or wrong signature (or verify token), per peer address.
    refusals: Refusals,
}

/// The webhook routes for `channel`; refusals are limited through `gate`.
pub fn routes(channel: Arc<WhatsAppChannel>, ingress: Arc<dyn Ingress>, gate: Gate) -> Router {
    let state = Arc::new(Hook { channel, ingress, refusals: Refusals::new(CHANNEL, gate) });
    Router::new().route(WEBHOOK_PATH, get(verify).post(receive)).with_state(state)
}

/// An error in the shape of the rest of Butler's API: `{"error": {"code", "message", "type"}}`.
fn error(status: StatusCode, code: &str, message: &str) -> Response {
    (status, Json(butler_channel::error_body(status.as_u16(), code, message))).into_response()
}

/// A refused request: `status` with `code`, or 429 once its address sent too many.
async fn refuse(
    hook: &Hook,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    status: StatusCode,
    code: &str,
    why: &str,
) -> Response {
    let peer = limit::source_key(peer.map(|Extension(ConnectInfo(a))| a));
    let refusal = hook.refusals.refuse(&peer).await;
    if let Some(refused) = refusal.log {
        tracing::warn!(%peer, refused, why, "WhatsApp webhook requests refused (one line per address a minute)");
    }
    match refusal.retry_after {
        Some(wait) => {
            let secs = limit::retry_after_secs(wait);
            let message = format!("too many refused requests from this address; retry after {secs}s");
            let mut resp = error(StatusCode::TOO_MANY_REQUESTS, "rate_limited", &message);
            resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
            resp
        }
        None => error(status, code, why),
    }
}

/// Meta's subscription handshake.
async fn verify(
    State(hook): State<Arc<Hook>>,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let token = &hook.channel.settings.verify_token;
    let given = q.get("hub.verify_token").map(String::as_bytes).unwrap_or_default();
    let ok = q.get("hub.mode").map(String::as_str) == Some("subscribe")
        && !token.is_empty()
        && ct_eq(given, token.as_bytes());
    match (ok, q.get("hub.challenge")) {
        (true, Some(challenge)) => {
            tracing::info!("WhatsApp webhook verified by Meta");
            ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], challenge.clone()).into_response()
        }
        _ => refuse(&hook, peer, StatusCode::FORBIDDEN, "forbidden", "wrong hub.mode or hub.verify_token").await,
    }
}

async fn receive(
    State(hook): State<Arc<Hook>>,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let given = headers.get(SIGNATURE_HEADER).and_then(|v| v.to_str().ok());
    let checked = signature::digest(given, "sha256=")
        .and_then(|sig| signature::check(hook.channel.settings.app_secret.as_bytes(), &[&body], &sig));
    if let Err(why) = checked {
        let message = match why {
            signature::Rejection::MissingSignature => "the request is not signed: X-Hub-Signature-256 is missing",
            signature::Rejection::MalformedSignature => "X-Hub-Signature-256 must be sha256= followed by 64 hex digits",
            _ => "X-Hub-Signature-256 does not match the body and the app secret",
        };
        return refuse(&hook, peer, StatusCode::UNAUTHORIZED, why.code(), message).await;
    }
    let value: serde_json::Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => return error(StatusCode::BAD_REQUEST, "invalid_request", &format!("not a webhook delivery: {e}")),
    };
    let d = delivery(&value, &hook.channel.settings.phone_number_id);
    for s in &d.statuses {
        butler_channel::count_status(CHANNEL, &s.status);
        if s.status == "failed" {
            tracing::warn!(message = %s.id, recipient = %s.recipient, errors = ?s.errors, "WhatsApp could not deliver a message");
        } else {
            tracing::debug!(message = %s.id, status = %s.status, "WhatsApp delivery status");
        }
    }
    for kind in &d.skipped {
        tracing::debug!(kind, "a WhatsApp message that is no event (reaction or unsupported type); acknowledged");
    }
    let mut read = Vec::new();
    for ev in d.events {
        let id = ev.id.0.clone();
        let conversation = ev.conversation.id.clone();
        let message = match (&ev.message_id, &ev.body) {
            (Some(m), EventBody::Message { .. }) => Some(m.clone()),
            _ => None,
        };
        if let Some(m) = &message {
            hook.channel.seen(&ev.conversation.id, m);
        }
        match hook.ingress.accept(ev).await {
            Ok(Accepted::New) => read.extend(message.map(|m| (conversation, m))),
            Ok(Accepted::Duplicate) => {}
            Err(IngressError::Invalid(why)) => {
                tracing::warn!(event = %id, why, "a WhatsApp message the ingress will never take; acknowledged");
            }
            Err(e) => {
                tracing::warn!(event = %id, error = %e, "could not store a WhatsApp message; Meta will redeliver");
                return error(StatusCode::SERVICE_UNAVAILABLE, "unavailable", "could not store the message; try again");
            }
        }
    }
    // Read and typing at once, from the replica that took the delivery (the turn may run on
    // another, which has not seen the message id); bounded, so Meta gets its 200 quickly.
    for (wa_id, m) in read {
        match tokio::time::timeout(READ_RECEIPT_WAIT, hook.channel.read_and_typing(&m)).await {
            Ok(Ok(())) => hook.channel.shown(&wa_id, &m),
            Ok(Err(e)) => tracing::debug!(error = %e, "read receipt not sent"),
            Err(_) => tracing::debug!("read receipt timed out"),
        }
    }
    StatusCode::OK.into_response()
}

/// The longest the webhook waits for a read receipt before it answers Meta.
const READ_RECEIPT_WAIT: std::time::Duration = std::time::Duration::from_secs(2);
