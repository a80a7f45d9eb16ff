//! A fake Slack for tests, speaking Slack's real wire formats to the real slack-morphism client
//! (pointed at [`FakeSlack::api_url`]) and to Butler's endpoints:
//! - the Web API at `/api/<method>` (auth.test, chat.postMessage, chat.update,
//!   chat.postEphemeral, reactions.add/remove, conversations.info/list, users.info,
//!   apps.connections.open) with Slack's response shapes, token checks and limits (50 blocks,
//!   3,000 characters per section, 40,000 per text), every call recorded with its time, and
//!   429 + `Retry-After` injected per method ([`FakeSlack::rate_limit_next`]);
//! - files (`files`): files.info, the file host with bearer-token checks and Slack's HTML login
//!   page for a token without `files:read`, and the external upload flow
//!   (files.getUploadURLExternal, the upload URL, files.completeUploadExternal);
//! - a Socket Mode websocket (`ws://` URL from apps.connections.open, or another address the
//!   test hands out, e.g. a fault proxy's): hello, envelopes sent by tests, acknowledgements
//!   recorded; envelopes given to [`FakeSlack::socket_deliver`] are Slack's own deliveries, sent
//!   again while unacknowledged, as Slack does;
//! - [`Sender`]: Slack's side of the Events API, interactivity and slash commands (signed
//!   POSTs to Butler), and builders of the payloads (`payloads`).
//!
//! It must never call out to the network or depend on Butler's types.

mod api;
mod deliver;
mod files;
mod socket;

#[allow(unused_imports)]
pub use deliver::{now_secs, payloads, sign, Sender};
#[allow(unused_imports)]
pub use files::{FakeFile, FileRequest, SharedFiles, Upload, LOGIN_PAGE};

use serde_json::Value;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, Notify};

pub const BOT_TOKEN: &str = "xoxb-fake-bot-token";
pub const APP_TOKEN: &str = "xapp-fake-app-token";
pub const BOT_USER: &str = "UBUTLER";
pub const BOT_ID: &str = "BBUTLER";
pub const TEAM: &str = "T0FAKE";

/// One Web API call as the fake saw it.
#[derive(Clone, Debug)]
pub struct Call {
    pub method: String,
    /// Query, JSON body and form fields together.
    pub params: Value,
    pub token: Option<String>,
    pub at: Instant,
    /// The HTTP status answered (429 for an injected rate limit).
    pub status: u16,
    /// Slack's `error` when `ok` was false.
    pub error: Option<String>,
}

/// A message in a channel as Slack holds it.
#[derive(Clone, Debug)]
pub struct Posted {
    pub channel: String,
    pub ts: String,
    pub thread_ts: Option<String>,
    /// The top-level `text` (the notification fallback when there are blocks).
    pub text: String,
    /// The mrkdwn of each section block.
    pub sections: Vec<String>,
    /// (label, value) of each button.
    pub buttons: Vec<(String, String)>,
    pub blocks: Value,
    /// When it was posted, then each update.
    pub writes: Vec<Instant>,
}

impl Posted {
    /// What a person sees: the sections, or the text without blocks.
    pub fn shown(&self) -> String {
        if self.sections.is_empty() {
            self.text.clone()
        } else {
            self.sections.join("\n")
        }
    }
}

/// An ephemeral message (only `user` sees it).
#[derive(Clone, Debug)]
pub struct Ephemeral {
    pub channel: String,
    pub user: String,
    pub thread_ts: Option<String>,
    pub text: String,
}

#[derive(Default)]
pub(crate) struct State {
    pub calls: Vec<Call>,
    pub messages: Vec<Posted>,
    pub ephemerals: Vec<Ephemeral>,
    /// (channel, ts, name) currently on.
    pub reactions: Vec<(String, String, String)>,
    /// id -> (name, display name).
    pub users: HashMap<String, (String, String)>,
    /// id -> name, in creation order.
    pub channels: BTreeMap<String, String>,
    /// method -> Retry-After seconds of the next calls to answer 429.
    pub limits: HashMap<String, VecDeque<u64>>,
    pub ts_counter: u64,
    /// Socket Mode: frames to the live connection, connections opened, acks by envelope id.
    pub socket: Option<mpsc::Sender<socket::Out>>,
    pub connections: usize,
    pub acks: HashMap<String, Value>,
    /// Envelopes Slack delivers until they are acknowledged (`socket_deliver`).
    pub pending: Vec<socket::Pending>,
    /// The Socket Mode address apps.connections.open hands out instead of the fake's own.
    pub handed_out: Option<SocketAddr>,
    /// `http://127.0.0.1:PORT`: where the fake's file host and upload URLs are.
    pub base: String,
    /// Files by id, requests to the file host, uploads by ticket, completed shares.
    pub files: HashMap<String, FakeFile>,
    pub file_requests: Vec<FileRequest>,
    pub uploads: HashMap<String, Upload>,
    pub shared_files: Vec<SharedFiles>,
    /// The bot token lacks `files:read`.
    pub no_files_read: bool,
}

pub(crate) struct Shared {
    pub state: Mutex<State>,
    pub changed: Notify,
    pub ws_addr: Mutex<Option<SocketAddr>>,
}

impl Shared {
    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A running fake Slack; its servers stop when it is dropped.
pub struct FakeSlack {
    addr: SocketAddr,
    shared: Arc<Shared>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for FakeSlack {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl FakeSlack {
    /// Binds the Web API and the Socket Mode server on free loopback ports.
    pub async fn start() -> Self {
        let shared =
            Arc::new(Shared { state: Mutex::new(State::default()), changed: Notify::new(), ws_addr: Mutex::new(None) });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind the fake Slack");
        let addr = listener.local_addr().unwrap();
        shared.lock().base = format!("http://{addr}");
        let app = api::router(shared.clone()).merge(files::routes(shared.clone()));
        let web = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        let ws = socket::start(shared.clone()).await;
        let retries = tokio::spawn(socket::redeliver(shared.clone()));
        let fake = Self { addr, shared, tasks: vec![web, ws, retries] };
        fake.add_channel("CGENERAL", "general");
        fake
    }

    /// The `api_url` for Butler: `http://127.0.0.1:PORT/api`.
    pub fn api_url(&self) -> String {
        format!("http://{}/api", self.addr)
    }

    /// `http://127.0.0.1:PORT`, the fake's file host.
    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Holds a file; returns its Slack file object (URLs on the fake), as events carry it.
    pub fn add_file(&self, id: &str, name: &str, mimetype: &str, bytes: Vec<u8>, extra: Value) -> Value {
        let f = FakeFile { id: id.into(), name: name.into(), mimetype: mimetype.into(), bytes: bytes.into(), extra };
        let object = files::file_object(&self.base(), &f);
        self.shared.lock().files.insert(id.into(), f);
        object
    }

    /// From now on the bot token lacks (or has again) the `files:read` scope.
    pub fn without_files_read(&self, lacking: bool) {
        self.shared.lock().no_files_read = lacking;
    }

    /// Requests to the file host, oldest first.
    pub fn file_requests(&self) -> Vec<FileRequest> {
        self.shared.lock().file_requests.clone()
    }

    /// Uploads started with files.getUploadURLExternal.
    pub fn uploads(&self) -> Vec<Upload> {
        self.shared.lock().uploads.values().cloned().collect()
    }

    /// Files shared with files.completeUploadExternal, oldest first.
    pub fn shared_files(&self) -> Vec<SharedFiles> {
        self.shared.lock().shared_files.clone()
    }

    pub fn add_user(&self, id: &str, name: &str, display_name: &str) {
        self.shared.lock().users.insert(id.into(), (name.into(), display_name.into()));
    }

    pub fn add_channel(&self, id: &str, name: &str) {
        self.shared.lock().channels.insert(id.into(), name.into());
    }

    /// The next `times` calls of `method` get 429 with `Retry-After: retry_after_secs`.
    pub fn rate_limit_next(&self, method: &str, times: usize, retry_after_secs: u64) {
        let mut s = self.shared.lock();
        let q = s.limits.entry(method.to_string()).or_default();
        q.extend(std::iter::repeat_n(retry_after_secs, times));
    }

    pub fn calls(&self) -> Vec<Call> {
        self.shared.lock().calls.clone()
    }

    pub fn calls_of(&self, method: &str) -> Vec<Call> {
        self.calls().into_iter().filter(|c| c.method == method).collect()
    }

    /// Messages in `channel`, oldest first.
    pub fn messages(&self, channel: &str) -> Vec<Posted> {
        self.shared.lock().messages.iter().filter(|m| m.channel == channel).cloned().collect()
    }

    pub fn all_messages(&self) -> Vec<Posted> {
        self.shared.lock().messages.clone()
    }

    pub fn ephemerals(&self) -> Vec<Ephemeral> {
        self.shared.lock().ephemerals.clone()
    }

    pub fn reactions(&self) -> Vec<(String, String, String)> {
        self.shared.lock().reactions.clone()
    }

    /// Waits (up to `secs`) until `pred` holds for everything the fake holds; panics with
    /// `what` otherwise.
    pub async fn wait(&self, secs: u64, what: &str, pred: impl Fn(&FakeSlack) -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
        loop {
            let changed = self.shared.changed.notified();
            if pred(self) {
                return;
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() && !pred(self) {
                panic!(
                    "{what} never happened; messages: {:#?}\nephemerals: {:#?}\ncalls: {:?}",
                    self.all_messages(),
                    self.ephemerals(),
                    self.calls().iter().map(|c| (&c.method, c.status, &c.error)).collect::<Vec<_>>()
                );
            }
        }
    }

    /// Waits until `channel` holds a message whose shown text contains `needle`; returns it.
    pub async fn wait_text(&self, channel: &str, needle: &str) -> Posted {
        let what = format!("a message containing {needle:?} in {channel}");
        self.wait(20, &what, |f| f.messages(channel).iter().any(|m| m.shown().contains(needle))).await;
        self.messages(channel).into_iter().find(|m| m.shown().contains(needle)).unwrap()
    }

    /// Asserts that for `ms` milliseconds nothing new is posted anywhere.
    pub async fn assert_quiet(&self, ms: u64) {
        let before = self.all_messages().len();
        tokio::time::sleep(Duration::from_millis(ms)).await;
        let after = self.all_messages();
        assert_eq!(after.len(), before, "unexpected messages: {:#?}", &after[before..]);
    }

    /// Socket Mode connections opened so far.
    pub fn connections(&self) -> usize {
        self.shared.lock().connections
    }

    /// Sends an envelope to the live Socket Mode connection (waiting up to 10 s for one).
    pub async fn socket_send(&self, envelope: Value) {
        self.wait(10, "a Socket Mode connection", |f| f.shared.lock().socket.is_some()).await;
        let tx = self.shared.lock().socket.clone().unwrap();
        tx.try_send(socket::Out::Frame(envelope.to_string())).expect("the connection is open");
    }

    /// Where the fake's Socket Mode server listens.
    pub fn socket_addr(&self) -> SocketAddr {
        self.shared.ws_addr.lock().unwrap().expect("socket server started")
    }

    /// From now on apps.connections.open hands out `addr` (a proxy in front of
    /// [`Self::socket_addr`]) for the websocket.
    pub fn hand_out_socket(&self, addr: SocketAddr) {
        self.shared.lock().handed_out = Some(addr);
    }

    /// Slack delivers an envelope (`id`, `kind`, `payload`) over Socket Mode: to the live
    /// connection, when there is one, and again to the live connection while no delivery of it
    /// is acknowledged (at most three retries, `retry_reason: "timeout"`), each delivery with an
    /// envelope id of its own (`<id>-<attempt>`).
    pub fn socket_deliver(&self, id: &str, kind: &str, payload: Value) {
        self.shared.lock().pending.push(socket::Pending::new(id, kind, payload));
        self.shared.changed.notify_waiters();
    }

    /// Envelopes given to [`Self::socket_deliver`] that no delivery of was acknowledged, and
    /// how many deliveries (first and retries) were sent in all.
    pub fn socket_unacked(&self) -> (Vec<String>, usize) {
        let s = self.shared.lock();
        let unacked = s.pending.iter().filter(|p| !p.acked(&s.acks)).map(|p| p.id.clone()).collect();
        (unacked, s.pending.iter().map(|p| p.attempts).sum())
    }

    /// Closes the live Socket Mode connection from Slack's side.
    pub fn socket_drop(&self) {
        if let Some(tx) = self.shared.lock().socket.take() {
            let _ = tx.try_send(socket::Out::Close);
        }
    }

    /// The acknowledgement Butler sent for `envelope_id`, waiting up to `secs`.
    pub async fn ack(&self, envelope_id: &str, secs: u64) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
        loop {
            let changed = self.shared.changed.notified();
            if let Some(a) = self.shared.lock().acks.get(envelope_id).cloned() {
                return Some(a);
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                return self.shared.lock().acks.get(envelope_id).cloned();
            }
        }
    }
}
