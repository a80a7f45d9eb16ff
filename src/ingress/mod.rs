//! Ingress: the door every inbound event comes through. `accept` makes the event durable in the
//! inbox (a repeated id is recognised and dropped) and wakes the dispatcher; only then may the
//! adapter acknowledge the platform. The dispatcher claims stored events in order, asks triage
//! what to do and hands them on. A new message also releases the replies held for its
//! conversation while the platform's reply window was closed (`outbox::held`), on the channels
//! that have such a window only (`Caps::reply_window`): elsewhere it costs nothing.
//!
//! Ingress must never do slow work before the event is stored, and never lose an event it
//! returned `Accepted::New` for.

mod dispatch;

pub use crate::session::retry::{backoff_ms, dead_letter, poisoned, retry_or_fail, TryEnd};
pub use crate::store::failed_key;
pub use dispatch::{DispatchStores, Dispatcher};

use crate::metrics::METRICS;
use crate::store::{CursorStore, HeldStore, InboxStore};
use async_trait::async_trait;
use butler_channel::{Accepted, InboundEvent, Ingress, IngressError};
use std::sync::{Arc, OnceLock};
use tokio::sync::Notify;

pub struct InboxIngress {
    store: Arc<dyn InboxStore>,
    wake: Arc<Notify>,
    /// Where replies held for a closed reply window are released when the person writes.
    held: Option<Arc<dyn HeldStore>>,
    /// The channels with a reply window (`Caps::reply_window`), known once they are built.
    windowed: OnceLock<Vec<String>>,
    /// Where receivers keep their read positions (sync tokens).
    cursors: Option<Arc<dyn CursorStore>>,
}

impl InboxIngress {
    pub fn new(store: Arc<dyn InboxStore>, wake: Arc<Notify>) -> Self {
        Self { store, wake, held: None, windowed: OnceLock::new(), cursors: None }
    }

    /// This ingress releasing held replies (`outbox::held`) of a conversation that writes.
    pub fn with_held(mut self, held: Arc<dyn HeldStore>) -> Self {
        self.held = Some(held);
        self
    }

    /// This ingress keeping receivers' read positions in `cursors`.
    pub fn with_cursors(mut self, cursors: Arc<dyn CursorStore>) -> Self {
        self.cursors = Some(cursors);
        self
    }

    /// The channels whose held replies a new message releases (set once, after the channels are
    /// built; until then, and for every other channel, nothing is looked up).
    pub fn release_held_on(&self, channels: Vec<String>) {
        let _ = self.windowed.set(channels);
    }

    fn windowed(&self, channel: &str) -> bool {
        self.windowed.get().is_some_and(|w| w.iter().any(|c| c == channel))
    }
}

#[async_trait]
impl Ingress for InboxIngress {
    #[tracing::instrument(skip_all, fields(event = %event.id, channel = %event.conversation.channel))]
    async fn accept(&self, mut event: InboundEvent) -> Result<Accepted, IngressError> {
        // Text some backend cannot store (U+0000) is replaced before anything is stored, the
        // same way on every backend, so the event can never be refused later on.
        if event.make_storable() {
            tracing::info!("unstorable characters replaced");
        }
        if event.id.0.is_empty() {
            return Err(IngressError::Invalid("event id is empty".into()));
        }
        match self.store.inbox_insert(&event).await {
            Ok(true) => {
                METRICS.events_accepted.inc();
                self.wake.notify_one();
                if let Some(held) = self.held.as_ref().filter(|_| self.windowed(event.channel())) {
                    crate::outbox::held::release(held.as_ref(), &event).await;
                }
                Ok(Accepted::New)
            }
            Ok(false) => {
                METRICS.events_duplicate.inc();
                tracing::debug!("duplicate event dropped");
                Ok(Accepted::Duplicate)
            }
            Err(e) => Err(IngressError::Unavailable(e.to_string())),
        }
    }

    async fn cursor(&self, name: &str) -> Result<Option<String>, IngressError> {
        let Some(cursors) = &self.cursors else { return Ok(None) };
        cursors.cursor_get(name).await.map_err(|e| IngressError::Unavailable(e.to_string()))
    }

    async fn save_cursor(&self, name: &str, cursor: &str) -> Result<(), IngressError> {
        let Some(cursors) = &self.cursors else {
            return Err(IngressError::Unavailable("no store for read positions".into()));
        };
        cursors.cursor_set(name, cursor).await.map_err(|e| IngressError::Unavailable(e.to_string()))
    }
}
