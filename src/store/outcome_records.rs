//! What one event produced, read in one query ([`OutcomeStore`](crate::store::OutcomeStore)):
//! its status, its reply, its failure notice and the approvals and questions its session waits
//! on; and the in-process feed that says when an event reached its final status
//! ([`SettledFeed`]), which the web chat and `butler chat` wait on instead of polling.
//!
//! Plain data and a bounded broadcast: nothing here reads the database or blocks. The key
//! formats of an event's session, reply and failure notice are [`crate::ids`]'.

use super::{ApprovalRow, InboxStatus, OutboxRow, OutboxStatus};
use butler_channel::InboundEvent;
use tokio::sync::broadcast;

/// What one event produced so far.
#[derive(Clone, Debug)]
pub struct EventOutcome {
    pub event: InboundEvent,
    pub status: InboxStatus,
    /// The reply (its final text once the turn committed), when the event has one.
    pub reply: Option<OutboxRow>,
    /// The notice sent when the event failed for good.
    pub failure: Option<OutboxRow>,
    /// The approval requests and questions pending in the event's session, oldest first.
    pub waiting: Vec<ApprovalRow>,
}

impl EventOutcome {
    /// The event's turn is over (answered, dropped or failed); nothing more will run for it.
    pub fn finished(&self) -> bool {
        !matches!(self.status, InboxStatus::Pending | InboxStatus::Processing)
    }

    /// Its reply (if any) has reached the channel or failed to for good.
    pub fn delivered(&self) -> bool {
        self.reply.as_ref().is_none_or(|r| matches!(r.status, OutboxStatus::Sent | OutboxStatus::Failed))
    }
}

/// An event whose outcome settled further: it reached its final status (done, dropped or
/// failed), or its reply reached the channel (or failed to for good); in the conversation it
/// came from (`channel:id[/thread]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settled {
    pub event_id: String,
    pub conversation: String,
}

/// How many settled events a slow listener may fall behind before it misses some (it then
/// reads the outcome of what it waits for again).
const FEED_CAPACITY: usize = 1024;

/// The store's announcements of settled events, to listeners in this process. Sending never
/// waits: with nobody listening an announcement is simply dropped.
#[derive(Debug)]
pub struct SettledFeed {
    tx: broadcast::Sender<Settled>,
}

impl Default for SettledFeed {
    fn default() -> Self {
        Self { tx: broadcast::channel(FEED_CAPACITY).0 }
    }
}

impl SettledFeed {
    pub fn announce(&self, event_id: &str, conversation: &str) {
        let _ = self.tx.send(Settled { event_id: event_id.to_string(), conversation: conversation.to_string() });
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Settled> {
        self.tx.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn listeners_hear_settled_events_and_nobody_listening_is_fine() {
        let feed = SettledFeed::default();
        feed.announce("e0", "web:c");
        let mut rx = feed.subscribe();
        feed.announce("e1", "web:c");
        let got = rx.recv().await.expect("announced");
        assert_eq!(got, Settled { event_id: "e1".into(), conversation: "web:c".into() });
    }
}
