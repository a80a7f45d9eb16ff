//! Point 3: the optional HTTP interactions endpoint, POST /channels/discord/interactions.
//! Ed25519 over timestamp + raw body with the application's public key: the RFC 8032 vectors
//! pass; a wrong signature, a wrong key, a tampered body or missing headers get 401 and store
//! nothing; PING gets PONG; a click is stored and answered with a deferred update (type 6),
//! and a private answer to it arrives as an ephemeral follow-up once Discord has the ack.

use crate::support::app::TestApp;
use crate::support::fake_discord::payloads::{fixture, INTERACTIONS_JS, RFC8032};
use crate::support::fake_discord::{FakeDiscord, APP_ID};
use crate::{Rig, ALICE, GENERAL};
use butler_discord::{public_key, verify};
use ed25519_dalek::{Signer, SigningKey};
use serde_json::{json, Value};

fn key(seed_hex: &str) -> SigningKey {
    SigningKey::from_bytes(&hex::decode(seed_hex).unwrap().try_into().unwrap())
}

fn sign(key: &SigningKey, timestamp: &str, body: &[u8]) -> String {
    hex::encode(key.sign(&[timestamp.as_bytes(), body].concat()).to_bytes())
}

async fn post(app: &TestApp, headers: &[(&str, &str)], body: &[u8]) -> (u16, Value) {
    let mut req = app.http.post(app.url("/channels/discord/interactions")).body(body.to_vec());
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

fn now_secs() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64
}

/// `body` signed by `key` at `ts` (Unix seconds) and posted.
async fn signed_at(app: &TestApp, key: &SigningKey, ts: i64, body: &[u8]) -> (u16, Value) {
    let ts = ts.to_string();
    let sig = sign(key, &ts, body);
    post(app, &[("x-signature-ed25519", &sig), ("x-signature-timestamp", &ts)], body).await
}

async fn signed(app: &TestApp, key: &SigningKey, body: &[u8]) -> (u16, Value) {
    signed_at(app, key, now_secs(), body).await
}

#[test]
fn rfc8032_vectors_verify_and_nothing_else_does() {
    let vectors = fixture(RFC8032)["vectors"].as_array().unwrap().clone();
    assert_eq!(vectors.len(), 3);
    let other = public_key(vectors[1]["public_key_hex"].as_str().unwrap()).unwrap();
    for v in &vectors {
        let (id, pk, msg, sig) = (
            v["id"].as_str().unwrap(),
            public_key(v["public_key_hex"].as_str().unwrap()).unwrap(),
            hex::decode(v["message_hex"].as_str().unwrap()).unwrap(),
            v["signature_hex"].as_str().unwrap(),
        );
        assert!(verify(&pk, b"", &msg, sig), "{id}");
        // The same bytes split between timestamp and body verify the same way.
        let (ts, body) = msg.split_at(msg.len() / 2);
        assert!(verify(&pk, ts, body, sig), "{id} split");
        let mut flipped = hex::decode(sig).unwrap();
        flipped[63] ^= 1;
        let cases: [(&str, bool); 4] = [
            ("a flipped signature bit", verify(&pk, b"", &msg, &hex::encode(&flipped))),
            ("a tampered message", verify(&pk, b"", &[msg.as_slice(), b"x"].concat(), sig)),
            ("not hex", verify(&pk, b"", &msg, "zz")),
            ("a short signature", verify(&pk, b"", &msg, &sig[..64])),
        ];
        for (what, ok) in cases {
            assert!(!ok, "{id}: {what} verified");
        }
        if v["id"] != vectors[1]["id"] {
            assert!(!verify(&other, b"", &msg, sig), "{id}: another key verified");
        }
    }
    assert!(public_key("abcd").is_err());
}

#[tokio::test]
async fn the_endpoint_verifies_answers_ping_and_acknowledges_clicks() {
    let vectors = fixture(RFC8032)["vectors"].clone();
    let ours = key(vectors[0]["secret_key_seed_hex"].as_str().unwrap());
    let theirs = key(vectors[1]["secret_key_seed_hex"].as_str().unwrap());
    let discord = FakeDiscord::start().await;
    let rig = Rig::start_on(discord, vec![], |cfg| {
        let key = vectors[0]["public_key_hex"].as_str().unwrap();
        cfg.channels.platforms.get_mut("discord").unwrap().insert("public_key".into(), key.into());
    })
    .await;
    let app = &rig.app;
    let bodies = fixture(INTERACTIONS_JS)["bodies"].clone();
    let ping = bodies["pingRequestBody"]["raw_body_as_sent_by_test"].as_str().unwrap().as_bytes().to_vec();

    // PING -> PONG (JSON).
    let (status, pong) = signed(app, &ours, &ping).await;
    assert_eq!((status, pong["type"].clone()), (200, json!(1)));

    // The RFC 8032 TEST 1 signature (of the empty message) passes verification: an empty
    // timestamp and body are then refused only for the missing time, not as badly signed.
    let rfc_sig = vectors[0]["signature_hex"].as_str().unwrap();
    let (status, err) = post(app, &[("x-signature-ed25519", rfc_sig), ("x-signature-timestamp", "")], b"").await;
    assert_eq!((status, err["error"]["code"].clone()), (401, json!("malformed_timestamp")), "{err}");

    // Refused without storing anything.
    let before = app.inbox_count().await;
    let click = click_body("1100000000000000001", "token-http-1");
    let now = now_secs().to_string();
    let next = (now_secs() + 1).to_string();
    let ts = now.as_str();
    let good = sign(&ours, ts, &click);
    let mut flipped = hex::decode(&good).unwrap();
    flipped[0] ^= 0x80;
    let flipped = hex::encode(flipped);
    let by_other_key = sign(&theirs, ts, &click);
    let tampered = String::from_utf8(click.clone()).unwrap().replace("old:button", "new:button").into_bytes();
    type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, &'a [u8]);
    let cases: Vec<Case> = vec![
        ("a wrong signature", vec![("x-signature-ed25519", &flipped), ("x-signature-timestamp", ts)], &click),
        ("the wrong key", vec![("x-signature-ed25519", &by_other_key), ("x-signature-timestamp", ts)], &click),
        ("a tampered body", vec![("x-signature-ed25519", &good), ("x-signature-timestamp", ts)], &tampered),
        ("another timestamp", vec![("x-signature-ed25519", &good), ("x-signature-timestamp", &next)], &click),
        ("no signature", vec![("x-signature-timestamp", ts)], &click),
        ("no timestamp", vec![("x-signature-ed25519", &good)], &click),
        ("garbage", vec![("x-signature-ed25519", "nothex"), ("x-signature-timestamp", ts)], &click),
    ];
    for (what, headers, body) in cases {
        let (status, err) = post(app, &headers, body).await;
        assert_eq!(status, 401, "{what}: {err}");
        assert!(err["error"]["code"].is_string(), "{what}: JSON error {err}");
    }
    // The fixture's bare click names no channel or user: signed, but not an event.
    let bare = bodies["messageComponentRequestBody"]["raw_body_as_sent_by_test"].as_str().unwrap().as_bytes().to_vec();
    assert_eq!(signed(app, &ours, &bare).await.0, 400);
    assert_eq!(app.inbox_count().await, before, "nothing stored");

    // Commands and autocomplete (Butler registers none) get a private note / no choices.
    let command =
        bodies["applicationCommandRequestBody"]["raw_body_as_sent_by_test"].as_str().unwrap().as_bytes().to_vec();
    let (status, note) = signed(app, &ours, &command).await;
    assert_eq!((status, note["type"].clone(), note["data"]["flags"].clone()), (200, json!(4), json!(64)));
    let auto = bodies["autocompleteRequestBody"]["raw_body_as_sent_by_test"].as_str().unwrap().as_bytes().to_vec();
    assert_eq!(signed(app, &ours, &auto).await.1["type"], 8);

    // A real click: stored, then acknowledged with a deferred update in the response.
    rig.discord.expect_interaction("1100000000000000001", "token-http-1", GENERAL);
    let (status, ack) = signed(app, &ours, &click).await;
    assert_eq!((status, ack["type"].clone()), (200, json!(6)));
    let id = "discord:interaction:1100000000000000001";
    assert!(app.app.store.inbox_get(id).await.unwrap().is_some());
    // Discord redelivers: acknowledged again, stored once.
    let after = app.inbox_count().await;
    assert_eq!(signed(app, &ours, &click).await.0, 200);
    assert_eq!(app.inbox_count().await, after);
    assert_eq!(after, before + 1);

    // The click's button is stale: Butler says so privately, once Discord has the ack.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    rig.discord.acknowledge("1100000000000000001");
    let note = rig
        .discord
        .wait_for(20, "the ephemeral answer", |f| {
            f.messages(GENERAL).into_iter().find(|m| m.interaction.as_deref() == Some("1100000000000000001"))
        })
        .await;
    assert_eq!(note.flags, 64 | 4, "ephemeral, and no link previews (SUPPRESS_EMBEDS)");
    assert!(note.content.contains("no longer does anything"), "{}", note.content);
    rig.stop().await;
}

/// A click on a stale button, as Discord posts it: the fixture's component body completed
/// with the fields a real click carries.
fn click_body(id: &str, token: &str) -> Vec<u8> {
    let mut d = fixture(INTERACTIONS_JS)["bodies"]["messageComponentRequestBody"]["json"].clone();
    d["id"] = json!(id);
    d["token"] = json!(token);
    d["application_id"] = json!(APP_ID);
    d["channel_id"] = json!(GENERAL);
    d["guild_id"] = json!(crate::support::fake_discord::GUILD_ID);
    d["member"] =
        json!({"user": {"id": ALICE, "username": "alice", "global_name": "alice"}, "roles": [], "nick": null});
    d["message"] = json!({"id": "1100000000000000009", "channel_id": GENERAL});
    d["data"] = json!({"custom_id": "old:button", "component_type": 2});
    serde_json::to_vec(&d).unwrap()
}

#[tokio::test]
async fn signed_interactions_older_than_five_minutes_are_refused() {
    let vectors = fixture(RFC8032)["vectors"].clone();
    let ours = key(vectors[0]["secret_key_seed_hex"].as_str().unwrap());
    let discord = FakeDiscord::start().await;
    let rig = Rig::start_on(discord, vec![], |cfg| {
        let key = vectors[0]["public_key_hex"].as_str().unwrap();
        cfg.channels.platforms.get_mut("discord").unwrap().insert("public_key".into(), key.into());
    })
    .await;
    let app = &rig.app;
    let before = app.inbox_count().await;
    let now = now_secs();
    // Correctly signed, otherwise valid clicks, signed at these times: (case, seconds from now).
    let cases: [(&str, i64); 4] = [
        ("30 days old", -30 * 86_400),
        ("6 minutes old", -360),
        ("10 minutes in the future", 600),
        ("a 1970 timestamp", -now + 5),
    ];
    for (n, (what, offset)) in cases.into_iter().enumerate() {
        let click = click_body(&format!("12000000000000000{n:02}"), &format!("token-old-{n}"));
        let (status, err) = signed_at(app, &ours, now + offset, &click).await;
        assert_eq!((status, err["error"]["code"].clone()), (401, json!("stale_timestamp")), "{what}: {err}");
    }
    assert_eq!(app.inbox_count().await, before, "a stale interaction was stored");
    // Inside the window (a little clock skew either way) the same kind of click is taken.
    for (n, offset) in [-240_i64, 60].into_iter().enumerate() {
        let id = format!("13000000000000000{n:02}");
        rig.discord.expect_interaction(&id, &format!("token-fresh-{n}"), GENERAL);
        let (status, ack) = signed_at(app, &ours, now + offset, &click_body(&id, &format!("token-fresh-{n}"))).await;
        assert_eq!((status, ack["type"].clone()), (200, json!(6)), "{offset}s: {ack}");
    }
    assert_eq!(app.inbox_count().await, before + 2);
    rig.stop().await;
}
