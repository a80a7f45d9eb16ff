//! The receiving paths against an ingress that stores or fails: Slack is acknowledged (HTTP 200,
//! a Socket Mode ack) only after the event is stored, and told to retry (503, no ack) when it
//! could not be.

use crate::socket::tests_support::handle_envelope;
use crate::verify::sign;
use crate::{http, Shared, SlackSettings};
use axum::body::Body;
use axum::http::Request;
use butler_channel::{Accepted, InboundEvent, Ingress, IngressError};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};
use tower::ServiceExt;

const SECRET: &str = "s3cret";

/// Stores events in memory, or fails to.
#[derive(Default)]
struct Inbox {
    fail: bool,
    events: Mutex<Vec<InboundEvent>>,
}

#[async_trait::async_trait]
impl Ingress for Inbox {
    async fn accept(&self, event: InboundEvent) -> Result<Accepted, IngressError> {
        if self.fail {
            return Err(IngressError::Unavailable("the database is down".into()));
        }
        let mut events = self.events.lock().unwrap();
        let dup = events.iter().any(|e| e.id == event.id);
        events.push(event);
        Ok(if dup { Accepted::Duplicate } else { Accepted::New })
    }
}

fn shared() -> Arc<Shared> {
    Shared::for_tests(SlackSettings {
        bot_token: "xoxb-test".into(),
        signing_secret: Some(SECRET.into()),
        app_token: None,
        api_url: "http://127.0.0.1:9/api".into(),
        remembered_threads: 10,
        working_reaction: None,
        gate: butler_channel::limit::Gate::local(),
        link_previews: false,
    })
}

fn mention(event_id: &str) -> Value {
    json!({"type": "event_callback", "event_id": event_id, "event_time": 1,
           "event": {"type": "app_mention", "user": "U1", "text": "<@UBUTLER> hi", "ts": "1.000001", "channel": "C1"}})
}

async fn post(inbox: Arc<Inbox>, body: &Value) -> u16 {
    let body = body.to_string();
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() as i64;
    let req = Request::post(http::EVENTS_PATH)
        .header("x-slack-request-timestamp", now.to_string())
        .header("x-slack-signature", sign(SECRET.as_bytes(), now, body.as_bytes()))
        .body(Body::from(body))
        .unwrap();
    let app = http::routes(shared(), inbox, SECRET);
    app.oneshot(req).await.unwrap().status().as_u16()
}

#[tokio::test]
async fn http_answers_200_only_after_the_event_is_stored() {
    let ok = Arc::new(Inbox::default());
    assert_eq!(post(ok.clone(), &mention("Ev1")).await, 200);
    assert_eq!(post(ok.clone(), &mention("Ev1")).await, 200, "a repeat is acknowledged too");
    let ids: Vec<String> = ok.events.lock().unwrap().iter().map(|e| e.id.0.clone()).collect();
    assert_eq!(ids, ["slack:event:Ev1", "slack:event:Ev1"]);
    let down = Arc::new(Inbox { fail: true, ..Inbox::default() });
    assert_eq!(post(down.clone(), &mention("Ev2")).await, 503, "Slack must retry");
    // Nothing to store: acknowledged whatever the ingress would say.
    let check = json!({"type": "url_verification", "challenge": "c"});
    assert_eq!(post(down, &check).await, 200);
}

#[tokio::test]
async fn socket_mode_acknowledges_only_stored_envelopes() {
    let envelope = |id: &str| json!({"envelope_id": id, "type": "events_api", "payload": mention("Ev3")});
    let ok = Arc::new(Inbox::default());
    let ack = handle_envelope(&shared(), &*ok, envelope("e1")).await;
    assert_eq!(ack, Some(json!({"envelope_id": "e1"}).to_string()));
    assert_eq!(ok.events.lock().unwrap().len(), 1);
    let down = Inbox { fail: true, ..Inbox::default() };
    assert_eq!(handle_envelope(&shared(), &down, envelope("e2")).await, None, "no ack: Slack redelivers");
    // A malformed payload is acknowledged (it would never succeed) and stores nothing.
    let bad = json!({"envelope_id": "e3", "type": "events_api", "payload": {"type": "event_callback"}});
    assert_eq!(handle_envelope(&shared(), &*ok, bad).await, Some(json!({"envelope_id": "e3"}).to_string()));
    assert_eq!(ok.events.lock().unwrap().len(), 1);
}
