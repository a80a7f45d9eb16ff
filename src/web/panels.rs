//! The page's panels: `GET /api/v1/usage` (the caller's own spend today, this week and this
//! month, by model, in their time zone, with the budgets: the same report as `/usage`) and
//! `GET /api/v1/status` (the owner's status page: model, prices, channels, MCP servers,
//! skills, schedules, today's usage, data folder and database).
//!
//! Read only. Usage is only ever the caller's own (a person who never wrote has none); the
//! status page answers owners only, anyone else gets the same 403 with a JSON body.

use super::api::{web_caller, WebState};
use crate::http::{ApiError, ApiQuery};
use crate::status::Status;
use crate::store::UserRole;
use crate::usage::Usage;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use std::sync::Arc;

/// What the panels read.
#[derive(Clone)]
pub(crate) struct Panels {
    pub usage: Usage,
    pub status: Arc<Status>,
    /// The zone of someone Butler has no row for yet (`[agent] timezone`).
    pub default_zone: String,
}

#[derive(Clone)]
struct PanelState {
    web: WebState,
    panels: Panels,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PanelQuery {
    user: Option<String>,
}

/// `GET /api/v1/usage` and `GET /api/v1/status`.
pub(crate) fn panel_routes(web: WebState, panels: Panels) -> Router {
    Router::new()
        .route("/api/v1/usage", get(usage))
        .route("/api/v1/status", get(status))
        .with_state(PanelState { web, panels })
}

/// The person behind the caller's web identity, if Butler knows them.
async fn person(
    s: &PanelState,
    headers: &HeaderMap,
    claimed: Option<&str>,
) -> Result<Option<crate::store::UserRow>, ApiError> {
    let caller = web_caller(&s.web, headers, claimed)?;
    let identity: butler_channel::Identity =
        caller.parse().map_err(|_| ApiError::new(StatusCode::BAD_REQUEST, "bad_user", "no such web user"))?;
    s.web.store.users.identity_user(&identity).await.map_err(ApiError::unavailable)
}

async fn usage(
    State(s): State<PanelState>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<PanelQuery>,
) -> Result<Response, ApiError> {
    let now = crate::clock::now_ms();
    let report = match person(&s, &headers, q.user.as_deref()).await? {
        Some(user) => s.panels.usage.report(&user, now).await,
        // Nobody spent anything as someone Butler does not know yet.
        None => s.panels.usage.report_for(Some(""), &s.panels.default_zone, now).await,
    }
    .map_err(ApiError::unavailable)?;
    let text = crate::usage::render(&report);
    Ok(Json(serde_json::json!({ "report": report, "text": text })).into_response())
}

async fn status(
    State(s): State<PanelState>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<PanelQuery>,
) -> Result<Response, ApiError> {
    let owner = person(&s, &headers, q.user.as_deref()).await?.filter(|u| u.role == UserRole::Owner);
    let Some(owner) = owner else {
        return Err(ApiError::new(StatusCode::FORBIDDEN, "owner_only", "the status page is for Butler's owner"));
    };
    let report = s.panels.status.report(&owner.timezone).await.map_err(ApiError::unavailable)?;
    Ok(Json(report).into_response())
}
