//! The bus: small messages from any replica to all of them, over Redis pub/sub
//! (`<prefix>:bus:<topic>`), handed to local listeners through one bounded broadcast.
//! Pub/sub drops what is sent while a replica is disconnected, so nothing may depend on the
//! bus alone: every listener also polls the store, and after a reconnect it hears
//! [`Topic::Reconnected`] and catches up.

use super::error::unavailable;
use super::link::RedisLink;
use futures::StreamExt;
use std::time::Duration;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

const LOCAL_BUFFER: usize = 1024;

/// What a message is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Topic {
    /// New inbox work for a replica (payload: the replica's id).
    Wake,
    /// A web chat message was created or updated (payload: the hub event as JSON).
    Web,
    /// Who may use Butler changed (payload: the identity); admission caches drop it.
    Access,
    /// Stop a running turn (payload: `<session key>\t<turn id or empty>`), wherever it runs.
    Stop,
    /// This replica's bus connection came back: whatever was sent meanwhile is lost.
    Reconnected,
}

impl Topic {
    fn as_str(self) -> &'static str {
        match self {
            Topic::Wake => "wake",
            Topic::Web => "web",
            Topic::Access => "access",
            Topic::Stop => "stop",
            Topic::Reconnected => "reconnected",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        [Topic::Wake, Topic::Web, Topic::Access, Topic::Stop].into_iter().find(|t| t.as_str() == s)
    }
}

/// One message heard on the bus.
#[derive(Clone, Debug)]
pub struct BusMessage {
    pub topic: Topic,
    /// The replica that sent it.
    pub origin: String,
    pub payload: String,
}

pub(super) struct Bus {
    worker: String,
    local: broadcast::Sender<BusMessage>,
}

impl Bus {
    pub(super) fn new(worker: String) -> Self {
        Self { worker, local: broadcast::channel(LOCAL_BUFFER).0 }
    }

    pub(super) fn subscribe(&self) -> broadcast::Receiver<BusMessage> {
        self.local.subscribe()
    }

    /// Without Redis the message goes straight to the local listeners.
    pub(super) async fn publish(&self, link: Option<&RedisLink>, topic: Topic, payload: &str) {
        let Some(link) = link else {
            let _ = self.local.send(BusMessage { topic, origin: self.worker.clone(), payload: payload.to_string() });
            return;
        };
        let mut c = link.conn();
        let channel = link.key(&format!("bus:{}", topic.as_str()));
        let body = format!("{}\n{payload}", self.worker);
        if let Err(e) = redis::cmd("PUBLISH").arg(channel).arg(body).query_async::<i64>(&mut c).await {
            tracing::debug!(topic = topic.as_str(), error = %unavailable(e), "bus message not sent; listeners poll");
        }
    }

    /// Listens until `cancel` fires, reconnecting after any loss.
    pub(super) async fn receive_loop(&self, link: &RedisLink, cancel: CancellationToken) {
        let pattern = link.key("bus:*");
        let prefix = link.key("bus:");
        let mut first = true;
        loop {
            let connected = async {
                let mut pubsub = link.client().get_async_pubsub().await?;
                pubsub.psubscribe(&pattern).await?;
                Ok::<_, redis::RedisError>(pubsub)
            };
            let pubsub = tokio::select! {
                r = tokio::time::timeout(Duration::from_secs(2), connected) => r,
                _ = cancel.cancelled() => return,
            };
            let mut pubsub = match pubsub {
                Ok(Ok(p)) => p,
                Ok(Err(e)) => {
                    tracing::debug!(error = %unavailable(e), "bus not connected; retrying");
                    if sleep_or_cancel(&cancel).await {
                        return;
                    }
                    continue;
                }
                Err(_) => {
                    if sleep_or_cancel(&cancel).await {
                        return;
                    }
                    continue;
                }
            };
            if !first {
                tracing::info!("bus reconnected");
                let _ = self.local.send(BusMessage {
                    topic: Topic::Reconnected,
                    origin: self.worker.clone(),
                    payload: String::new(),
                });
            }
            first = false;
            let mut stream = pubsub.on_message();
            loop {
                let msg = tokio::select! {
                    m = stream.next() => m,
                    _ = cancel.cancelled() => return,
                };
                let Some(msg) = msg else { break };
                let channel = msg.get_channel_name().to_string();
                let Some(topic) = channel.strip_prefix(&prefix).and_then(Topic::parse) else { continue };
                let Ok(body) = msg.get_payload::<String>() else { continue };
                let (origin, payload) = body.split_once('\n').unwrap_or(("", body.as_str()));
                let _ = self.local.send(BusMessage { topic, origin: origin.to_string(), payload: payload.to_string() });
            }
            tracing::warn!("bus connection lost; reconnecting");
        }
    }
}

/// Waits a little before the next try; true if cancelled meanwhile.
async fn sleep_or_cancel(cancel: &CancellationToken) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(Duration::from_millis(500)) => false,
        _ = cancel.cancelled() => true,
    }
}
