//! The fake Socket Mode server: accepts a websocket on any path, says `hello`, forwards
//! envelopes the test sends, and records every acknowledgement (`{"envelope_id", "payload"?}`)
//! by envelope id. Only the newest connection receives envelopes.

use super::Shared;
use futures::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

/// What the test asks the live connection to do.
pub enum Out {
    Frame(String),
    Close,
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
