//! Fan-out of web chat message events to open pages (server-sent events), per conversation.
//! Bounded: a page too slow to keep up misses events and reloads the message list instead.
//!
//! A conversation has an entry only while someone listens: the last [`Subscription`] to go
//! removes it, so opening and closing streams on many conversations leaves nothing behind.
//! The hub must never hold its lock across an await or keep a buffer nobody reads.
//!
//! With several replicas, what is published here is also sent to the other replicas (a
//! bounded queue the app drains onto the bus), and what they publish arrives through
//! [`WebHub::relay`]: a page connected to any replica sees every reply.

use crate::metrics::METRICS;
use crate::store::Settled;
use serde_json::Value;
use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use tokio::sync::broadcast;
use tokio_stream::wrappers::errors::BroadcastStreamRecvError;
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::Stream;
use tokio_util::sync::CancellationToken;

const PER_CONVERSATION: usize = 256;

/// The kind of the event that says one inbound event of the conversation settled (its data:
/// `{"event": id}`): what the OpenAI API waits on instead of asking the store again and again.
pub(crate) const SETTLED: &str = "settled";

/// One event for a conversation's listeners.
#[derive(Clone, Debug)]
pub(crate) struct HubEvent {
    /// `created`, `updated` (a message) or [`SETTLED`].
    pub kind: &'static str,
    pub data: Value,
}

#[derive(Default)]
pub(crate) struct WebHub {
    senders: Mutex<HashMap<String, broadcast::Sender<HubEvent>>>,
    /// Events for the other replicas, when there are any.
    outgoing: Option<tokio::sync::mpsc::Sender<String>>,
}

impl WebHub {
    /// A hub whose events also go to the other replicas, through `outgoing`.
    pub(crate) fn relayed(outgoing: tokio::sync::mpsc::Sender<String>) -> Self {
        Self { senders: Mutex::default(), outgoing: Some(outgoing) }
    }

    fn senders(&self) -> MutexGuard<'_, HashMap<String, broadcast::Sender<HubEvent>>> {
        self.senders.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Listens to `conversation` until the returned stream is dropped.
    pub(crate) fn subscribe(self: &Arc<Self>, conversation: &str) -> Subscription {
        let rx = self
            .senders()
            .entry(conversation.to_string())
            .or_insert_with(|| {
                METRICS.web_streams.add(1);
                broadcast::channel(PER_CONVERSATION).0
            })
            .subscribe();
        Subscription { rx: Some(BroadcastStream::new(rx)), hub: self.clone(), conversation: conversation.to_string() }
    }

    pub(crate) fn publish(&self, conversation: &str, kind: &'static str, data: Value) {
        if let Some(out) = &self.outgoing {
            let event = serde_json::json!({"conversation": conversation, "kind": kind, "data": &data});
            // Full: pages on other replicas miss this one and reload on the next event.
            let _ = out.try_send(event.to_string());
        }
        self.publish_here(conversation, kind, data);
    }

    /// An event another replica published: to this replica's listeners only.
    pub(crate) fn relay(&self, payload: &str) {
        let Ok(event) = serde_json::from_str::<Value>(payload) else { return };
        let kind = match event["kind"].as_str() {
            Some("created") => "created",
            Some("updated") => "updated",
            Some(SETTLED) => SETTLED,
            _ => return,
        };
        if let Some(conversation) = event["conversation"].as_str() {
            self.publish_here(conversation, kind, event["data"].clone());
        }
    }

    fn publish_here(&self, conversation: &str, kind: &'static str, data: Value) {
        let senders = self.senders();
        if let Some(tx) = senders.get(conversation) {
            // An error means nobody listens: the last subscription removes the entry itself.
            let _ = tx.send(HubEvent { kind, data });
        }
    }

    /// Tells the listeners of each web conversation when one of its events settled further (as
    /// the store announces it: finished, or its reply delivered), until `stop`; the other
    /// replicas hear it through the relay. A listener that must not miss one also checks on its
    /// own now and then: a lagging feed drops announcements.
    pub(crate) async fn announce_settled(
        self: Arc<Self>,
        mut settled: broadcast::Receiver<Settled>,
        stop: CancellationToken,
    ) {
        let web = format!("{}:", crate::ids::WEB_CHANNEL);
        loop {
            let next = tokio::select! {
                _ = stop.cancelled() => return,
                next = settled.recv() => next,
            };
            match next {
                Ok(s) if s.conversation.starts_with(&web) => {
                    self.publish(&s.conversation, SETTLED, serde_json::json!({"event": s.event_id}))
                }
                Ok(_) => {}
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::debug!(
                        missed,
                        "web hub: settled announcements missed; waiting requests check on their own"
                    )
                }
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    }

    /// Conversations with at least one listener.
    #[cfg(test)]
    pub(crate) fn conversations(&self) -> usize {
        self.senders().len()
    }
}

/// One page's stream of a conversation's events; dropping it unsubscribes.
pub(crate) struct Subscription {
    rx: Option<BroadcastStream<HubEvent>>,
    hub: Arc<WebHub>,
    conversation: String,
}

impl Stream for Subscription {
    type Item = Result<HubEvent, BroadcastStreamRecvError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match self.rx.as_mut() {
            Some(rx) => Pin::new(rx).poll_next(cx),
            None => Poll::Ready(None),
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        // Under the lock, so a concurrent subscribe either sees the entry with its new receiver
        // (and it stays) or creates a fresh one after the removal.
        let mut senders = self.hub.senders();
        drop(self.rx.take());
        if senders.get(&self.conversation).is_some_and(|tx| tx.receiver_count() == 0) {
            senders.remove(&self.conversation);
            METRICS.web_streams.add(-1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use serde_json::json;

    #[test]
    fn the_last_listener_to_leave_removes_the_entry() {
        let hub = Arc::new(WebHub::default());
        // (listeners opened, listeners closed, entries left)
        let cases = [(1, 1, 0), (2, 1, 1), (2, 2, 0), (3, 0, 1)];
        for (open, close, left) in cases {
            let mut subs: Vec<_> = (0..open).map(|_| hub.subscribe("c1")).collect();
            subs.truncate(open - close);
            assert_eq!(hub.conversations(), left, "open={open} close={close}");
            drop(subs);
            assert_eq!(hub.conversations(), 0);
        }
    }

    #[test]
    fn many_conversations_opened_and_closed_leave_nothing() {
        let hub = Arc::new(WebHub::default());
        for i in 0..20_000 {
            let sub = hub.subscribe(&format!("c{i}"));
            hub.publish(&format!("c{i}"), "created", json!({"n": i}));
            drop(sub);
        }
        assert_eq!(hub.conversations(), 0);
        // Publishing to a conversation nobody listens to creates nothing either.
        hub.publish("nobody", "created", json!({}));
        assert_eq!(hub.conversations(), 0);
    }

    #[tokio::test]
    async fn settled_events_reach_the_conversation_here_and_on_the_other_replicas() {
        let (out, mut others) = tokio::sync::mpsc::channel(8);
        let hub = Arc::new(WebHub::relayed(out));
        let mut web = hub.subscribe("web:c1");
        let feed = crate::store::SettledFeed::default();
        let stop = CancellationToken::new();
        let task = tokio::spawn(hub.clone().announce_settled(feed.subscribe(), stop.clone()));
        // A platform's event is none of the web chat's business; a web one is announced.
        feed.announce("tg:1", "telegram:42");
        feed.announce("web:e1", "web:c1");
        let ev = web.next().await.expect("open").expect("not lagged");
        assert_eq!((ev.kind, ev.data["event"].as_str()), (SETTLED, Some("web:e1")));
        // The same announcement went to the other replicas, and theirs arrive here.
        let relayed = others.recv().await.expect("relayed");
        assert!(relayed.contains("\"settled\"") && relayed.contains("web:e1"), "{relayed}");
        let here = Arc::new(WebHub::default());
        let mut there = here.subscribe("web:c1");
        here.relay(&relayed);
        let ev = there.next().await.expect("open").expect("not lagged");
        assert_eq!((ev.kind, ev.data["event"].as_str()), (SETTLED, Some("web:e1")));
        stop.cancel();
        task.await.expect("stops");
    }

    #[tokio::test]
    async fn listeners_get_events_published_while_they_listen() {
        let hub = Arc::new(WebHub::default());
        let mut a = hub.subscribe("c1");
        let mut b = hub.subscribe("c1");
        hub.publish("c1", "created", json!({"n": 1}));
        hub.publish("c2", "created", json!({"n": 2}));
        for sub in [&mut a, &mut b] {
            let ev = sub.next().await.expect("open").expect("not lagged");
            assert_eq!((ev.kind, ev.data["n"].as_i64()), ("created", Some(1)));
        }
        drop(a);
        hub.publish("c1", "updated", json!({"n": 3}));
        let ev = b.next().await.expect("open").expect("not lagged");
        assert_eq!(ev.kind, "updated");
    }
}
