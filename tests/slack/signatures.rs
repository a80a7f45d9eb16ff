//! Point 1 (and 2, for the other endpoints): every request is verified over the raw body with a
//! 5-minute window; the documented vector passes; a tampered body, a stale timestamp and a
//! missing header each get 401 and store nothing; url_verification is answered.

use crate::support::fake_slack::{payloads, sign, Sender};
use crate::{start, Setup, ALICE, SECRET};
use serde_json::Value;
use std::time::Duration;

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/slack/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn the_documented_vector_passes() {
    let v = &fixture("signing_vectors.json")["vectors"][0];
    let (secret, body) = (v["signing_secret"].as_str().unwrap(), v["body"].as_str().unwrap());
    let ts: i64 = v["timestamp"].as_str().unwrap().parse().unwrap();
    let expected = v["expected_signature"].as_str().unwrap();
    assert_eq!(sign(secret, ts, body.as_bytes()), expected, "the test sender signs as Slack does");
    let mut headers = axum::http::HeaderMap::new();
    headers.insert("x-slack-signature", expected.parse().unwrap());
    headers.insert("x-slack-request-timestamp", ts.to_string().parse().unwrap());
    let now = v["verify_now_unix"].as_i64().unwrap();
    assert_eq!(butler_slack::verify::verify(secret.as_bytes(), &headers, body.as_bytes(), now), Ok(()));
    // Five minutes and a second later the same request is stale.
    assert!(butler_slack::verify::verify(secret.as_bytes(), &headers, body.as_bytes(), now + 301).is_err());
}

#[tokio::test]
async fn bad_signatures_get_401_and_store_nothing() {
    let rig = start(Setup::default()).await;
    let now = crate::support::fake_slack::now_secs();
    let id = payloads::event_id();
    let ts = payloads::ts();
    let body = payloads::callback(&id, payloads::mention(ALICE, "CSIG", "hello", &ts, None)).to_string();
    let tampered = body.replace("hello", "HELLO");
    let path = "/channels/slack/events";
    let json = "application/json";
    let signed_other = |t: i64| sign(SECRET, t, body.as_bytes());
    // (name, body, timestamp header, signature header, expected code)
    let sig_now = signed_other(now);
    let sig_stale = signed_other(now - 301);
    let wrong_secret = sign("another secret", now, body.as_bytes());
    let (now_s, stale_s) = (now.to_string(), (now - 301).to_string());
    type Case<'a> = (&'a str, &'a str, Option<&'a str>, Option<&'a str>, &'a str);
    let cases: Vec<Case> = vec![
        ("tampered body", &tampered, Some(&now_s), Some(&sig_now), "bad_signature"),
        ("stale timestamp", &body, Some(&stale_s), Some(&sig_stale), "stale_timestamp"),
        ("missing signature", &body, Some(&now_s), None, "missing_signature"),
        ("missing timestamp", &body, None, Some(&sig_now), "missing_timestamp"),
        ("no headers", &body, None, None, "missing_signature"),
        ("wrong secret", &body, Some(&now_s), Some(&wrong_secret), "bad_signature"),
    ];
    for (name, b, ts_header, sig_header, code) in cases {
        let mut extra = vec![];
        if let Some(t) = ts_header {
            extra.push(("x-slack-request-timestamp", t));
        }
        if let Some(s) = sig_header {
            extra.push(("x-slack-signature", s));
        }
        let a = rig.send.raw(path, b.as_bytes(), json, None, &extra).await;
        assert_eq!(a.status, 401, "{name}: {}", a.body);
        assert_eq!(a.json()["error"]["code"], code, "{name}");
        assert!(!a.body.contains(SECRET) && !a.body.contains(&sig_now), "{name}: nothing secret in the answer");
    }
    // The other endpoints check the same way.
    let click = Sender::form(&[("payload", &payloads::click(ALICE, "alice", "CSIG", &ts, None, "x").to_string())]);
    let form = "application/x-www-form-urlencoded";
    let a = rig.send.raw("/channels/slack/interactive", &click, form, Some(now - 400), &[]).await;
    assert_eq!((a.status, a.json()["error"]["code"].as_str()), (401, Some("stale_timestamp")));
    let cmd: Vec<(&str, &str)> = vec![
        ("command", "/butler"),
        ("text", "hi"),
        ("user_id", ALICE),
        ("channel_id", "CSIG"),
        ("trigger_id", "1.2.3"),
    ];
    let a = rig.send.raw("/channels/slack/commands", &Sender::form(&cmd), form, None, &[]).await;
    assert_eq!(a.status, 401);

    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!rig.stored(&id).await, "nothing was stored");
    assert_eq!(rig.llm.request_count(), 0);
    assert!(rig.slack.calls_of("chat.postMessage").is_empty());

    // The same request correctly signed is taken.
    let a = rig.send.raw(path, body.as_bytes(), json, Some(now), &[]).await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert!(rig.stored(&id).await);
    rig.slack.wait_text("CSIG", "hello").await;
    rig.app.stop().await;
}

#[tokio::test]
async fn url_verification_is_answered_when_signed() {
    let rig = start(Setup::default()).await;
    let check = &fixture("events_docs_examples.json")["url_verification"];
    let a = rig.send.event(&check["payload"], None).await;
    assert_eq!(a.status, 200);
    let want = check["payload"]["challenge"].as_str().unwrap();
    assert_eq!(a.json()["challenge"], want, "{}", a.body);
    let body = check["payload"].to_string();
    let unsigned = rig.send.raw("/channels/slack/events", body.as_bytes(), "application/json", None, &[]).await;
    assert_eq!(unsigned.status, 401);
    assert!(!unsigned.body.contains(want));
    rig.app.stop().await;
}

#[tokio::test]
async fn the_recorded_click_body_is_verified_and_stored() {
    let rig = start(Setup::default()).await;
    let click = fixture("block_actions_button_bolt_python.json");
    let raw = click["raw_body_as_built_by_bolt_python_test"].as_str().unwrap();
    let form = "application/x-www-form-urlencoded";
    let now = crate::support::fake_slack::now_secs();
    let tampered = raw.replace("click_me_123", "click_me_999");
    let extra =
        [("x-slack-request-timestamp", now.to_string()), ("x-slack-signature", sign(SECRET, now, raw.as_bytes()))];
    let extra: Vec<(&str, &str)> = extra.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let a = rig.send.raw("/channels/slack/interactive", tampered.as_bytes(), form, None, &extra).await;
    assert_eq!(a.status, 401);
    let store = rig.app.app.store.clone();
    let id = "slack:action:111.222.valid";
    assert!(store.inbox_get(id).await.unwrap().is_none(), "nothing stored");
    let a = rig.send.raw("/channels/slack/interactive", raw.as_bytes(), form, Some(now), &[]).await;
    assert_eq!(a.status, 200, "{}", a.body);
    let row = store.inbox_get(id).await.unwrap().expect("the click is stored");
    assert_eq!(row.event.actor.identity.to_string(), "slack:W111");
    assert_eq!(row.event.conversation.to_string(), "slack:C111");
    match row.event.body {
        butler::channel::EventBody::Action { action, message, interaction } => {
            assert_eq!(action, "click_me_123");
            assert_eq!(message.as_deref(), Some("111.222"));
            assert!(interaction.unwrap().starts_with("https://hooks.slack.com/actions/"));
        }
        other => panic!("{other:?}"),
    }
    rig.app.stop().await;
}
