//! `[[triggers]]` -> the webhook crate (channels/webhook): the signed sources at
//! `POST /hooks/{name}`, mounted on Butler's one HTTP server. With the `webhook` feature off
//! there are no routes and no `hook` channel.
//!
//! It must never hold webhook logic or print a secret: mapping config to sources is all it does.

use crate::config::TriggerConfig;
use butler_channel::limit::Gate;
use butler_channel::Ingress;
use std::sync::Arc;

/// Whether this build receives `[[triggers]]` (the `webhook` feature).
pub const TRIGGERS: bool = cfg!(feature = "webhook");

/// The routes of the `[[triggers]]` sources (none without the `webhook` feature).
pub fn trigger_routes(triggers: &[TriggerConfig], ingress: Arc<dyn Ingress>, gate: &Gate) -> axum::Router {
    #[cfg(feature = "webhook")]
    return butler_webhook::routes(sources(triggers), ingress, gate.clone());
    #[cfg(not(feature = "webhook"))]
    {
        let _ = (triggers, ingress, gate);
        axum::Router::new()
    }
}

/// The `[[triggers]]` sources as the webhook crate sees them.
#[cfg(feature = "webhook")]
fn sources(triggers: &[TriggerConfig]) -> Vec<butler_webhook::Source> {
    use crate::config::SignatureKind;
    triggers
        .iter()
        .map(|t| butler_webhook::Source {
            name: t.name.clone(),
            secret: t.secret.expose().to_string(),
            scheme: match t.signature {
                SignatureKind::Github => butler_webhook::Scheme::Github,
                SignatureKind::Butler => butler_webhook::Scheme::Butler,
            },
            rate_limit_per_minute: t.rate_limit_per_minute,
        })
        .collect()
}
