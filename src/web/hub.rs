//! Fan-out of web chat message events to open pages (server-sent events), per conversation.
//! Bounded: a page too slow to keep up misses events and reloads the message list instead.

use serde_json::Value;
use std::collections::HashMap;
use std::sync::Mutex;
use tokio::sync::broadcast;

const PER_CONVERSATION: usize = 256;

/// One event for a conversation's listeners.
#[derive(Clone, Debug)]
pub struct HubEvent {
    /// `created` or `updated`.
    pub kind: &'static str,
    pub data: Value,
}

#[derive(Default)]
pub struct WebHub {
    senders: Mutex<HashMap<String, broadcast::Sender<HubEvent>>>,
}

impl WebHub {
    pub fn subscribe(&self, conversation: &str) -> broadcast::Receiver<HubEvent> {
        let mut senders = self.senders.lock().unwrap_or_else(|p| p.into_inner());
        senders.entry(conversation.to_string()).or_insert_with(|| broadcast::channel(PER_CONVERSATION).0).subscribe()
    }

    pub fn publish(&self, conversation: &str, kind: &'static str, data: Value) {
        let mut senders = self.senders.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(tx) = senders.get(conversation) {
            if tx.send(HubEvent { kind, data }).is_err() {
                // Nobody listens any more.
                senders.remove(conversation);
            }
        }
    }
}
