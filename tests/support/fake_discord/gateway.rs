//! The fake gateway websocket: Hello with the configured heartbeat interval, Identify (token
//! checked, close 4004 otherwise) answered with Ready and GUILD_CREATE, heartbeats acknowledged,
//! Resume answered by replaying every dispatch after the client's seq and then Resumed (or by
//! Invalid Session when told to refuse), and dispatches pushed by the test. It must never send a
//! dispatch before the socket has identified or resumed.

use super::payloads::{bot_user, ready};
use super::{dispatch, Ctl, State, GUILD_ID, TOKEN};
use futures::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;

pub(super) async fn serve(state: Arc<Mutex<State>>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            tokio::spawn(connection(state.clone(), tcp));
        }
    });
    port
}

fn text(v: &Value) -> Message {
    Message::Text(v.to_string())
}

async fn connection(state: Arc<Mutex<State>>, tcp: TcpStream) {
    let Ok(mut ws) = tokio_tungstenite::accept_async(tcp).await else { return };
    let (tx, mut rx) = mpsc::channel::<Ctl>(1024);
    let interval = {
        let mut s = state.lock().unwrap();
        s.gw.seen.connections += 1;
        s.gw.heartbeat_ms
    };
    if ws.send(text(&json!({"op": 10, "d": {"heartbeat_interval": interval}}))).await.is_err() {
        return;
    }
    loop {
        let frame = tokio::select! {
            ctl = rx.recv() => {
                match ctl {
                    Some(Ctl::Send(v)) => if ws.send(text(&v)).await.is_err() { break },
                    // Dropping the stream closes TCP without a close frame.
                    Some(Ctl::Drop) | None => return,
                }
                continue;
            }
            frame = ws.next() => frame,
        };
        let payload: Value = match frame {
            Some(Ok(Message::Text(t))) => serde_json::from_str(&t).unwrap_or_default(),
            Some(Ok(Message::Close(_))) | Some(Err(_)) | None => break,
            Some(Ok(_)) => continue,
        };
        let d = payload["d"].clone();
        match payload["op"].as_u64() {
            Some(1) => {
                state.lock().unwrap().gw.seen.heartbeats.push(d);
                if ws.send(text(&json!({"op": 11}))).await.is_err() {
                    break;
                }
            }
            Some(2) => {
                if d["token"] != TOKEN {
                    let close = CloseFrame { code: CloseCode::from(4004), reason: "Authentication failed.".into() };
                    let _ = ws.send(Message::Close(Some(close))).await;
                    break;
                }
                let mut s = state.lock().unwrap();
                s.gw.seen.identifies.push(d);
                let session = format!("session-{}", s.gw.seen.identifies.len());
                s.gw.session = Some(session.clone());
                s.gw.seq = 0;
                s.gw.log.clear();
                s.gw.live = Some(tx.clone());
                let resume_url = format!("ws://127.0.0.1:{}", s.gw.port);
                dispatch(&mut s, "READY", ready(&session, &resume_url));
                dispatch(
                    &mut s,
                    "GUILD_CREATE",
                    json!({"id": GUILD_ID, "name": "Test guild", "threads": [], "members": [{"user": bot_user()}]}),
                );
            }
            Some(6) => {
                let seq = d["seq"].as_u64().unwrap_or(0);
                let resumed = {
                    let mut s = state.lock().unwrap();
                    s.gw.seen.resumes.push(seq);
                    let known = s.gw.session.as_deref() == d["session_id"].as_str() && d["token"] == TOKEN;
                    if s.gw.refuse_resume || !known {
                        s.gw.session = None;
                        false
                    } else {
                        s.gw.live = Some(tx.clone());
                        let missed: Vec<Value> =
                            s.gw.log.iter().filter(|(n, _)| *n > seq).map(|(_, p)| p.clone()).collect();
                        for p in missed {
                            let _ = tx.try_send(Ctl::Send(p));
                        }
                        dispatch(&mut s, "RESUMED", Value::Null);
                        true
                    }
                };
                if !resumed && ws.send(text(&json!({"op": 9, "d": false}))).await.is_err() {
                    break;
                }
            }
            _ => {}
        }
    }
    // The client went away: this socket is no longer live.
    let mut s = state.lock().unwrap();
    if s.gw.live.as_ref().is_some_and(|live| live.same_channel(&tx)) {
        s.gw.live = None;
    }
}
