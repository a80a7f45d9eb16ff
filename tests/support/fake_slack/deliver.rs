//! Slack's side of the conversation with Butler's endpoints: signed Events API deliveries
//! (with `X-Slack-Retry-Num` for redeliveries), form-encoded `payload=` clicks and slash
//! commands, and the payload shapes Slack sends (`payloads`).

use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;
use std::time::{SystemTime, UNIX_EPOCH};

/// `v0=<hex HMAC-SHA256(secret, "v0:<ts>:<body>")>`, as Slack signs.
pub fn sign(secret: &str, ts: i64, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("v0:{ts}:").as_bytes());
    mac.update(body);
    format!("v0={}", hex::encode(mac.finalize().into_bytes()))
}

pub fn now_secs() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() as i64
}

/// Posts to one Butler as Slack would.
pub struct Sender {
    pub http: reqwest::Client,
    /// Butler's base URL (`http://127.0.0.1:PORT`).
    pub base: String,
    pub secret: String,
}

/// One response: status, headers, body text.
pub struct Answer {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: String,
}

impl Answer {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

impl Sender {
    pub fn new(base: &str, secret: &str) -> Self {
        Self { http: reqwest::Client::new(), base: base.to_string(), secret: secret.to_string() }
    }

    /// POSTs `body` to `path` signed at `ts` (None: unsigned), with extra headers.
    pub async fn raw(
        &self,
        path: &str,
        body: &[u8],
        content_type: &str,
        ts: Option<i64>,
        extra: &[(&str, &str)],
    ) -> Answer {
        let mut req =
            self.http.post(format!("{}{path}", self.base)).header("content-type", content_type).body(body.to_vec());
        if let Some(ts) = ts {
            req = req
                .header("x-slack-request-timestamp", ts.to_string())
                .header("x-slack-signature", sign(&self.secret, ts, body));
        }
        for (k, v) in extra {
            req = req.header(*k, *v);
        }
        let r = req.send().await.expect("Butler answers");
        Answer { status: r.status().as_u16(), headers: r.headers().clone(), body: r.text().await.unwrap_or_default() }
    }

    /// An Events API delivery (`retry`: the X-Slack-Retry-Num of a redelivery).
    pub async fn event(&self, payload: &Value, retry: Option<u32>) -> Answer {
        let n = retry.map(|n| n.to_string());
        let extra: Vec<(&str, &str)> = match &n {
            Some(n) => vec![("x-slack-retry-num", n.as_str()), ("x-slack-retry-reason", "http_timeout")],
            None => vec![],
        };
        self.raw("/channels/slack/events", payload.to_string().as_bytes(), "application/json", Some(now_secs()), &extra)
            .await
    }

    /// The form body Slack would send for these fields.
    pub fn form(fields: &[(&str, &str)]) -> Vec<u8> {
        let req = reqwest::Client::new().post("http://x/").form(fields).build().unwrap();
        req.body().unwrap().as_bytes().unwrap().to_vec()
    }

    /// A button click: `payload=<JSON>`, form-encoded.
    pub async fn click(&self, payload: &Value) -> Answer {
        let body = Self::form(&[("payload", &payload.to_string())]);
        self.raw("/channels/slack/interactive", &body, "application/x-www-form-urlencoded", Some(now_secs()), &[]).await
    }

    /// A slash command's form fields.
    pub async fn command(&self, fields: &[(&str, &str)]) -> Answer {
        let body = Self::form(fields);
        self.raw("/channels/slack/commands", &body, "application/x-www-form-urlencoded", Some(now_secs()), &[]).await
    }
}

/// The JSON Slack sends, built the way its docs and SDK fixtures show it.
pub mod payloads {
    use serde_json::{json, Value};
    use std::sync::atomic::{AtomicU64, Ordering};

    static NEXT: AtomicU64 = AtomicU64::new(1);

    /// A fresh message ts (`1710000000.000001`, ...).
    pub fn ts() -> String {
        format!("1710000000.{:06}", NEXT.fetch_add(1, Ordering::Relaxed))
    }

    /// A fresh event id.
    pub fn event_id() -> String {
        format!("Ev{:08}", NEXT.fetch_add(1, Ordering::Relaxed))
    }

    /// The `event_callback` wrapper.
    pub fn callback(event_id: &str, event: Value) -> Value {
        json!({"token": "verification_token", "team_id": "T0FAKE", "api_app_id": "A0FAKE", "event": event,
               "type": "event_callback", "event_id": event_id, "event_time": 1710000000,
               "authorizations": [{"team_id": "T0FAKE", "user_id": "UBUTLER", "is_bot": true}]})
    }

    /// `app_mention` in `channel` (in `thread` when given).
    pub fn mention(user: &str, channel: &str, text: &str, ts: &str, thread: Option<&str>) -> Value {
        let mut e = json!({"type": "app_mention", "user": user, "text": format!("<@UBUTLER> {text}"), "ts": ts,
                           "channel": channel, "event_ts": ts, "team": "T0FAKE"});
        if let Some(t) = thread {
            e["thread_ts"] = json!(t);
        }
        e
    }

    /// A `message` event; `channel_type` "im" for a DM, "channel" otherwise.
    pub fn message(user: &str, channel: &str, channel_type: &str, text: &str, ts: &str, thread: Option<&str>) -> Value {
        let mut e = json!({"type": "message", "user": user, "text": text, "ts": ts, "channel": channel,
                           "event_ts": ts, "channel_type": channel_type, "team": "T0FAKE"});
        if let Some(t) = thread {
            e["thread_ts"] = json!(t);
        }
        e
    }

    /// A `block_actions` click on the button with `value` of message `message_ts`.
    pub fn click(user: &str, name: &str, channel: &str, message_ts: &str, thread: Option<&str>, value: &str) -> Value {
        let trigger = format!("{}.{}.fake", NEXT.fetch_add(1, Ordering::Relaxed), message_ts);
        let mut container =
            json!({"type": "message", "message_ts": message_ts, "channel_id": channel, "is_ephemeral": false});
        let mut message = json!({"type": "message", "ts": message_ts, "user": "UBUTLER", "bot_id": "BBUTLER"});
        if let Some(t) = thread {
            container["thread_ts"] = json!(t);
            message["thread_ts"] = json!(t);
        }
        json!({"type": "block_actions", "user": {"id": user, "username": name, "name": name, "team_id": "T0FAKE"},
               "api_app_id": "A0FAKE", "token": "verification_token", "container": container, "trigger_id": trigger,
               "team": {"id": "T0FAKE", "domain": "fake"}, "channel": {"id": channel, "name": "some-channel"},
               "message": message, "response_url": "https://hooks.slack.com/actions/T0FAKE/1/fake",
               "actions": [{"action_id": "butler-0", "block_id": "butler-actions", "value": value, "type": "button",
                            "text": {"type": "plain_text", "text": "Button"}, "action_ts": "1710000000.500000"}]})
    }

    /// A slash command's fields.
    pub fn command(user: &str, user_name: &str, channel: &str, text: &str) -> Vec<(String, String)> {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        [
            ("token", "verification_token".to_string()),
            ("team_id", "T0FAKE".into()),
            ("team_domain", "fake".into()),
            ("channel_id", channel.into()),
            ("channel_name", "some-channel".into()),
            ("user_id", user.into()),
            ("user_name", user_name.into()),
            ("command", "/butler".into()),
            ("text", text.into()),
            ("api_app_id", "A0FAKE".into()),
            ("response_url", format!("https://hooks.slack.com/commands/T0FAKE/{n}/fake")),
            ("trigger_id", format!("{n}.1.fake")),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }
}
