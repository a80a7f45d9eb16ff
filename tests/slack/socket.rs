//! Point 2, Socket Mode: with an app token (and no signing secret) Butler opens the websocket
//! from apps.connections.open, acknowledges each envelope after its event is stored, answers
//! events, clicks and slash commands as over HTTP, drops redeliveries, and reconnects. And
//! faults on the wire (issue 36, point 3): with the websocket through a fault proxy, a held
//! connection (nothing arrives, nothing closes), a reset with new connections refused for a
//! while (a Slack restart) and latency on every chunk lose and double nothing, while Slack
//! delivers each envelope again until it is acknowledged.

use crate::support::fake_slack::payloads as p;
use crate::support::fault_proxy::{Fault, FaultProxy};
use crate::{start, Setup, ALICE};
use serde_json::json;
use std::time::Duration;

fn envelope(id: &str, kind: &str, payload: serde_json::Value, retry: u32) -> serde_json::Value {
    json!({"envelope_id": id, "type": kind, "payload": payload, "accepts_response_payload": kind == "slash_commands",
           "retry_attempt": retry, "retry_reason": if retry > 0 { "timeout" } else { "" }})
}

#[tokio::test]
async fn socket_mode_end_to_end() {
    let rig = start(Setup { socket: true, ..Setup::default() }).await;
    // No signing secret: the HTTP endpoints are not there at all.
    let ev = p::callback(&p::event_id(), p::mention(ALICE, "CSOCK", "x", &p::ts(), None));
    assert_eq!(rig.send.event(&ev, None).await.status, 404);

    // An event: acknowledged after it is stored, answered in its thread.
    let (id, thread) = (p::event_id(), p::ts());
    let event = p::callback(&id, p::mention(ALICE, "CSOCK", "over the socket", &thread, None));
    rig.slack.socket_send(envelope("env-1", "events_api", event.clone(), 0)).await;
    let ack = rig.slack.ack("env-1", 10).await.expect("acknowledged");
    assert_eq!(ack, json!({"envelope_id": "env-1"}));
    assert!(rig.stored(&id).await);
    let reply = rig.slack.wait_text("CSOCK", "over the socket").await;
    assert_eq!(reply.thread_ts.as_deref(), Some(thread.as_str()));
    // Slack's redelivery of the same event: acknowledged, not answered again.
    rig.slack.socket_send(envelope("env-2", "events_api", event, 1)).await;
    assert!(rig.slack.ack("env-2", 10).await.is_some());

    // A click on a button that does nothing any more: acknowledged, answered only to Alice.
    let click = p::click(ALICE, "alice", "CSOCK", &reply.ts, Some(&thread), "stop:finished-turn");
    rig.slack.socket_send(envelope("env-3", "interactive", click, 0)).await;
    assert!(rig.slack.ack("env-3", 10).await.is_some());
    rig.slack.wait(10, "an ephemeral answer", |f| !f.ephemerals().is_empty()).await;
    let e = &rig.slack.ephemerals()[0];
    assert_eq!((e.user.as_str(), e.thread_ts.as_deref()), (ALICE, Some(thread.as_str())));

    // A slash command: the acknowledgement carries the ephemeral reply; the answer is posted.
    let fields: serde_json::Map<String, serde_json::Value> =
        p::command(ALICE, "alice", "CSOCK", "slash over socket").into_iter().map(|(k, v)| (k, v.into())).collect();
    rig.slack.socket_send(envelope("env-4", "slash_commands", fields.into(), 0)).await;
    let ack = rig.slack.ack("env-4", 10).await.expect("acknowledged");
    assert_eq!(ack["payload"]["response_type"], "ephemeral", "{ack}");
    rig.slack.wait_text("CSOCK", "slash over socket").await;

    // Slack drops the connection: Butler opens a new one and goes on.
    assert_eq!(rig.slack.connections(), 1);
    rig.slack.socket_drop();
    rig.slack.wait(15, "a second connection", |f| f.connections() == 2).await;
    let event = p::callback(&p::event_id(), p::mention(ALICE, "CSOCK", "after reconnect", &p::ts(), None));
    rig.slack.socket_send(envelope("env-5", "events_api", event, 0)).await;
    assert!(rig.slack.ack("env-5", 10).await.is_some());
    rig.slack.wait_text("CSOCK", "after reconnect").await;

    rig.slack.assert_quiet(500).await;
    let texts: Vec<String> = rig.slack.messages("CSOCK").iter().map(|m| m.shown()).collect();
    assert_eq!(texts.len(), 3, "one answer each: {texts:?}");
    assert_eq!(rig.slack.calls_of("apps.connections.open").len(), 2);
    assert!(rig
        .slack
        .calls_of("apps.connections.open")
        .iter()
        .all(|c| c.token.as_deref() == Some(crate::support::fake_slack::APP_TOKEN)));
    rig.app.stop().await;
}

/// Alice mentions Butler three times in CSOCK (`{phase} 0..3`), each envelope delivered by Slack
/// until acknowledged; the texts.
fn deliver_three(rig: &crate::Rig, phase: &str) -> Vec<String> {
    (0..3)
        .map(|i| {
            let text = format!("{phase} {i}");
            let event = p::callback(&p::event_id(), p::mention(ALICE, "CSOCK", &text, &p::ts(), None));
            rig.slack.socket_deliver(&format!("{phase}-{i}"), "events_api", event);
            text
        })
        .collect()
}

/// How many of Butler's messages in CSOCK answer `text`.
fn answers(rig: &crate::Rig, text: &str) -> usize {
    rig.slack.messages("CSOCK").iter().filter(|m| m.shown().contains(text)).count()
}

#[tokio::test]
async fn held_reset_and_slow_socket_connections_lose_and_double_nothing() {
    let rig = start(Setup { socket: true, ..Setup::default() }).await;
    let proxy = FaultProxy::start(rig.slack.socket_addr()).await;
    rig.slack.hand_out_socket(proxy.addr);
    rig.slack.wait(10, "the first connection", |f| f.connections() == 1).await;
    // Slack asks Butler to reconnect; the new connection goes through the proxy.
    rig.slack.socket_drop();
    rig.slack.wait(15, "a connection through the proxy", |f| f.connections() == 2).await;
    assert_eq!(proxy.open(), 1, "the live connection is the proxy's");
    let mut said = Vec::new();

    // 1. Half-open: every byte held; Slack delivers again meanwhile. Nothing is answered until
    // it heals, then each message once.
    proxy.set(Fault::Hold);
    let held = deliver_three(&rig, "held");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(held.iter().all(|t| answers(&rig, t) == 0), "nothing gets through a held connection");
    let (_, deliveries) = rig.slack.socket_unacked();
    assert!(deliveries > held.len(), "Slack delivered again while unacknowledged: {deliveries}");
    proxy.heal();
    rig.slack.wait(30, "the held messages answered", |_| held.iter().all(|t| answers(&rig, t) > 0)).await;
    said.extend(held);

    // 2. A restart: the connection reset, new ones refused for a while. Slack keeps what it must
    // deliver until Butler is connected again.
    proxy.set(Fault::Refuse);
    proxy.reset_all();
    let reset = deliver_three(&rig, "reset");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(reset.iter().all(|t| answers(&rig, t) == 0), "nothing gets through a refusing Slack");
    proxy.heal();
    rig.slack
        .wait(30, "the messages sent during the restart answered", |_| reset.iter().all(|t| answers(&rig, t) > 0))
        .await;
    assert!(rig.slack.connections() >= 3, "Butler connected again");
    said.extend(reset);

    // 3. Latency on every chunk.
    proxy.set(Fault::Latency(Duration::from_millis(30)));
    let slow = deliver_three(&rig, "slow");
    rig.slack.wait(30, "the slow messages answered", |_| slow.iter().all(|t| answers(&rig, t) > 0)).await;
    proxy.heal();
    said.extend(slow);

    // A late double would show by now: each message answered once; every envelope acknowledged.
    rig.slack.assert_quiet(1500).await;
    for text in &said {
        assert_eq!(answers(&rig, text), 1, "{text} answered once: {:#?}", rig.slack.messages("CSOCK"));
    }
    assert_eq!(rig.slack.messages("CSOCK").len(), said.len(), "nothing else said");
    let (unacked, _) = rig.slack.socket_unacked();
    assert!(unacked.is_empty(), "unacknowledged: {unacked:?}");
    rig.app.stop().await;
}
