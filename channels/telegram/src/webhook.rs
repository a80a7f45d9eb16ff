//! `POST /channels/telegram/webhook`, mounted in Butler's one HTTP server in webhook mode.
//!
//! The `X-Telegram-Bot-Api-Secret-Token` header is compared in constant time; a wrong or
//! missing one gets 401 with a JSON error (`{"error": {"code", "message", "type"}}`, like all of
//! Butler's API) and nothing is stored; once one address sent too many such requests they get
//! 429, and the WARN line is written once per address a minute with a count. A good request is answered 200 only after the ingress
//! made the update durable (or it is not an event), and 503 when the ingress is unavailable,
//! so Telegram delivers it again. It must never answer 200 for an
//! update that was not stored.

use crate::normalize::{event, repair, unreadable};
use crate::TelegramChannel;
use axum::extract::{ConnectInfo, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Extension, Json, Router};
use butler_channel::limit::{self, Refusals};
use butler_channel::signature::ct_eq;
use butler_channel::{Ingress, IngressError};
use std::net::SocketAddr;
use std::sync::Arc;

/// The route's path in Butler's server.
pub const WEBHOOK_PATH: &str = "/channels/telegram/webhook";
/// The header Telegram sends the webhook secret in.
pub const SECRET_HEADER: &str = "x-telegram-bot-api-secret-token";

struct Hook {
    channel: Arc<TelegramChannel>,
    ingress: Arc<dyn Ingress>,
    secret: String,
    /// Requests with a missing or wrong secret, per peer address.
    refusals: Refusals,
}

/// The webhook route for `channel` (its secret from the settings); empty in polling mode.
pub fn routes(channel: Arc<TelegramChannel>, ingress: Arc<dyn Ingress>) -> Router {
    let crate::Mode::Webhook { secret, .. } = channel.settings.mode.clone() else {
        return Router::new();
    };
    let refusals = Refusals::new("telegram", channel.settings.gate.clone());
    let state = Arc::new(Hook { channel, ingress, secret, refusals });
    Router::new().route(WEBHOOK_PATH, post(receive)).with_state(state)
}

/// An error in the shape of the rest of Butler's API: `{"error": {"code", "message", "type"}}`.
fn error(status: StatusCode, code: &str, message: &str) -> Response {
    (status, Json(butler_channel::error_body(status.as_u16(), code, message))).into_response()
}

/// A request with a missing or wrong secret: 401, or 429 once its address sent too many; one
/// aggregated WARN line per address a minute.
async fn refuse(hook: &Hook, peer: Option<Extension<ConnectInfo<SocketAddr>>>) -> Response {
    let peer = limit::source_key(peer.map(|Extension(ConnectInfo(a))| a));
    let refusal = hook.refusals.refuse(&peer).await;
    if let Some(refused) = refusal.log {
        tracing::warn!(%peer, refused, "Telegram webhook requests refused: wrong secret (one line per address a minute)");
    }
    match refusal.retry_after {
        Some(wait) => {
            let secs = limit::retry_after_secs(wait);
            let message = format!("too many requests with a wrong secret from this address; retry after {secs}s");
            let mut resp = error(StatusCode::TOO_MANY_REQUESTS, "rate_limited", &message);
            resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
            resp
        }
        None => error(StatusCode::UNAUTHORIZED, "invalid_secret", "missing or wrong X-Telegram-Bot-Api-Secret-Token"),
    }
}

async fn receive(
    State(hook): State<Arc<Hook>>,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let given = headers.get(SECRET_HEADER).map(|v| v.as_bytes()).unwrap_or_default();
    if hook.secret.is_empty() || !ct_eq(given, hook.secret.as_bytes()) {
        return refuse(&hook, peer).await;
    }
    let update: teloxide::types::Update = match serde_json::from_slice(&body) {
        Ok(u) => u,
        Err(e) => return error(StatusCode::BAD_REQUEST, "invalid_request", &format!("not a Telegram update: {e}")),
    };
    let update = match &update.kind {
        teloxide::types::UpdateKind::Error(_) => {
            match serde_json::from_slice::<serde_json::Value>(&body).ok().and_then(|raw| repair(&raw)) {
                Some(fixed) => fixed,
                None => {
                    // Redelivery would fail the same way: acknowledged, logged and counted.
                    unreadable(update.id.0);
                    return StatusCode::OK.into_response();
                }
            }
        }
        _ => update,
    };
    let Some(ev) = event(&update, &hook.channel.me) else {
        return StatusCode::OK.into_response();
    };
    match hook.ingress.accept(ev).await {
        Ok(_) => StatusCode::OK.into_response(),
        Err(IngressError::Invalid(why)) => {
            tracing::warn!(update = update.id.0, why, "an update the ingress will never take; acknowledged");
            StatusCode::OK.into_response()
        }
        Err(e) => {
            tracing::warn!(update = update.id.0, error = %e, "could not store a webhook update; Telegram will redeliver");
            error(StatusCode::SERVICE_UNAVAILABLE, "unavailable", "could not store the update; try again")
        }
    }
}
