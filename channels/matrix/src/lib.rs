//! Butler's Matrix channel, through matrix-sdk with end-to-end encryption: Butler is a Matrix
//! user of its own, with its own device and crypto store (under Butler's data folder).
//!
//! - Intake (`sync`): `/sync` long polls by one process at a time (`Caps::exclusive`: a leader
//!   lease with several replicas). The sync token is the ingress's read position, saved only
//!   after every event of a response is durable, so a restart or a takeover resumes where the
//!   last one stopped: nothing replayed, nothing missed. Invites from allowed people are
//!   accepted, others declined. Room events become `InboundEvent`s (`normalize`); each message is
//!   marked read once stored.
//! - Output (`send`): Markdown as Matrix HTML, a reply to the message answered (or in its
//!   thread), streaming by editing one message (`m.replace`), files uploaded (encrypted in
//!   encrypted rooms), typing notices. Matrix has no buttons: requests list numbered choices
//!   and Butler puts ✅ 🔁 ❌ under them to react with.
//! - Files people send: fetched (and decrypted) from the media repository ([`MatrixFiles`]).
//!
//! This crate knows Matrix and nothing else: it must never use SQL, Redis, an LLM or the root
//! crate, and it never decides what to say.

mod catchup;
mod connect;
mod errors;
mod files;
pub mod normalize;
mod send;
mod sync;

pub use connect::check;
pub use files::MatrixFiles;
pub use normalize::CHANNEL;
pub use send::choices;

use butler_channel::{Caps, Channel, ChannelError, ConversationRef, Ingress, MessageRef, Outbound, TextFormat};
use matrix_sdk::Client;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;

/// Longest text Butler puts in one Matrix message, in characters (events are limited to 64 KiB
/// with the HTML copy and, in encrypted rooms, the encryption's overhead).
pub const MAX_LEN: usize = 16_000;

/// How Butler proves who it is.
#[derive(Clone)]
pub enum Login {
    /// Logs in once with the password and keeps the session (its access token) in the store.
    Password(String),
    /// A token made for Butler's device (`device_id` says which).
    AccessToken(String),
}

impl std::fmt::Debug for Login {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Login::Password(_) => "Password(…)",
            Login::AccessToken(_) => "AccessToken(…)",
        })
    }
}

/// Everything the adapter needs, mapped from `[channels.matrix]` by the root's glue.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The homeserver's client-server API base URL (`https://matrix.example.org`).
    pub homeserver: String,
    /// Butler's Matrix user (`@butler:example.org`).
    pub user_id: String,
    pub login: Login,
    /// Butler's device; with a password, `None` lets the homeserver pick one on first login.
    pub device_id: Option<String>,
    /// The SDK's state and crypto store (a folder only this process uses).
    pub store_path: PathBuf,
    /// Whose invites Butler accepts: user ids (`@alice:example.org`) or whole homeservers
    /// (`:example.org`).
    pub allowed: Vec<String>,
}

impl Settings {
    /// Whether `user_id` may invite Butler to a room.
    pub fn may_invite(&self, user_id: &str) -> bool {
        self.allowed.iter().any(|a| match a.strip_prefix(':') {
            Some(server) => user_id.split_once(':').is_some_and(|(_, s)| s == server),
            None => a == user_id,
        })
    }
}

/// Why the channel could not start (or `butler doctor`'s check failed).
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("`{0}` is not a valid homeserver URL")]
    BadUrl(String),
    #[error("cannot reach the homeserver at {url}: {error}")]
    Unreachable { url: String, error: String },
    #[error("the homeserver refused Butler's login as {user}: {why}")]
    Refused { user: String, why: String },
    #[error("the store in {path} belongs to another user or device: {why}")]
    StoreMismatch { path: String, why: String },
    #[error("the Matrix store in {path} is in use by another Butler process")]
    InUse { path: String },
    #[error("the Matrix store in {path} cannot be used: {why}")]
    Store { path: String, why: String },
    #[error("the homeserver answered with an error: {0}")]
    Other(String),
}

/// The Matrix channel: delivery through the client, intake through `run` (the sync loop).
pub struct MatrixChannel {
    settings: Settings,
    /// Built and logged in on first use (the homeserver may start after Butler).
    client: OnceCell<connect::Connected>,
    /// Whether this process runs the sync loop (else a send first catches up with one sync).
    syncing: std::sync::atomic::AtomicBool,
    /// When a process that does not sync last caught up before sending.
    caught_up: std::sync::Mutex<Option<std::time::Instant>>,
}

impl MatrixChannel {
    /// Builds the channel without calling the homeserver; `butler doctor` checks it with
    /// [`check`].
    pub fn new(settings: Settings) -> Result<Arc<Self>, ConnectError> {
        url_ok(&settings.homeserver)?;
        Ok(Arc::new(Self { settings, client: OnceCell::new(), syncing: false.into(), caught_up: Default::default() }))
    }

    /// How the files people send are fetched (for `Built.files`).
    pub fn files(self: &Arc<Self>) -> Arc<MatrixFiles> {
        Arc::new(MatrixFiles::new(self.clone()))
    }

    /// Logs in and syncs once now, waiting at most `wait`: each process's device then exists
    /// with its keys uploaded (people's clients encrypt for the devices they know) before it
    /// reads or sends, and it knows its rooms. A failure is only logged: the first use tries
    /// again.
    pub async fn warm(&self, wait: Duration) {
        let warmed = async {
            let client = self.client().await?;
            let once = matrix_sdk::config::SyncSettings::default().timeout(Duration::ZERO);
            client.sync_once(once).await.map_err(errors::sdk)?;
            *self.caught_up.lock().unwrap_or_else(|e| e.into_inner()) = Some(std::time::Instant::now());
            Ok::<(), ChannelError>(())
        };
        match tokio::time::timeout(wait, warmed).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(channel = "matrix", error = %e, "not logged in yet; trying again when needed"),
            Err(_) => tracing::warn!(channel = "matrix", "the homeserver is slow to answer; logging in when needed"),
        }
    }

    /// The logged-in client.
    pub(crate) async fn client(&self) -> Result<&Client, ChannelError> {
        self.client.get_or_try_init(|| connect::connect(&self.settings)).await.map(|c| &c.client).map_err(|e| match e {
            ConnectError::Refused { .. } | ConnectError::StoreMismatch { .. } | ConnectError::InUse { .. } => {
                ChannelError::Unauthorized(e.to_string())
            }
            other => ChannelError::Transient(other.to_string()),
        })
    }
}

fn url_ok(url: &str) -> Result<(), ConnectError> {
    let ok = matrix_sdk::reqwest::Url::parse(url).is_ok_and(|u| matches!(u.scheme(), "http" | "https"));
    if ok {
        Ok(())
    } else {
        Err(ConnectError::BadUrl(url.to_string()))
    }
}

#[async_trait::async_trait]
impl Channel for MatrixChannel {
    fn name(&self) -> &str {
        CHANNEL
    }

    fn caps(&self) -> Caps {
        Caps {
            buttons: false,
            edit: true,
            max_len: MAX_LEN,
            typing: true,
            // Homeservers rate-limit messages (Synapse: a burst of 10, then one each 5 s by
            // default), and edits count.
            min_edit_interval: Duration::from_secs(2),
            format: TextFormat::Native,
            exclusive: true,
            reply_window: false,
        }
    }

    async fn send(&self, msg: &Outbound) -> Result<MessageRef, ChannelError> {
        let id = self.send_message(msg).await?;
        Ok(MessageRef { conversation: msg.conversation.clone(), id })
    }

    async fn edit(&self, target: &MessageRef, msg: &Outbound) -> Result<(), ChannelError> {
        self.edit_message(target, msg).await
    }

    async fn typing(&self, conversation: &ConversationRef) -> Result<(), ChannelError> {
        let room = self.room(&conversation.id).await?;
        room.typing_notice(true).await.map_err(errors::sdk)
    }

    async fn run(&self, ingress: Arc<dyn Ingress>, cancel: CancellationToken) -> Result<(), ChannelError> {
        self.syncing.store(true, std::sync::atomic::Ordering::SeqCst);
        let result = self.receive(ingress, cancel).await;
        self.syncing.store(false, std::sync::atomic::Ordering::SeqCst);
        result
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn invites_are_taken_from_allowed_people_and_servers() {
        let s = super::Settings {
            homeserver: "http://127.0.0.1:8008".into(),
            user_id: "@butler:hs.test".into(),
            login: super::Login::Password("x".into()),
            device_id: None,
            store_path: "/tmp/x".into(),
            allowed: vec!["@alice:hs.test".into(), ":team.example".into()],
        };
        let cases = [
            ("@alice:hs.test", true),
            ("@bob:hs.test", false),
            ("@carol:team.example", true),
            ("@carol:evil.team.example", false),
            ("@alice:hs.test.evil", false),
        ];
        for (who, ok) in cases {
            assert_eq!(s.may_invite(who), ok, "{who}");
        }
        assert_eq!(format!("{:?}", s.login), "Password(…)");
    }
}
