//! The optional HTTP interactions endpoint, `POST /channels/discord/interactions` (set as the
//! application's Interactions Endpoint URL; Discord then sends clicks here instead of over the
//! gateway). Every request is verified first: Ed25519 over `X-Signature-Timestamp` followed by
//! the raw body, with the application's public key. A PING gets a PONG; a click is made durable
//! and then answered with a deferred update (type 6) in the response itself, well within
//! Discord's 3 seconds.
//!
//! A request that fails verification gets 401 and nothing is stored, and so does a signed one
//! whose `X-Signature-Timestamp` is more than 5 minutes from the server's clock (a replay of a
//! captured interaction; the interaction id dedup in the inbox catches one inside the window);
//! bad JSON gets 400. Errors
//! are `{"error": {"code", "message", "type"}}` like the rest of Butler's API. This module must never
//! store or acknowledge anything before the signature is checked.

use crate::inbound::{self, Interaction, APPLICATION_COMMAND, AUTOCOMPLETE, MESSAGE_COMPONENT, MODAL_SUBMIT, PING};
use crate::Inner;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Extension, Json, Router};
use butler_channel::limit::{self, Refusals};
use butler_channel::{signature, Ingress, IngressError};
use ed25519_dalek::{Signature, VerifyingKey};
use serenity::builder::{CreateAutocompleteResponse, CreateInteractionResponse, CreateInteractionResponseMessage};
use std::net::SocketAddr;
use std::sync::Arc;

/// Where Discord posts interactions.
pub const PATH: &str = "/channels/discord/interactions";

/// An application's public key from its hex form (64 hex characters).
pub fn public_key(hex_key: &str) -> Result<VerifyingKey, String> {
    let bytes = hex::decode(hex_key.trim()).map_err(|_| "the public key is not hex".to_string())?;
    let bytes: [u8; 32] =
        bytes.try_into().map_err(|_| "the public key must be 32 bytes (64 hex characters)".to_string())?;
    VerifyingKey::from_bytes(&bytes).map_err(|_| "the public key is not a valid Ed25519 key".to_string())
}

/// Whether `signature_hex` is `key`'s signature of `timestamp` followed by `body`.
pub fn verify(key: &VerifyingKey, timestamp: &[u8], body: &[u8], signature_hex: &str) -> bool {
    let Ok(bytes) = hex::decode(signature_hex.trim()) else { return false };
    let Ok(bytes) = <[u8; 64]>::try_from(bytes.as_slice()) else { return false };
    let signature = Signature::from_bytes(&bytes);
    let mut message = Vec::with_capacity(timestamp.len() + body.len());
    message.extend_from_slice(timestamp);
    message.extend_from_slice(body);
    key.verify_strict(&message, &signature).is_ok()
}

#[derive(Clone)]
struct Endpoint {
    key: VerifyingKey,
    ingress: Arc<dyn Ingress>,
    /// Requests that failed verification, per peer address.
    refusals: Arc<Refusals>,
}

/// The endpoint's route, when the config names a public key.
pub(crate) fn routes(inner: &Inner, ingress: Arc<dyn Ingress>) -> Option<Router> {
    let key = inner.public_key?;
    Some(Router::new().route(PATH, post(handle)).with_state(Endpoint {
        key,
        ingress,
        refusals: Arc::new(Refusals::new("discord", inner.gate.clone())),
    }))
}

fn error(status: StatusCode, code: &str, message: impl Into<String>) -> Response {
    (status, Json(butler_channel::error_body(status.as_u16(), code, &message.into()))).into_response()
}

fn now_secs() -> i64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    i64::try_from(now.as_secs()).unwrap_or(i64::MAX)
}

fn answer(response: CreateInteractionResponse) -> Response {
    Json(response).into_response()
}

/// A refused request: 401 with `code`, or 429 once its address sent too many; one aggregated
/// WARN line per address a minute.
async fn refuse(
    ep: &Endpoint,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    code: &str,
    message: &str,
) -> Response {
    let peer = limit::source_key(peer.map(|Extension(ConnectInfo(a))| a));
    let refusal = ep.refusals.refuse(&peer).await;
    if let Some(refused) = refusal.log {
        tracing::warn!(
            %peer, reason = code, refused,
            "Discord interactions refused: verification failed (one line per address a minute)"
        );
    }
    match refusal.retry_after {
        Some(wait) => {
            let secs = limit::retry_after_secs(wait);
            let message = format!("too many requests that failed verification from this address; retry after {secs}s");
            let mut resp = error(StatusCode::TOO_MANY_REQUESTS, "rate_limited", message);
            resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
            resp
        }
        None => error(StatusCode::UNAUTHORIZED, code, message),
    }
}

async fn handle(
    State(ep): State<Endpoint>,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let header = |name: &str| headers.get(name).map(|v| v.as_bytes());
    let (Some(signature), Some(timestamp)) = (header("x-signature-ed25519"), header("x-signature-timestamp")) else {
        return refuse(&ep, peer, "missing_signature", "X-Signature-Ed25519 and X-Signature-Timestamp are required")
            .await;
    };
    let signature = String::from_utf8_lossy(signature);
    if !verify(&ep.key, timestamp, &body, &signature) {
        return refuse(&ep, peer, "invalid_signature", "the signature does not match the application's public key")
            .await;
    }
    // The timestamp is signed, so only a holder of the key learns that a request was merely
    // stale. Old interactions are refused: a captured one must not work again days later.
    let ts = std::str::from_utf8(timestamp).ok().map(str::trim);
    if let Err(why) = signature::timestamp(ts).and_then(|ts| signature::fresh(ts, now_secs())) {
        return refuse(
            &ep,
            peer,
            why.code(),
            "X-Signature-Timestamp must be Unix seconds within 5 minutes of the server's clock",
        )
        .await;
    }
    let i: Interaction = match serde_json::from_slice(&body) {
        Ok(i) => i,
        Err(e) => return error(StatusCode::BAD_REQUEST, "invalid_request", format!("not a Discord interaction: {e}")),
    };
    match i.kind {
        PING => answer(CreateInteractionResponse::Pong),
        MESSAGE_COMPONENT => {
            let event = match inbound::click(&i) {
                Ok(event) => event,
                Err(why) => return error(StatusCode::BAD_REQUEST, "invalid_request", why),
            };
            match ep.ingress.accept(event).await {
                Ok(_) => answer(CreateInteractionResponse::Acknowledge),
                Err(IngressError::Invalid(why)) => error(StatusCode::BAD_REQUEST, "invalid_request", why),
                Err(IngressError::Unavailable(why)) => {
                    tracing::warn!(%why, "a Discord click could not be stored");
                    error(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "unavailable",
                        "Butler cannot store this right now; try again",
                    )
                }
            }
        }
        APPLICATION_COMMAND | MODAL_SUBMIT => answer(CreateInteractionResponse::Message(
            CreateInteractionResponseMessage::new().content(crate::NO_COMMANDS).ephemeral(true),
        )),
        AUTOCOMPLETE => answer(CreateInteractionResponse::Autocomplete(CreateAutocompleteResponse::new())),
        other => error(StatusCode::BAD_REQUEST, "invalid_request", format!("unknown interaction type {other}")),
    }
}
