//! An OpenAI-compatible API at `/v1`, so Open WebUI, LibreChat, editor plugins and any OpenAI SDK
//! can talk to Butler: `GET /v1/models` and `POST /v1/chat/completions` (streamed or not).
//!
//! A completion is one message of the web chat: the newest user message of the request goes
//! through the same checks, ingress, triage and session as `POST /api/v1/messages` (so memory,
//! tools and approvals all apply), and the answer is read back from that web conversation.
//! This module must never call the model itself, keep a transcript of its own, or trust the
//! request's older messages: Butler's stored transcript is the conversation.

mod chat;
mod error;
mod models;
mod request;
mod watch;
mod wire;

#[doc(hidden)] // for the fuzz targets (fuzz/)
pub use error::OpenAiError;
#[doc(hidden)]
pub use request::{parse as parse_request, ChatRequest};

use super::api::WebState;
use axum::routing::{any, get, post};
use axum::Router;

/// The `/v1` routes, on the web API's state.
pub(crate) fn routes(state: WebState) -> Router {
    Router::new()
        .route("/v1/models", get(models::list).fallback(error::wrong_method))
        .route("/v1/models/{id}", get(models::get).fallback(error::wrong_method))
        .route("/v1/chat/completions", post(chat::completions).fallback(error::wrong_method))
        .route("/v1/{*rest}", any(error::unknown_endpoint))
        .with_state(state)
}
