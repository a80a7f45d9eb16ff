//! `POST /channels/telegram/webhook`, mounted in Butler's one HTTP server in webhook mode.
//!
//! The `X-Telegram-Bot-Api-Secret-Token` header is compared in constant time; a wrong or
//! missing one gets 401 with a JSON error and nothing is stored. A good request is answered 200
//! only after the ingress made the update durable (or it is not an event), and 503 when the
//! ingress is unavailable, so Telegram delivers it again. It must never answer 200 for an
//! update that was not stored.

use crate::normalize::event;
use crate::TelegramChannel;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use butler_channel::{Ingress, IngressError};
use constant_time::ct_eq;
use std::sync::Arc;

/// The route's path in Butler's server.
pub const WEBHOOK_PATH: &str = "/channels/telegram/webhook";
/// The header Telegram sends the webhook secret in.
pub const SECRET_HEADER: &str = "x-telegram-bot-api-secret-token";

struct Hook {
    channel: Arc<TelegramChannel>,
    ingress: Arc<dyn Ingress>,
    secret: String,
}

/// The webhook route for `channel` (its secret from the settings); empty in polling mode.
pub fn routes(channel: Arc<TelegramChannel>, ingress: Arc<dyn Ingress>) -> Router {
    let crate::Mode::Webhook { secret, .. } = channel.settings.mode.clone() else {
        return Router::new();
    };
    let state = Arc::new(Hook { channel, ingress, secret });
    Router::new().route(WEBHOOK_PATH, post(receive)).with_state(state)
}

fn error(status: StatusCode, message: &str) -> Response {
    (status, Json(serde_json::json!({ "error": message }))).into_response()
}

async fn receive(State(hook): State<Arc<Hook>>, headers: HeaderMap, body: axum::body::Bytes) -> Response {
    let given = headers.get(SECRET_HEADER).map(|v| v.as_bytes()).unwrap_or_default();
    if hook.secret.is_empty() || !ct_eq(given, hook.secret.as_bytes()) {
        return error(StatusCode::UNAUTHORIZED, "missing or wrong X-Telegram-Bot-Api-Secret-Token");
    }
    let update: teloxide::types::Update = match serde_json::from_slice(&body) {
        Ok(u) => u,
        Err(e) => return error(StatusCode::BAD_REQUEST, &format!("not a Telegram update: {e}")),
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
            error(StatusCode::SERVICE_UNAVAILABLE, "could not store the update; try again")
        }
    }
}

mod constant_time {
    /// Compares two byte strings in time that depends only on their lengths.
    pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
        let mut diff = a.len() ^ b.len();
        for (i, y) in b.iter().enumerate() {
            let x = a.get(i).copied().unwrap_or(0);
            diff |= usize::from(x ^ y);
        }
        diff == 0
    }
}

#[cfg(test)]
mod tests {
    use super::constant_time::ct_eq;

    #[test]
    fn constant_time_comparison() {
        assert!(ct_eq(b"s3cret", b"s3cret"));
        assert!(!ct_eq(b"s3cres", b"s3cret"));
        assert!(!ct_eq(b"s3cre", b"s3cret"));
        assert!(!ct_eq(b"s3cret-and-more", b"s3cret"));
        assert!(!ct_eq(b"", b"s3cret"));
    }
}
