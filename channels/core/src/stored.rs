//! Handing an event to the ingress until it is durable: a receiver that reads a stream (a sync,
//! an event stream) cannot ask the platform to send the event again later, so it offers it
//! again and again (0.2 s doubling to 10 s) while the ingress cannot store it.
//!
//! It must never drop an event the ingress could still store, nor wait on after `cancel`.

use crate::{Accepted, InboundEvent, Ingress, IngressError};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// `Some(outcome)` once the ingress took the event (an invalid event counts as taken: it will
/// never be stored); `None` when Butler stopped first.
pub async fn accept_until_stored(
    channel: &str,
    ingress: &dyn Ingress,
    event: &InboundEvent,
    cancel: &CancellationToken,
) -> Option<Accepted> {
    let mut wait = Duration::from_millis(200);
    loop {
        match ingress.accept(event.clone()).await {
            Ok(outcome) => {
                if outcome == Accepted::Duplicate {
                    tracing::debug!(channel, event = %event.id, "redelivered; already stored");
                }
                return Some(outcome);
            }
            Err(IngressError::Invalid(why)) => {
                tracing::warn!(channel, event = %event.id, why, "invalid event dropped");
                return Some(Accepted::Duplicate);
            }
            Err(IngressError::Unavailable(why)) => {
                tracing::warn!(channel, event = %event.id, why, "cannot store the event yet; retrying");
            }
        }
        tokio::select! {
            _ = cancel.cancelled() => {
                tracing::error!(channel, event = %event.id, "stopping before the event was stored");
                return None;
            }
            _ = tokio::time::sleep(wait) => {}
        }
        wait = (wait * 2).min(Duration::from_secs(10));
    }
}
