//! A fake Discord for tests, speaking the real wire protocol on loopback: the REST API under
//! `/api/v10` (gateway, gateway/bot, users/@me, channel messages create and edit, typing,
//! interaction callbacks, interaction follow-ups, 429 with `retry_after` on demand) and a gateway
//! websocket (Hello, Identify, Ready, heartbeat ACK, dispatches, a dropped connection, Resume with
//! replay, Resumed, Invalid Session). Butler's real serenity-based channel is pointed at it through
//! `[channels.discord] api_url`. Files: multipart message bodies are parsed and their files
//! served back from an attachment route on the same port (`files`).
//!
//! It records every call with its time, so tests can check order and spacing. It must never
//! reach the network beyond 127.0.0.1.

pub mod files;
mod gateway;
mod http;
pub mod payloads;

use serde_json::{json, Value};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

pub const TOKEN: &str = "fake-bot-token";
pub const BOT_ID: &str = "1000000000000000001";
pub const BOT_NAME: &str = "Butler";
pub const APP_ID: &str = "1000000000000000002";
pub const GUILD_ID: &str = "1000000000000000003";

/// One message as the fake holds it.
#[derive(Clone, Debug)]
pub struct Msg {
    pub id: String,
    pub channel_id: String,
    pub author_id: String,
    pub content: String,
    pub components: Value,
    pub nonce: Option<String>,
    /// 64 for an ephemeral follow-up.
    pub flags: u64,
    /// The interaction an ephemeral follow-up answers.
    pub interaction: Option<String>,
    pub reply_to: Option<String>,
    /// When it was created and each time it was edited.
    pub writes: Vec<Instant>,
    /// The full JSON, as Discord would send it.
    pub json: Value,
    /// The files uploaded with it (`files[n]` of a multipart body).
    pub files: Vec<files::StoredFile>,
}

impl Msg {
    /// The custom ids of its buttons.
    pub fn buttons(&self) -> Vec<String> {
        let rows = self.components.as_array().cloned().unwrap_or_default();
        rows.iter()
            .flat_map(|r| r["components"].as_array().cloned().unwrap_or_default())
            .filter_map(|b| b["custom_id"].as_str().map(str::to_string))
            .collect()
    }
}

/// One REST call.
#[derive(Clone, Debug)]
pub struct Call {
    pub at: Instant,
    pub method: String,
    pub path: String,
    pub body: Value,
    pub status: u16,
}

/// What the gateway saw.
#[derive(Clone, Debug, Default)]
pub struct GatewayLog {
    pub connections: usize,
    pub identifies: Vec<Value>,
    /// The `seq` of each Resume.
    pub resumes: Vec<u64>,
    /// The `d` of each heartbeat.
    pub heartbeats: Vec<Value>,
}

pub(crate) enum Ctl {
    Send(Value),
    /// Drop the TCP connection without a close frame.
    Drop,
}

#[derive(Default)]
pub(crate) struct State {
    pub messages: Vec<Msg>,
    pub calls: Vec<Call>,
    /// Interaction id -> (when, callback type).
    pub callbacks: Vec<(Instant, String, u64)>,
    /// Interaction tokens -> (interaction id, channel), for callbacks and follow-ups.
    pub tokens: HashMap<String, (String, String)>,
    pub acked: HashSet<String>,
    /// Pending 429s: (method, path fragment, matching requests still let through first,
    /// retry_after seconds).
    pub limits: VecDeque<(String, String, usize, f64)>,
    pub next_id: u64,
    pub gw: Gw,
    /// Files on the fake's CDN by attachment id, and the requests it served.
    pub files: HashMap<String, files::StoredFile>,
    pub cdn_requests: Vec<files::CdnRequest>,
}

#[derive(Default)]
pub(crate) struct Gw {
    pub session: Option<String>,
    pub seq: u64,
    /// Every dispatch of the session, for replay on Resume.
    pub log: Vec<(u64, Value)>,
    /// The live socket, once it has identified or resumed.
    pub live: Option<mpsc::Sender<Ctl>>,
    pub refuse_resume: bool,
    pub heartbeat_ms: u64,
    pub seen: GatewayLog,
    pub port: u16,
}

#[derive(Clone)]
pub struct FakeDiscord {
    pub(crate) state: Arc<Mutex<State>>,
    pub http_port: u16,
    pub gateway_port: u16,
}

impl FakeDiscord {
    pub async fn start() -> Self {
        let state = Arc::new(Mutex::new(State { next_id: 1, ..State::default() }));
        let gateway_port = gateway::serve(state.clone()).await;
        {
            let mut s = state.lock().unwrap();
            s.gw.port = gateway_port;
            s.gw.heartbeat_ms = 45_000;
        }
        let http_port = http::serve(state.clone()).await;
        Self { state, http_port, gateway_port }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The base URL that stands in for https://discord.com.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.http_port)
    }

    /// Puts a file a person attaches on the fake's CDN; returns its attachment object.
    pub fn add_attachment(&self, channel: &str, filename: &str, content_type: Option<&str>, bytes: Vec<u8>) -> Value {
        let base = self.url();
        files::store(&mut self.lock(), &base, channel, filename, content_type, bytes.into())
    }

    /// Requests to the fake's CDN, oldest first.
    pub fn cdn_requests(&self) -> Vec<files::CdnRequest> {
        self.lock().cdn_requests.clone()
    }

    /// A new snowflake (increasing, with the current time inside).
    pub fn snowflake(&self) -> String {
        next_snowflake(&mut self.lock())
    }

    /// Sends a dispatch (or buffers it for replay while no socket is live); returns its seq.
    pub fn dispatch(&self, t: &str, d: Value) -> u64 {
        dispatch(&mut self.lock(), t, d)
    }

    /// `msg` is posted by a person: stored, and dispatched as MESSAGE_CREATE. Returns its JSON.
    pub fn post(&self, msg: payloads::UserMessage) -> Value {
        let d = msg.d;
        let mut s = self.lock();
        s.messages.push(Msg {
            id: d["id"].as_str().unwrap().to_string(),
            channel_id: d["channel_id"].as_str().unwrap().to_string(),
            author_id: d["author"]["id"].as_str().unwrap().to_string(),
            content: d["content"].as_str().unwrap_or("").to_string(),
            components: json!([]),
            nonce: None,
            flags: 0,
            interaction: None,
            reply_to: d["message_reference"]["message_id"].as_str().map(str::to_string),
            writes: vec![Instant::now()],
            json: d.clone(),
            files: Vec::new(),
        });
        dispatch(&mut s, "MESSAGE_CREATE", d.clone());
        d
    }

    /// `who` clicks the button `custom_id` on `msg`: INTERACTION_CREATE. Returns the interaction
    /// id (its token is `token-<id>`).
    pub fn click(&self, who: &Value, msg: &Msg, custom_id: &str) -> String {
        let mut s = self.lock();
        let id = next_snowflake(&mut s);
        let token = format!("token-{id}");
        s.tokens.insert(token.clone(), (id.clone(), msg.channel_id.clone()));
        dispatch(&mut s, "INTERACTION_CREATE", payloads::click(&id, &token, who, &msg.json, custom_id));
        id
    }

    /// Registers an interaction Discord would send to the HTTP endpoint instead of the gateway.
    pub fn expect_interaction(&self, id: &str, token: &str, channel: &str) {
        self.lock().tokens.insert(token.to_string(), (id.to_string(), channel.to_string()));
    }

    /// Discord received the acknowledgement of interaction `id` (as the HTTP endpoint's answer).
    pub fn acknowledge(&self, id: &str) {
        self.lock().acked.insert(id.to_string());
    }

    /// The sequence number of the last dispatch.
    pub fn seq(&self) -> u64 {
        self.lock().gw.seq
    }

    /// Drops the live socket abruptly (no close frame), as a network failure would.
    pub fn drop_connection(&self) {
        if let Some(live) = self.lock().gw.live.take() {
            let _ = live.try_send(Ctl::Drop);
        }
    }

    /// Answers the next Resumes with Invalid Session (not resumable).
    pub fn refuse_resume(&self, refuse: bool) {
        self.lock().gw.refuse_resume = refuse;
    }

    /// The heartbeat interval announced in Hello (default 45 s).
    pub fn heartbeat_interval(&self, ms: u64) {
        self.lock().gw.heartbeat_ms = ms;
    }

    /// The next `method` request whose path contains `fragment` gets a 429.
    pub fn rate_limit(&self, method: &str, fragment: &str, retry_after: f64) {
        self.rate_limit_after(method, fragment, 0, retry_after);
    }

    /// Like `rate_limit`, after letting `skip` such requests through.
    pub fn rate_limit_after(&self, method: &str, fragment: &str, skip: usize, retry_after: f64) {
        self.lock().limits.push_back((method.to_string(), fragment.to_string(), skip, retry_after));
    }

    pub fn gateway_log(&self) -> GatewayLog {
        self.lock().gw.seen.clone()
    }

    pub fn calls(&self) -> Vec<Call> {
        self.lock().calls.clone()
    }

    /// Interaction callbacks: (when, interaction id, type).
    pub fn callbacks(&self) -> Vec<(Instant, String, u64)> {
        self.lock().callbacks.clone()
    }

    /// Messages in `channel` (ephemeral follow-ups included), oldest first.
    pub fn messages(&self, channel: &str) -> Vec<Msg> {
        self.lock().messages.iter().filter(|m| m.channel_id == channel).cloned().collect()
    }

    /// Butler's public messages in `channel`.
    pub fn bot_messages(&self, channel: &str) -> Vec<Msg> {
        self.messages(channel).into_iter().filter(|m| m.author_id == BOT_ID && m.flags & 64 == 0).collect()
    }

    pub fn message(&self, id: &str) -> Option<Msg> {
        self.lock().messages.iter().find(|m| m.id == id).cloned()
    }

    /// Waits until `pred` holds, up to `secs`.
    pub async fn wait_for<T>(&self, secs: u64, what: &str, pred: impl Fn(&Self) -> Option<T>) -> T {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            if let Some(v) = pred(self) {
                return v;
            }
            if Instant::now() > deadline {
                let calls: Vec<String> =
                    self.calls().iter().map(|c| format!("{} {} {}", c.method, c.path, c.status)).collect();
                panic!("{what} never happened; calls: {calls:#?}; gateway: {:?}", self.gateway_log());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits until Butler shows `n` public messages in `channel` whose text is final (no
    /// streaming edit for a moment) and returns them.
    pub async fn wait_messages(&self, channel: &str, n: usize) -> Vec<Msg> {
        self.wait_for(30, &format!("{n} messages in {channel}"), |f| {
            let msgs = f.bot_messages(channel);
            (msgs.len() >= n).then_some(msgs)
        })
        .await
    }

    /// Waits until the gateway has a live, identified (or resumed) socket.
    pub async fn wait_connected(&self) {
        self.wait_for(30, "a live gateway session", |f| f.lock().gw.live.as_ref().map(|_| ())).await;
    }

    /// Waits a little and asserts `channel` still shows exactly `n` messages from Butler.
    pub async fn assert_quiet(&self, channel: &str, n: usize) {
        tokio::time::sleep(Duration::from_millis(600)).await;
        let msgs = self.bot_messages(channel);
        assert_eq!(msgs.len(), n, "{channel} should show {n} messages from Butler: {msgs:#?}");
    }
}

pub(crate) fn next_snowflake(s: &mut State) -> String {
    let ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
    s.next_id += 1;
    (((ms - 1_420_070_400_000) << 22) | (s.next_id & 0x3f_ffff)).to_string()
}

pub(crate) fn dispatch(s: &mut State, t: &str, d: Value) -> u64 {
    s.gw.seq += 1;
    let seq = s.gw.seq;
    let payload = json!({"op": 0, "t": t, "s": seq, "d": d});
    s.gw.log.push((seq, payload.clone()));
    if let Some(live) = &s.gw.live {
        let _ = live.try_send(Ctl::Send(payload));
    }
    seq
}
