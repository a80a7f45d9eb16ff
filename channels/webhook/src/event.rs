//! Turning a verified request into an [`InboundEvent`]: the stable id (a SHA-256 of the signed
//! bytes, never the unsigned delivery id header), the selected headers, and a one-line summary for logs and transcripts.
//!
//! Only headers on the [`KEPT_HEADERS`] list are copied into the event: signatures, cookies and
//! authorization headers must never be stored.

use crate::verify::{Scheme, BUTLER_TIMESTAMP};
use crate::CHANNEL;
use axum::http::HeaderMap;
use butler_channel::{Actor, ConversationKind, ConversationRef, EventBody, EventId, Identity, InboundEvent};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// Headers copied (lowercase) into `payload.headers`, where rules can match them.
pub const KEPT_HEADERS: &[&str] = &[
    "x-github-event",
    "x-github-delivery",
    "x-github-hook-id",
    "x-github-hook-installation-target-type",
    "x-github-hook-installation-target-id",
    "x-butler-event",
    "x-butler-delivery",
    "content-type",
    "user-agent",
];

/// Delivery id headers, in the order they are looked at.
pub const DELIVERY_HEADERS: &[&str] = &["x-github-delivery", "x-butler-delivery"];

const MAX_HEADER_CHARS: usize = 256;
const MAX_DELIVERY_ID: usize = 128;
const MAX_SUMMARY_CHARS: usize = 200;

/// The request's delivery id: `Ok(None)` when there is none, `Err` when it is unusable (too
/// long, or characters other than letters, digits and `-_.:`).
pub fn delivery_id(headers: &HeaderMap) -> Result<Option<String>, &'static str> {
    let Some(value) = DELIVERY_HEADERS.iter().find_map(|h| headers.get(*h)) else {
        return Ok(None);
    };
    let id = value.to_str().map_err(|_| "the delivery id header is not ASCII")?.trim();
    let ok = !id.is_empty()
        && id.len() <= MAX_DELIVERY_ID
        && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'));
    if ok {
        Ok(Some(id.to_string()))
    } else {
        Err("the delivery id header must be 1 to 128 letters, digits or - _ . :")
    }
}

/// Hex SHA-256 of the raw body: the id of a delivery that has no delivery id header, so a
/// re-post of the same body is recognised as a repeat.
pub fn content_hash(body: &[u8]) -> String {
    hex::encode(Sha256::digest(body))
}

/// The part of the event id that names one signed request, from the signed bytes only (the
/// delivery id header is not signed, so it never counts):
/// - Butler's scheme: hex SHA-256 of `"<X-Butler-Timestamp>.<raw body>"`, one event per
///   (timestamp, body); a replay inside the 5-minute window is a duplicate, later it is stale.
/// - GitHub's scheme has no timestamp: hex SHA-256 of the raw body, so a body is one event for
///   as long as the inbox keeps it (GitHub's redeliveries repeat the body byte for byte).
///
/// Call it only after the signature was verified (the timestamp header is then present).
pub fn event_key(scheme: Scheme, headers: &HeaderMap, body: &[u8]) -> String {
    match scheme {
        Scheme::Github => content_hash(body),
        Scheme::Butler => {
            let ts = headers.get(BUTLER_TIMESTAMP).and_then(|v| v.to_str().ok()).map_or("", str::trim);
            let mut h = Sha256::new();
            h.update(ts.as_bytes());
            h.update(b".");
            h.update(body);
            hex::encode(h.finalize())
        }
    }
}

/// The kept headers as a JSON object of lowercase name -> text.
pub fn kept_headers(headers: &HeaderMap) -> Map<String, Value> {
    let mut out = Map::new();
    for name in KEPT_HEADERS {
        if let Some(v) = headers.get(*name) {
            let text: String = String::from_utf8_lossy(v.as_bytes()).chars().take(MAX_HEADER_CHARS).collect();
            out.insert((*name).to_string(), Value::String(text));
        }
    }
    out
}

/// A short one-line description: `github push to octo-org/hello-world (main)`,
/// `github issues opened on octo-org/hello-world`, `deploys release`.
pub fn summary(prefix: &str, headers: &Map<String, Value>, body: &Value) -> String {
    let text_at = |v: &Value, path: &[&str]| {
        path.iter().try_fold(v, |v, k| v.get(*k)).and_then(Value::as_str).map(str::to_string)
    };
    let event = ["x-github-event", "x-butler-event"]
        .iter()
        .find_map(|h| headers.get(*h).and_then(Value::as_str))
        .unwrap_or("event")
        .to_string();
    let mut s = format!("{prefix} {event}");
    if let Some(action) = text_at(body, &["action"]) {
        s.push(' ');
        s.push_str(&action);
    }
    if let Some(repo) = text_at(body, &["repository", "full_name"]) {
        s.push_str(if event == "push" { " to " } else { " on " });
        s.push_str(&repo);
    }
    if event == "push" {
        if let Some(branch) = text_at(body, &["ref"]) {
            s.push_str(&format!(" ({})", branch.strip_prefix("refs/heads/").unwrap_or(&branch)));
        }
    }
    let one_line: String = s.chars().map(|c| if c.is_control() { ' ' } else { c }).take(MAX_SUMMARY_CHARS).collect();
    one_line
}

/// The event handed to the ingress for a verified request of source `name`.
pub fn build(
    name: &str,
    prefix: &str,
    key: &str,
    headers: Map<String, Value>,
    body: Value,
    at_ms: i64,
) -> InboundEvent {
    let text = summary(prefix, &headers, &body);
    let mut payload = Map::new();
    payload.insert("headers".into(), Value::Object(headers));
    payload.insert("body".into(), body);
    InboundEvent {
        id: EventId(format!("{CHANNEL}:{name}:{key}")),
        actor: Actor::new(Identity::new(CHANNEL, name)),
        conversation: ConversationRef::new(CHANNEL, name),
        kind: ConversationKind::Direct,
        addressed: true,
        reply_to: None,
        message_id: None,
        body: EventBody::Trigger { source: name.to_string(), text, payload: Value::Object(payload) },
        at_ms,
        attachments: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use serde_json::json;

    fn map(pairs: &[(&str, &str)]) -> Map<String, Value> {
        pairs.iter().map(|(k, v)| (k.to_string(), json!(v))).collect()
    }

    #[test]
    fn summaries() {
        let gh_push = map(&[("x-github-event", "push")]);
        let push = json!({"ref": "refs/heads/main", "repository": {"full_name": "octo-org/hello-world"}});
        let issues = json!({"action": "opened", "repository": {"full_name": "octo-org/hello-world"}});
        let cases = [
            ("github", &gh_push, push, "github push to octo-org/hello-world (main)"),
            ("github", &map(&[("x-github-event", "issues")]), issues, "github issues opened on octo-org/hello-world"),
            ("deploys", &map(&[("x-butler-event", "release")]), json!({"v": 2}), "deploys release"),
            ("deploys", &map(&[]), json!(["not", "an", "object"]), "deploys event"),
            ("x", &map(&[]), json!({"action": "a\nb"}), "x event a b"),
        ];
        for (prefix, headers, body, want) in cases {
            assert_eq!(summary(prefix, headers, &body), want);
        }
        let long = json!({"action": "y".repeat(500)});
        assert_eq!(summary("x", &map(&[]), &long).chars().count(), MAX_SUMMARY_CHARS);
    }

    #[test]
    fn delivery_ids() {
        let with = |pairs: &[(&'static str, &str)]| {
            let mut h = HeaderMap::new();
            for (k, v) in pairs {
                h.insert(*k, HeaderValue::from_str(v).unwrap());
            }
            delivery_id(&h)
        };
        assert_eq!(with(&[]), Ok(None));
        let gh = "72d3162e-cc78-11e3-81ab-4c9367dc0958";
        assert_eq!(with(&[("x-github-delivery", gh)]), Ok(Some(gh.to_string())));
        assert_eq!(with(&[("x-butler-delivery", "run:42")]), Ok(Some("run:42".into())));
        assert_eq!(with(&[("x-github-delivery", "a"), ("x-butler-delivery", "b")]), Ok(Some("a".into())));
        assert!(with(&[("x-butler-delivery", "has space")]).is_err());
        assert!(with(&[("x-butler-delivery", &"x".repeat(129))]).is_err());
        assert_eq!(content_hash(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    #[test]
    fn only_kept_headers_are_stored() {
        let mut h = HeaderMap::new();
        h.insert("x-github-event", HeaderValue::from_static("push"));
        h.insert("x-hub-signature-256", HeaderValue::from_static("sha256=00"));
        h.insert("authorization", HeaderValue::from_static("Bearer t"));
        h.insert("cookie", HeaderValue::from_static("a=b"));
        h.insert("content-type", HeaderValue::from_static("application/json"));
        let kept = kept_headers(&h);
        assert_eq!(Value::Object(kept), json!({"x-github-event": "push", "content-type": "application/json"}));
        let ev = build("github", "github", "d1", map(&[]), json!({}), 5);
        assert_eq!(ev.id.0, "hook:github:d1");
        assert_eq!(ev.actor.identity.to_string(), "hook:github");
        assert_eq!(ev.conversation.to_string(), "hook:github");
        assert!(ev.addressed && ev.kind == ConversationKind::Direct);
    }
}
