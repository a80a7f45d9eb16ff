//! Discord: the HTTP interactions endpoint (Ed25519 over the timestamp and the raw body, then a
//! fresh timestamp, then the interaction) and the gateway's frames (the dispatches Butler reads,
//! with what it remembers between them).
//!
//! Each body must never call Discord or an ingress. The gateway body reads frames the way
//! `gateway.rs` does (its envelope and Ready are private there and small, so they are mirrored
//! here); the messages and clicks go through the crate's own `inbound::message` and `click`.

use crate::harness::{check_event, headers_with, request, NOW_SECS};
use butler_channel::signature;
use butler_discord::inbound::{click, learn_threads, message, Interaction, MESSAGE_COMPONENT, THREAD_TYPES};
use butler_discord::state::{Me, Memory};
use ed25519_dalek::{Signer, SigningKey};
use serde::Deserialize;
use serde_json::Value;
use serenity::model::channel::Message;

const SIGNATURE: &str = "x-signature-ed25519";
const TIMESTAMP: &str = "x-signature-timestamp";

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `POST /channels/discord/interactions`: a valid signature (over the input's own timestamp
/// when it gives one) is added when the input has none.
pub fn discord_interaction(data: &[u8]) {
    let key = SigningKey::from_bytes(&[7; 32]);
    let public = butler_discord::public_key(&hex(key.verifying_key().as_bytes())).expect("the key reads back");
    let req = request(data);
    let signed_here = req.headers.as_ref().is_none_or(|h| !h.contains_key(SIGNATURE));
    let headers = headers_with(&req, |h| {
        let ts = h.get(TIMESTAMP).map_or_else(|| NOW_SECS.to_string().into_bytes(), |v| v.as_bytes().to_vec());
        let sig = key.sign(&[ts.as_slice(), req.body].concat());
        let mut extra = vec![(SIGNATURE, hex(&sig.to_bytes()))];
        if !h.contains_key(TIMESTAMP) {
            extra.push((TIMESTAMP, NOW_SECS.to_string()));
        }
        extra
    });
    let (Some(sig), Some(ts)) = (headers.get(SIGNATURE), headers.get(TIMESTAMP)) else { return };
    let sig = String::from_utf8_lossy(sig.as_bytes());
    let ok = butler_discord::verify(&public, ts.as_bytes(), req.body, &sig);
    if signed_here {
        assert!(ok, "a request signed with the application's key must pass");
    }
    if !ok {
        return;
    }
    let other = SigningKey::from_bytes(&[8; 32]).verifying_key();
    assert!(!butler_discord::verify(&other, ts.as_bytes(), req.body, &sig), "another key must not pass");
    let ts = std::str::from_utf8(ts.as_bytes()).ok().map(str::trim);
    if signature::timestamp(ts).and_then(|ts| signature::fresh(ts, NOW_SECS)).is_err() {
        return;
    }
    let Ok(i) = serde_json::from_slice::<Interaction>(req.body) else { return };
    if i.kind == MESSAGE_COMPONENT {
        if let Ok(ev) = click(&i) {
            check_event(&ev, "discord");
            assert!(ev.id.0.starts_with("discord:interaction:"), "{}", ev.id.0);
        }
    }
}

#[derive(Deserialize)]
struct Envelope {
    op: u8,
    #[serde(default)]
    d: Value,
    t: Option<String>,
}

#[derive(Deserialize)]
struct Ready {
    user: ReadyUser,
}

#[derive(Deserialize)]
struct ReadyUser {
    id: String,
    username: String,
}

/// Gateway text frames, one per line, read in order with what Butler remembers between them
/// (who it is, from Ready; which channels are threads; where it has spoken).
pub fn discord_gateway(data: &[u8]) {
    let mut me = Me { user_id: 900_000_000_000_000_001, name: "Butler".into() };
    let mut memory = Memory::default();
    for line in data.split(|&b| b == b'\n') {
        let Ok(text) = std::str::from_utf8(line) else { continue };
        let Ok(env) = serde_json::from_str::<Envelope>(text) else { continue };
        if env.op != 0 {
            continue;
        }
        let d = env.d;
        match env.t.as_deref().unwrap_or_default() {
            "READY" => {
                if let Ok(ready) = serde_json::from_value::<Ready>(d) {
                    me = Me { user_id: ready.user.id.parse().unwrap_or(0), name: ready.user.username };
                }
            }
            "MESSAGE_CREATE" => {
                let thread = d["channel_type"].as_u64().is_some_and(|t| THREAD_TYPES.contains(&t));
                let Ok(msg) = serde_json::from_value::<Message>(d) else { continue };
                if thread {
                    memory.thread(msg.channel_id.get());
                }
                if msg.author.id.get() == me.user_id {
                    memory.spoke(msg.channel_id.get());
                    memory.spoke(msg.id.get());
                }
                if let Some(ev) = message(&msg, &me, &memory) {
                    check_event(&ev, "discord");
                    assert_eq!(ev.id.0, format!("discord:message:{}", msg.id));
                    assert_ne!(msg.author.id.get(), me.user_id, "Butler's own message became an event");
                }
            }
            "INTERACTION_CREATE" => {
                let Ok(i) = serde_json::from_value::<Interaction>(d) else { continue };
                if i.kind == MESSAGE_COMPONENT {
                    if let Ok(ev) = click(&i) {
                        check_event(&ev, "discord");
                    }
                }
            }
            other => learn_threads(&mut memory, other, &d),
        }
    }
}
