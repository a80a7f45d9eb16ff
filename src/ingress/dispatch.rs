//! The dispatcher: claims pending inbox events (oldest first), applies triage's decision and
//! records the outcome. A session that cannot take more work leaves its event pending, to be
//! offered again shortly; nothing is dropped for being busy.

use crate::outbox::Deliverer;
use crate::store::{InboxRow, InboxStatus, NewOutbox, Store, StoreError, TurnCommit};
use crate::triage::{Decision, Triage};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Delay before a busy session's event is offered again.
const BUSY_RETRY_MS: i64 = 300;
const BATCH: usize = 256;

pub struct Dispatcher {
    pub store: Arc<dyn Store>,
    pub triage: Triage,
    pub deliverer: Arc<Deliverer>,
    pub wake: Arc<Notify>,
    /// Channels whose events this process handles.
    pub channels: Vec<String>,
    /// Unique per process, recorded on claimed rows.
    pub worker: String,
}

impl Dispatcher {
    /// Claims and routes events until `cancel` fires.
    pub async fn run(self, cancel: CancellationToken) {
        loop {
            let claimed = match self.store.inbox_claim(&self.channels, &self.worker, BATCH).await {
                Ok(rows) => rows,
                Err(e) => {
                    tracing::warn!(error = %e, "inbox claim failed");
                    Vec::new()
                }
            };
            let n = claimed.len();
            for row in claimed {
                if let Err(e) = self.route(&row).await {
                    tracing::warn!(event = %row.event.id, error = %e, "routing failed; will retry");
                    let _ = self.store.inbox_retry(&row.event.id.0, 1_000, Some(&e.to_string())).await;
                }
            }
            if n < BATCH {
                tokio::select! {
                    _ = self.wake.notified() => {}
                    _ = tokio::time::sleep(Duration::from_millis(250)) => {}
                    _ = cancel.cancelled() => return,
                }
            } else if cancel.is_cancelled() {
                return;
            }
        }
    }

    async fn route(&self, row: &InboxRow) -> Result<(), StoreError> {
        let event = &row.event;
        let id = &event.id.0;
        match self.triage.decide(event).await? {
            Decision::Drop { reason } => {
                tracing::debug!(event = %id, reason, "dropped");
                self.store.inbox_finish(id, InboxStatus::Dropped, Some(reason)).await
            }
            Decision::Done => self.store.inbox_finish(id, InboxStatus::Done, None).await,
            Decision::Reply { text } => {
                let commit = TurnCommit {
                    inbox_id: id.clone(),
                    inbox_status: InboxStatus::Done,
                    session_id: None,
                    messages: vec![],
                    reply: Some(NewOutbox {
                        key: crate::agent::reply_key(id),
                        conversation: event.conversation.to_string(),
                        text,
                        buttons: vec![],
                        reply_to: event.message_id.clone(),
                    }),
                    usage: None,
                };
                if let Some(row) = self.store.finish_event(&commit).await? {
                    self.deliverer.hand_over(row);
                }
                Ok(())
            }
            Decision::Session { key, mut job } => {
                job.attempt = row.attempts;
                match self.triage.sessions.submit(&key, *job) {
                    Ok(()) => Ok(()),
                    Err(busy) => {
                        tracing::debug!(event = %id, %busy, "session busy; offering the event again shortly");
                        self.store.inbox_retry(id, BUSY_RETRY_MS, None).await
                    }
                }
            }
        }
    }
}
