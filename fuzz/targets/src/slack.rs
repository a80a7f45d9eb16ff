//! Slack's HTTP endpoints after the v0 signature check: the Events API (the same JSON arrives
//! over Socket Mode) and interactivity (button clicks as `payload=` forms or Socket Mode JSON,
//! slash commands as forms or JSON).
//!
//! Each body must never call Slack or an ingress; it only verifies, reads, maps and checks.

use crate::harness::{check_event, headers_with, request, NOW_MS, NOW_SECS};
use axum::http::HeaderMap;
use butler_channel::signature;
use butler_slack::inbound::{events_api, Inbound, Me, Threads};
use butler_slack::interact::{command, form_payload, interaction, Command};
use butler_slack::verify::{verify, SIGNATURE, TIMESTAMP};

const SIGNING_SECRET: &[u8] = b"8f742231b10e8888abcd99yyyzzz85a5";

/// The request's headers with a valid v0 signature added when the input has none (over its
/// own timestamp when it gives one), and whether the result must pass the check.
fn signed(data: &[u8]) -> (HeaderMap, &[u8], bool) {
    let req = request(data);
    let given = |name: &str| req.headers.as_ref().is_some_and(|h| h.contains_key(name));
    let must_pass = !given(SIGNATURE) && !given(TIMESTAMP);
    let headers = headers_with(&req, |h| {
        let raw_ts = match h.get(TIMESTAMP) {
            Some(v) => v.to_str().map(str::trim).unwrap_or_default().to_string(),
            None => NOW_SECS.to_string(),
        };
        let sig = signature::sign_hex(SIGNING_SECRET, &[b"v0:", raw_ts.as_bytes(), b":", req.body]);
        vec![(TIMESTAMP, raw_ts), (SIGNATURE, format!("v0={sig}"))]
    });
    (headers, req.body, must_pass)
}

/// Verifies as the endpoints do; `None` when the request is refused.
fn verified(data: &[u8]) -> Option<&[u8]> {
    let (headers, body, must_pass) = signed(data);
    let result = verify(SIGNING_SECRET, &headers, body, NOW_SECS);
    if must_pass {
        assert_eq!(result, Ok(()), "a request signed with the signing secret must pass");
    }
    result.ok()?;
    assert!(verify(b"another secret", &headers, body, NOW_SECS).is_err(), "another secret must not pass");
    Some(body)
}

/// `POST /channels/slack/events` (and a Socket Mode `events_api` payload).
pub fn slack_event(data: &[u8]) {
    let Some(body) = verified(data) else { return };
    let me = Me { user_id: "U0BUTLER1".into(), bot_id: Some("B0BUTLER1".into()) };
    // Twice with the same memory of threads: a mention makes its thread Butler's.
    let threads = Threads::new(8);
    for _ in 0..2 {
        if let Ok(Inbound::Event(ev)) = events_api(body, &me, &threads) {
            check_event(&ev, "slack");
            assert!(ev.id.0.starts_with("slack:event:"), "{}", ev.id.0);
            assert_ne!(ev.actor.identity.user_id, me.user_id, "Butler's own message became an event");
        }
    }
}

/// `POST /channels/slack/interactive` and `POST /channels/slack/commands` (both forms, behind
/// the same check), and the JSON both arrive as over Socket Mode.
pub fn slack_interaction(data: &[u8]) {
    let Some(body) = verified(data) else { return };
    let clicks = form_payload(body).map(String::into_bytes).into_iter().chain(std::iter::once(body.to_vec()));
    for payload in clicks {
        if let Ok(Some(ev)) = interaction(&payload, NOW_MS) {
            check_event(&ev, "slack");
            assert!(ev.id.0.starts_with("slack:action:"), "{}", ev.id.0);
        }
    }
    let form = serde_urlencoded::from_bytes::<Command>(body).ok();
    let json = serde_json::from_slice::<Command>(body).ok();
    for c in form.into_iter().chain(json) {
        if let Ok(ev) = command(&c, NOW_MS) {
            check_event(&ev, "slack");
            assert!(ev.id.0.starts_with("slack:command:"), "{}", ev.id.0);
        }
    }
}
