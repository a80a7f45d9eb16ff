//! The fake Socket Mode server: accepts a websocket on any path, says `hello`, forwards
//! envelopes the test sends, and records every acknowledgement (`{"envelope_id", "payload"?}`)
//! by envelope id. Only the newest connection receives envelopes. [`redeliver`] is Slack's
//! delivery of what it must deliver: again while unacknowledged.

use super::Shared;
use futures::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

/// What the test asks the live connection to do.
pub enum Out {
    Frame(String),
    Close,
}

/// How long Slack waits for an acknowledgement before it delivers again (Slack's own is 3 s;
/// shorter here, so that a test sees retries within its faults).
const RETRY: Duration = Duration::from_secs(1);
/// Deliveries of one envelope at most: the first and Slack's three retries.
const ATTEMPTS: usize = 4;

/// An envelope Slack delivers until it is acknowledged.
pub struct Pending {
    pub id: String,
    kind: String,
    payload: Value,
    /// Deliveries sent, and when the last was.
    pub attempts: usize,
    last: Option<Instant>,
}

impl Pending {
    pub fn new(id: &str, kind: &str, payload: Value) -> Self {
        Self { id: id.into(), kind: kind.into(), payload, attempts: 0, last: None }
    }

    /// Some delivery of it is acknowledged.
    pub fn acked(&self, acks: &HashMap<String, Value>) -> bool {
        (0..self.attempts).any(|k| acks.contains_key(&format!("{}-{k}", self.id)))
    }

    /// The envelope of delivery number `self.attempts`.
    fn envelope(&self) -> String {
        let retry = self.attempts;
        json!({"envelope_id": format!("{}-{retry}", self.id), "type": self.kind, "payload": self.payload,
               "accepts_response_payload": self.kind == "slash_commands", "retry_attempt": retry,
               "retry_reason": if retry > 0 { "timeout" } else { "" }})
        .to_string()
    }
}

/// Sends every pending envelope that is due to the live connection, until aborted.
pub async fn redeliver(shared: Arc<Shared>) {
    loop {
        {
            let mut guard = shared.lock();
            let s = &mut *guard;
            if let Some(tx) = &s.socket {
                for p in s.pending.iter_mut() {
                    let due = p.last.is_none_or(|t| t.elapsed() >= RETRY);
                    if due
                        && p.attempts < ATTEMPTS
                        && !p.acked(&s.acks)
                        && tx.try_send(Out::Frame(p.envelope())).is_ok()
                    {
                        p.attempts += 1;
                        p.last = Some(Instant::now());
                    }
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Starts listening; the returned task accepts connections until aborted.
pub async fn start(shared: Arc<Shared>) -> tokio::task::JoinHandle<()> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind the fake Socket Mode server");
    *shared.ws_addr.lock().unwrap() = Some(listener.local_addr().unwrap());
    tokio::spawn(async move {
        let mut conns = tokio::task::JoinSet::new();
        while let Ok((stream, _)) = listener.accept().await {
            conns.spawn(serve(shared.clone(), stream));
        }
    })
}

async fn serve(shared: Arc<Shared>, stream: tokio::net::TcpStream) {
    let Ok(ws) = tokio_tungstenite::accept_async(stream).await else { return };
    let (mut sink, mut source) = ws.split();
    let (tx, mut rx) = mpsc::channel(1024);
    {
        let mut s = shared.lock();
        s.connections += 1;
        s.socket = Some(tx.clone());
    }
    shared.changed.notify_waiters();
    run(&shared, &mut sink, &mut source, &mut rx).await;
    let mut s = shared.lock();
    if s.socket.as_ref().is_some_and(|live| live.same_channel(&tx)) {
        s.socket = None;
    }
}

type Sink = futures::stream::SplitSink<tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>, Message>;
type Source = futures::stream::SplitStream<tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>>;

async fn run(shared: &Shared, sink: &mut Sink, source: &mut Source, rx: &mut mpsc::Receiver<Out>) {
    let hello = json!({"type": "hello", "num_connections": 1,
                       "debug_info": {"host": "fake-slack", "approximate_connection_time": 18060},
                       "connection_info": {"app_id": "A0FAKE"}});
    if sink.send(Message::Text(hello.to_string())).await.is_err() {
        return;
    }
    loop {
        tokio::select! {
            out = rx.recv() => match out {
                Some(Out::Frame(f)) => {
                    if sink.send(Message::Text(f)).await.is_err() {
                        return;
                    }
                }
                Some(Out::Close) | None => {
                    let _ = sink.send(Message::Close(None)).await;
                    return;
                }
            },
            frame = source.next() => match frame {
                Some(Ok(Message::Text(t))) => {
                    if let Ok(ack) = serde_json::from_str::<Value>(t.as_str()) {
                        if let Some(id) = ack["envelope_id"].as_str() {
                            shared.lock().acks.insert(id.to_string(), ack.clone());
                            shared.changed.notify_waiters();
                        }
                    }
                }
                Some(Ok(Message::Ping(p))) => {
                    let _ = sink.send(Message::Pong(p)).await;
                }
                Some(Ok(_)) => {}
                Some(Err(_)) | None => return,
            },
        }
    }
}
