//! The one HTTP server: health, readiness, metrics, the web chat (page and API), and the
//! platform webhooks; its accept loop and connection limits (`serve`), its body limits and
//! error shape (`limits`). Errors are JSON with a stable code and never leak internals.

mod clients;
mod error;
mod hosts;
mod limits;
mod serve;

pub(crate) use error::{ApiError, ApiJson, ApiPath, ApiQuery};
pub(crate) use hosts::HostRule;
pub(crate) use limits::is_json;
pub use serve::{raise_fd_limit, FdLimit, FD_HEADROOM, HEALTH_RESERVE};
pub(crate) use serve::{serve, ServeLimits};

use crate::config::ServerConfig;
use crate::metrics::METRICS;
use crate::store::{ApprovalStore, DeadLetterStore, PingStore};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Shared by the health endpoints.
#[derive(Clone)]
pub(crate) struct Health {
    /// Readiness: does the database answer?
    store: Arc<dyn PingStore>,
    /// Metrics: events waiting and failed.
    inbox: Arc<dyn DeadLetterStore>,
    /// Metrics: approvals waiting.
    approvals: Arc<dyn ApprovalStore>,
    /// The other replicas: readiness reports whether Redis answers.
    cluster: Arc<crate::cluster::Cluster>,
    /// True between start-up finishing and shutdown beginning.
    ready: Arc<AtomicBool>,
}

impl Health {
    /// `ready` is true between start-up finishing and shutdown beginning.
    pub(crate) fn new(
        (store, inbox, approvals): (Arc<dyn PingStore>, Arc<dyn DeadLetterStore>, Arc<dyn ApprovalStore>),
        cluster: Arc<crate::cluster::Cluster>,
        ready: Arc<AtomicBool>,
    ) -> Self {
        Self { store, inbox, approvals, cluster, ready }
    }
}

/// The full router: health + metrics + whatever the channels mount (`extra`), behind the body
/// limits of `[server]`; `streamed`: routes that read their bodies as streams under their own
/// caps (file uploads), outside those limits. `hosts`: the no-token mode's rule of which
/// `Host` and `Origin` values are served, checked before anything else. Every error response is
/// JSON.
pub(crate) fn router(
    health: Health,
    extra: Router,
    streamed: Router,
    server: &ServerConfig,
    hosts: Option<HostRule>,
) -> Router {
    let body = limits::BodyLimits {
        max_bytes: server.max_body_bytes,
        timeout: std::time::Duration::from_secs(server.body_timeout_secs),
    };
    let routes = Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .with_state(health)
        .merge(extra)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(server.max_body_bytes))
        .layer(axum::middleware::from_fn_with_state(body, limits::body_limits))
        .merge(streamed.layer(DefaultBodyLimit::disable()));
    let routes = match hosts {
        Some(rule) => routes.layer(axum::middleware::from_fn_with_state(rule, hosts::guard)),
        None => routes,
    };
    routes.layer(axum::middleware::map_response(limits::json_errors))
}

async fn healthz() -> impl IntoResponse {
    Json(json!({"status": "ok"}))
}

async fn readyz(State(h): State<Health>) -> impl IntoResponse {
    if !h.ready.load(Ordering::Acquire) {
        return (StatusCode::SERVICE_UNAVAILABLE, Json(json!({"status": "starting or stopping"})));
    }
    // Without the database nothing can be accepted: not ready. Without Redis events are still
    // stored (and answered once it is back): ready, but degraded.
    let redis = match (h.cluster.shared(), h.cluster.ping().await) {
        (false, _) => "off",
        (true, Ok(())) => "ok",
        (true, Err(e)) => {
            tracing::warn!(error = %e, "readiness: redis ping failed");
            "unavailable"
        }
    };
    match h.store.ping().await {
        Ok(()) => {
            let status = if redis == "unavailable" { "degraded" } else { "ready" };
            (StatusCode::OK, Json(json!({"status": status, "database": "ok", "redis": redis})))
        }
        Err(e) => {
            tracing::warn!(error = %e, "readiness: database ping failed");
            let body = json!({"status": "database unavailable", "database": "unavailable", "redis": redis});
            (StatusCode::SERVICE_UNAVAILABLE, Json(body))
        }
    }
}

/// Most pending approvals counted for the `butler_approvals_waiting` gauge.
const APPROVALS_COUNTED: usize = 10_000;

async fn metrics(State(h): State<Health>) -> impl IntoResponse {
    let mut text = METRICS.render();
    // Read from the database at scrape time, so every replica reports the shared truth.
    let pending = h.inbox.inbox_count(crate::store::InboxStatus::Pending).await.ok();
    crate::metrics::render_gauge(&mut text, "butler_inbox_pending", "Inbound events waiting to be handled", pending);
    // Every pending approval is due by the end of time: the ones waiting for a person.
    let waiting = h.approvals.approvals_due(i64::MAX, APPROVALS_COUNTED).await.ok().map(|v| v.len() as i64);
    crate::metrics::render_gauge(
        &mut text,
        "butler_approvals_waiting",
        "Approvals and questions waiting for a person",
        waiting,
    );
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text)
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed", "this endpoint does not take that method")
}

async fn not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such endpoint")
}
