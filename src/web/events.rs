//! `GET /api/v1/events/{id}`: what one message posted to the web API produced, from the store's
//! one outcome query: whether its turn is over, its reply (once committed) and whether it was
//! delivered, a failure notice, and the approvals and questions its conversation waits on
//! (answered with `POST /api/v1/actions` or `/approve ID`).
//!
//! Read only, and only for the event's own sender: anyone else's event, or an unknown id, is the
//! same 404, so ids cannot be probed.

use super::api::{web_caller, WebState};
use crate::http::{ApiError, ApiPath, ApiQuery};
use crate::store::{ApprovalKind, EventOutcome};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EventQuery {
    user: Option<String>,
}

/// `GET /api/v1/events/{id}`.
pub(crate) fn event_routes(state: WebState) -> Router {
    Router::new().route("/api/v1/events/{id}", get(outcome)).with_state(state)
}

async fn outcome(
    State(s): State<WebState>,
    headers: HeaderMap,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<EventQuery>,
) -> Result<Response, ApiError> {
    let caller = web_caller(&s, &headers, q.user.as_deref())?;
    let found = s.store.outcomes.event_outcome(&id).await.map_err(ApiError::unavailable)?;
    let Some(outcome) = found.filter(|o| o.event.actor.identity.to_string() == caller) else {
        return Err(ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such event of yours"));
    };
    Ok(Json(outcome_json(&outcome)).into_response())
}

/// The outcome as the API shows it.
pub(super) fn outcome_json(o: &EventOutcome) -> Value {
    let waiting: Vec<Value> = o
        .waiting
        .iter()
        .map(|a| {
            json!({
                "id": a.id,
                "kind": match a.kind { ApprovalKind::Tool => "approval", ApprovalKind::Question => "question" },
                "tool": a.tool,
                "summary": a.summary,
                "options": a.options,
                "expires_ms": a.expires_ms,
            })
        })
        .collect();
    json!({
        "id": o.event.id.0,
        "conversation": o.event.conversation.to_string(),
        "status": o.status.as_str(),
        "finished": o.finished(),
        "delivered": o.finished() && o.delivered(),
        "reply": o.reply.as_ref().map(|r| r.text.as_str()).filter(|t| !t.trim().is_empty()),
        "failure": o.failure.as_ref().map(|f| f.text.as_str()),
        "waiting": waiting,
    })
}
