//! Points 1 and 2 (intake): Meta's subscription handshake, `X-Hub-Signature-256` checked before
//! anything is parsed or stored, redeliveries answered once, status callbacks that start no
//! turn, and the documented payloads read as the events they are.

use crate::support::fake_llm::Reply;
use crate::support::fake_whatsapp::{fixture, sign, status, text, APP_SECRET, PHONE_NUMBER_ID, VERIFY_TOKEN};
use crate::{settle, Wa, OWNER};
use butler::channel::{ChannelError, EventBody, MediaKind};

#[tokio::test]
async fn the_handshake_echoes_the_challenge_only_for_the_verify_token() {
    let wa = Wa::start().await;
    let cases = [
        (
            format!("hub.mode=subscribe&hub.verify_token={VERIFY_TOKEN}&hub.challenge=1158201444"),
            200,
            Some("1158201444"),
        ),
        ("hub.mode=subscribe&hub.verify_token=wrong&hub.challenge=1158201444".to_string(), 403, None),
        (format!("hub.mode=unsubscribe&hub.verify_token={VERIFY_TOKEN}&hub.challenge=1"), 403, None),
        ("hub.challenge=1".to_string(), 403, None),
    ];
    for (query, want, body) in cases {
        let resp = wa.app.http.get(wa.app.url(&format!("/channels/whatsapp/webhook?{query}"))).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), want, "{query}");
        let got = resp.text().await.unwrap();
        if let Some(body) = body {
            assert_eq!(got, body);
        }
        assert!(!got.contains(VERIFY_TOKEN), "never echoes the token");
    }
    wa.stop().await;
}

#[tokio::test]
async fn unsigned_or_badly_signed_deliveries_are_refused_and_nothing_is_stored() {
    let wa = Wa::start().await;
    let body = serde_json::to_vec(&text(OWNER, "wamid.forged", "hello")).unwrap();
    let mut tampered = body.clone();
    tampered.extend_from_slice(b" ");
    let cases: Vec<(&str, &[u8], Option<String>)> = vec![
        ("no header", &body, None),
        ("another secret", &body, Some(sign("not-the-app-secret", &body))),
        ("a changed body", &tampered, Some(sign(APP_SECRET, &body))),
        ("not hex", &body, Some("sha256=zz".into())),
        ("sha1", &body, Some(format!("sha1={}", &sign(APP_SECRET, &body)[7..47]))),
    ];
    for (what, bytes, sig) in cases {
        let status = wa.fake.deliver_signed(&wa.app.base, bytes, sig).await;
        assert_eq!(status, 401, "{what}");
    }
    // Not even parsed: garbage with a bad signature is a 401, not a 400.
    assert_eq!(wa.fake.deliver_signed(&wa.app.base, b"{not json", Some(sign("x", b"{not json"))).await, 401);
    settle().await;
    assert_eq!(wa.app.inbox_count().await, 0, "nothing stored");
    assert!(wa.fake.sent().is_empty(), "nothing answered");
    assert!(wa.llm.requests().is_empty(), "no turn");
    wa.stop().await;
}

#[tokio::test]
async fn a_redelivered_message_is_answered_once() {
    let wa = Wa::start().await;
    wa.llm.on("ping", Reply::text("pong"));
    let payload = text(OWNER, "wamid.same-1", "ping");
    for _ in 0..3 {
        assert_eq!(wa.deliver(&payload).await, 200);
    }
    wa.fake.wait_sent(OWNER, 20, "the answer", |s| s.iter().any(|m| m.text() == "pong")).await;
    settle().await;
    assert_eq!(wa.fake.sent_to(OWNER).len(), 1, "one answer: {:?}", wa.fake.sent_to(OWNER));
    assert_eq!(wa.app.inbox_count().await, 1);
    wa.stop().await;
}

/// The replica that takes a delivery marks the message read (with the typing indicator) before
/// it answers Meta, whoever runs the turn: shown with a message that starts no turn at all.
#[tokio::test]
async fn a_new_message_is_marked_read_by_the_replica_that_took_it() {
    let wa = Wa::start().await;
    let payload = text("16505559999", "wamid.stranger-1", "hello?");
    assert_eq!(wa.deliver(&payload).await, 200);
    let reads = |id: &str| wa.fake.sent().iter().filter(|m| m.kind == "read" && m.body["message_id"] == id).count();
    assert_eq!(reads("wamid.stranger-1"), 1, "read before the 200");
    assert_eq!(wa.deliver(&payload).await, 200);
    assert_eq!(reads("wamid.stranger-1"), 1, "a redelivery is not read again");
    wa.stop().await;
}

#[tokio::test]
async fn status_callbacks_start_no_turn() {
    let wa = Wa::start().await;
    for name in ["webhook_status_delivered.json", "webhook_status_failed.json"] {
        assert_eq!(wa.deliver(&status(name)).await, 200, "{name}");
    }
    settle().await;
    assert_eq!(wa.app.inbox_count().await, 0);
    assert!(wa.llm.requests().is_empty() && wa.fake.sent().is_empty());
    let metrics = wa.app.http.get(wa.app.url("/metrics")).send().await.unwrap().text().await.unwrap();
    for status in ["delivered", "failed"] {
        let line = format!("butler_channel_delivery_statuses_total{{channel=\"whatsapp\",status=\"{status}\"}} ");
        let n: u64 = metrics.lines().find_map(|l| l.strip_prefix(&line)).map_or(0, |n| n.parse().unwrap());
        assert!(n >= 1, "{status} counted: {metrics}");
    }
    wa.stop().await;
}

/// The payloads of Meta's documentation, as the adapter reads them.
#[test]
fn documented_payloads_become_events() {
    type Want = (&'static str, Option<&'static str>, Option<MediaKind>);
    let cases: [(&str, Option<Want>); 5] = [
        ("webhook_text.json", Some(("Does it come in another color?", None, None))),
        ("webhook_button_reply.json", Some(("", Some("change-button"), None))),
        ("webhook_image.json", Some(("Here it is", None, Some(MediaKind::Image)))),
        ("webhook_status_delivered.json", None),
        ("webhook_status_failed.json", None),
    ];
    for (name, want) in cases {
        let d = butler_whatsapp::normalize::delivery(&fixture(name), PHONE_NUMBER_ID);
        let got = d.events.first().map(|e| {
            let action = match &e.body {
                EventBody::Action { action, .. } => Some(action.clone()),
                _ => None,
            };
            (e.text().unwrap_or_default().to_string(), action, e.attachments.first().map(|a| a.kind))
        });
        let want = want.map(|(t, a, k)| (t.to_string(), a.map(str::to_string), k));
        assert_eq!(got, want, "{name}");
        if let Some(e) = d.events.first() {
            assert_eq!(e.actor.identity.to_string(), "whatsapp:16505551234", "{name}");
            assert!(e.id.0.starts_with("whatsapp:msg:wamid."), "{name}: {}", e.id);
        } else {
            assert_eq!(d.statuses.len(), 1, "{name}");
        }
    }
    let failed = butler_whatsapp::normalize::delivery(&fixture("webhook_status_failed.json"), PHONE_NUMBER_ID);
    assert_eq!(failed.statuses[0].errors, vec![131047]);
    let graph = fixture("graph_responses.json");
    let cases =
        [("error_reengagement_131047", false), ("error_throughput_130429", true), ("error_pair_rate_131056", true)];
    for (key, retryable) in cases {
        let e = butler_whatsapp::graph_error("sending", 400, &graph[key]);
        assert_eq!(e.is_retryable(), retryable, "{key}: {e}");
    }
    assert!(matches!(
        butler_whatsapp::graph_error("sending", 400, &graph["error_reengagement_131047"]),
        ChannelError::OutsideWindow(_)
    ));
}
