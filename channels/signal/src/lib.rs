//! Butler's Signal channel, through signal-cli's HTTP daemon (`signal-cli daemon --http`), which
//! the operator runs with the bot's registered or linked number.
//!
//! - Intake (`events`): the daemon's Server-Sent Events stream (`GET {url}/api/v1/events`),
//!   read by one process at a time (`Caps::exclusive`: a leader lease with several replicas),
//!   reconnecting with backoff. Each envelope becomes an `InboundEvent` (`normalize`) whose id
//!   is the sender and sent timestamp, so a redelivered envelope is one event; a message is read
//!   (a read receipt) once the ingress has made it durable. Started with
//!   `--receive-mode=manual`, the daemon receives only while Butler listens, so messages wait on
//!   Signal's servers while Butler is down instead of being lost.
//! - Output (`send`): JSON-RPC `send` (`POST {url}/api/v1/rpc`) with Markdown rendered to text
//!   styles (`render`), a quote of the message answered, files as data-URI attachments; typing
//!   indicators with `sendTyping`. Signal has no buttons (`Caps::buttons` is false: Butler writes
//!   the choices into the text) and Butler does not edit (`Caps::edit` is false: Signal limits
//!   edits per message, and streaming would spend them).
//! - Files people send: attachments fetched through the daemon's `getAttachment`
//!   ([`SignalFiles`]).
//!
//! This crate knows Signal and nothing else: it must never use SQL, Redis, an LLM or the root
//! crate, and it never decides what to say.

#[doc(hidden)] // public for the fuzz targets (fuzz/)
pub mod events;
mod files;
pub mod normalize;
pub mod render;
mod rpc;
mod send;

pub use files::SignalFiles;
pub use normalize::CHANNEL;

use butler_channel::{Caps, Channel, ChannelError, ConversationRef, Ingress, MessageRef, Outbound, TextFormat};
use normalize::Me;
use rpc::Rpc;
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Longest text Butler puts in one Signal message, in characters (longer answers are split).
pub const MAX_LEN: usize = 2000;

/// Everything the adapter needs, mapped from `[channels.signal]` by the root's glue.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The daemon's base URL (`http://127.0.0.1:8080`): JSON-RPC at `{url}/api/v1/rpc`, events
    /// at `{url}/api/v1/events`.
    pub url: String,
    /// The bot's number in international format (`+15551234567`).
    pub account: String,
}

/// Why the channel could not start (or `butler doctor`'s check failed).
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("`{0}` is not a valid daemon URL")]
    BadUrl(String),
    #[error("cannot reach signal-cli's daemon at {url}: {error}")]
    Unreachable { url: String, error: String },
    #[error("signal-cli's daemon does not hold the account {account}: {why}")]
    UnknownAccount { account: String, why: String },
    #[error("signal-cli's daemon answered with an error: {0}")]
    Other(String),
}

/// The Signal channel: delivery through JSON-RPC, intake through `run` (the event stream).
pub struct SignalChannel {
    settings: Settings,
    rpc: Rpc,
    /// For the event stream: no overall timeout (it stays open), a limit on silence instead.
    stream: reqwest::Client,
    /// For attachments people send (long overall limit).
    transfer: reqwest::Client,
    /// The bot's number and, once learned from the daemon, its uuid (mentions may name only it).
    me: Mutex<Me>,
}

fn client(timeout: Option<Duration>) -> Result<reqwest::Client, ConnectError> {
    let mut b = reqwest::Client::builder().connect_timeout(Duration::from_secs(10));
    if let Some(t) = timeout {
        b = b.timeout(t);
    }
    b.build().map_err(|e| ConnectError::Other(e.to_string()))
}

impl SignalChannel {
    /// Builds the channel without calling the daemon (it may start after Butler); `butler
    /// doctor` checks it with [`check`].
    pub fn new(settings: Settings) -> Result<Arc<Self>, ConnectError> {
        reqwest::Url::parse(&settings.url).map_err(|_| ConnectError::BadUrl(settings.url.clone()))?;
        let rpc = Rpc::new(&settings.url, &settings.account, client(Some(Duration::from_secs(30)))?);
        let stream = client(None)?;
        let transfer = client(Some(Duration::from_secs(600)))?;
        let me = Mutex::new(Me { number: settings.account.clone(), uuid: None });
        Ok(Arc::new(Self { settings, rpc, stream, transfer, me }))
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// How the files people send are fetched (for `Built.files`).
    pub fn files(&self) -> Arc<SignalFiles> {
        let rpc = Rpc::new(&self.settings.url, &self.settings.account, self.transfer.clone());
        Arc::new(SignalFiles::new(rpc))
    }

    pub(crate) fn me(&self) -> Me {
        self.me.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// `recipient` or `groupId` for a conversation, as `send`, `sendTyping` and `getAttachment`
    /// take them.
    pub(crate) fn target(conversation_id: &str) -> serde_json::Value {
        match normalize::group_id(conversation_id) {
            Some(group) => json!({"groupId": group}),
            None => json!({"recipient": [conversation_id]}),
        }
    }
}

/// What the daemon says about the account: its uuid. `butler doctor` and start-up checks.
pub async fn check(settings: &Settings) -> Result<String, ConnectError> {
    let base = settings.url.trim_end_matches('/');
    reqwest::Url::parse(base).map_err(|_| ConnectError::BadUrl(settings.url.clone()))?;
    let http = client(Some(Duration::from_secs(10)))?;
    let unreachable = |error: String| ConnectError::Unreachable { url: settings.url.clone(), error };
    let resp = http.get(format!("{base}/api/v1/check")).send().await.map_err(|e| unreachable(e.to_string()))?;
    if !resp.status().is_success() {
        return Err(unreachable(format!("/api/v1/check answered {}", resp.status())));
    }
    let rpc = Rpc::new(base, &settings.account, http);
    let unknown = |why: String| ConnectError::UnknownAccount { account: settings.account.clone(), why };
    let status = rpc.call("getUserStatus", json!({"recipient": [settings.account]})).await.map_err(|e| match e {
        ChannelError::Unauthorized(why) | ChannelError::Rejected(why) => unknown(why),
        other => ConnectError::Other(other.to_string()),
    })?;
    let me = &status[0];
    if me["isRegistered"].as_bool() != Some(true) {
        return Err(unknown("it is not registered with Signal (register or link it: README, Signal)".into()));
    }
    Ok(me["uuid"].as_str().unwrap_or_default().to_string())
}

#[async_trait::async_trait]
impl Channel for SignalChannel {
    fn name(&self) -> &str {
        CHANNEL
    }

    fn caps(&self) -> Caps {
        Caps {
            buttons: false,
            edit: false,
            max_len: MAX_LEN,
            typing: true,
            min_edit_interval: Duration::from_secs(1),
            format: TextFormat::Native,
            exclusive: true,
            reply_window: false,
        }
    }

    async fn send(&self, msg: &Outbound) -> Result<MessageRef, ChannelError> {
        let id = self.send_message(msg).await?;
        Ok(MessageRef { conversation: msg.conversation.clone(), id })
    }

    /// Butler does not edit Signal messages: the caller sends a new one instead.
    async fn edit(&self, _target: &MessageRef, _msg: &Outbound) -> Result<(), ChannelError> {
        Err(ChannelError::NotFound("Butler does not edit Signal messages".into()))
    }

    /// Signal shows it for 15 seconds or until the answer arrives.
    async fn typing(&self, conversation: &ConversationRef) -> Result<(), ChannelError> {
        self.rpc.call("sendTyping", Self::target(&conversation.id)).await.map(|_| ())
    }

    async fn run(&self, ingress: Arc<dyn Ingress>, cancel: CancellationToken) -> Result<(), ChannelError> {
        self.receive(ingress, cancel).await
    }
}
