//! Butler's Discord channel, on serenity's REST client and models: DMs, mentions and replies in
//! guild channels, and threads (each thread is a conversation and a session of its own) arrive
//! over the gateway; replies go out as Discord Markdown in messages of at most 2,000
//! characters, streamed by editing in place, with approval buttons as message components.
//! Clicks arrive over the gateway (INTERACTION_CREATE) or, optionally, at the signed HTTP
//! endpoint `POST /channels/discord/interactions`.
//!
//! Files: a message's attachments are the event's attachments, fetched from Discord's CDN only
//! ([`DiscordFiles`]); Butler's own files go out as multipart messages with the text as content.
//!
//! Events: `discord:message:<message id>` and `discord:interaction:<interaction id>`;
//! conversations `discord:<channel id>`; identities `discord:<user id>`.
//!
//! Like every adapter, this crate knows Discord and nothing else: it must never depend on
//! Butler's store, Redis, an LLM or the root crate, and must never acknowledge anything to
//! Discord (a gateway sequence number, a click) before `Ingress::accept` has made it durable.

mod attach;
mod files;
mod gateway;
#[doc(hidden)] // public for the fuzz targets (fuzz/)
pub mod inbound;
mod interactions;
mod outbound;
mod render;
mod rest;
#[doc(hidden)] // public for the fuzz targets (fuzz/)
pub mod state;

pub use files::{DiscordFiles, CDN_HOSTS};
pub use gateway::intents;
pub use interactions::{public_key, verify, PATH as INTERACTIONS_PATH};
pub use outbound::ACKNOWLEDGED;
pub use render::{render, MAX_LEN};
pub use rest::DISCORD;

use butler_channel::limit::Gate;
use butler_channel::{Caps, Channel, ChannelError, ConversationRef, Ingress, MessageRef, Outbound, TextFormat};
use serenity::http::{LightMethod, Route};
use serenity::model::gateway::BotGateway;
use serenity::model::user::CurrentUser;
use state::{Acks, Me, Memory, Pacer};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The channel name in identities and conversations.
pub const CHANNEL: &str = "discord";

/// The least time between two writes to one message (streaming edits, the final edit).
pub const MIN_EDIT_INTERVAL: Duration = Duration::from_secs(1);

/// The bot permissions Butler needs, for the invite URL: View Channels, Send Messages, Send
/// Messages in Threads, Read Message History.
pub const INVITE_PERMISSIONS: u64 = (1 << 10) | (1 << 11) | (1 << 38) | (1 << 16);

/// What Butler says to a slash command or modal (it registers none).
pub(crate) const NO_COMMANDS: &str = "Butler has no commands here: mention it, reply to it, or send it a DM.";

/// How to reach Discord as the bot.
#[derive(Clone)]
pub struct Settings {
    /// The bot token (without the `Bot ` prefix).
    pub token: String,
    /// Stands in for https://discord.com (the REST API is at `<api_url>/api/v10`).
    pub api_url: String,
    /// The application's public key (hex); enables the HTTP interactions endpoint.
    pub public_key: Option<String>,
    /// Where rate-limit holds are kept: this process's, or the replicas' shared gate (which
    /// also counts refused requests on the interactions endpoint).
    pub gate: Gate,
    /// Let Discord embed link previews in Butler's messages; false: every message and edit
    /// carries SUPPRESS_EMBEDS.
    pub link_previews: bool,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("api_url", &self.api_url)
            .field("public_key", &self.public_key)
            .field("gate", &self.gate)
            .field("link_previews", &self.link_previews)
            .finish()
    }
}

pub(crate) struct Inner {
    token: String,
    rest: rest::Rest,
    /// Downloads of attachments.
    files: DiscordFiles,
    me: Mutex<Me>,
    memory: Mutex<Memory>,
    pacer: Pacer,
    acks: Acks,
    public_key: Option<ed25519_dalek::VerifyingKey>,
    /// For the interactions endpoint's refused requests.
    gate: Gate,
    /// Let Discord embed link previews (false: SUPPRESS_EMBEDS on every message and edit).
    previews: bool,
    running: AtomicBool,
}

/// The Discord channel.
#[derive(Clone)]
pub struct Discord {
    inner: Arc<Inner>,
}

impl Discord {
    pub fn new(settings: Settings) -> Result<Self, ChannelError> {
        let token = settings.token.trim().trim_start_matches("Bot ").to_string();
        let public_key = settings.public_key.as_deref().map(public_key).transpose().map_err(ChannelError::Rejected)?;
        Ok(Self {
            inner: Arc::new(Inner {
                rest: rest::Rest::new(&token, &settings.api_url, settings.gate.clone())?,
                files: DiscordFiles::new(&settings.api_url)?,
                token,
                me: Mutex::new(Me::default()),
                memory: Mutex::new(Memory::default()),
                pacer: Pacer::new(MIN_EDIT_INTERVAL),
                acks: Acks::default(),
                public_key,
                gate: settings.gate,
                previews: settings.link_previews,
                running: AtomicBool::new(false),
            }),
        })
    }

    /// How Butler downloads the files people attach here (from Discord's CDN only).
    pub fn files(&self) -> Arc<dyn butler_channel::FileSource> {
        Arc::new(self.inner.files.clone())
    }

    /// `POST /channels/discord/interactions`, when a public key is configured.
    pub fn interactions(&self, ingress: Arc<dyn Ingress>) -> Option<axum::Router> {
        interactions::routes(&self.inner, ingress)
    }
}

/// What `butler doctor` reports about the bot.
#[derive(Clone, Debug)]
pub struct BotCheck {
    pub user_id: String,
    pub name: String,
    /// Gateway shards Discord recommends (Butler runs one).
    pub shards: u32,
    /// Gateway sessions Butler may still start today.
    pub sessions_left: u64,
}

/// Checks the token (`GET /users/@me`) and the gateway budget (`GET /gateway/bot`).
pub async fn check(settings: &Settings) -> Result<BotCheck, ChannelError> {
    let token = settings.token.trim().trim_start_matches("Bot ");
    let rest = rest::Rest::new(token, &settings.api_url, settings.gate.clone())?;
    let me: CurrentUser = rest.json(LightMethod::Get, Route::UserMe, None::<&()>).await?;
    let gateway: BotGateway = rest.json(LightMethod::Get, Route::GatewayBot, None::<&()>).await?;
    Ok(BotCheck {
        user_id: me.id.to_string(),
        name: me.name.clone(),
        shards: gateway.shards,
        sessions_left: gateway.session_start_limit.remaining,
    })
}

#[async_trait::async_trait]
impl Channel for Discord {
    fn name(&self) -> &str {
        CHANNEL
    }

    fn caps(&self) -> Caps {
        Caps {
            buttons: true,
            edit: true,
            max_len: MAX_LEN,
            typing: true,
            min_edit_interval: MIN_EDIT_INTERVAL,
            format: TextFormat::Native,
            exclusive: true,
            reply_window: false,
        }
    }

    async fn send(&self, msg: &Outbound) -> Result<MessageRef, ChannelError> {
        self.inner.send(msg).await
    }

    async fn edit(&self, target: &MessageRef, msg: &Outbound) -> Result<(), ChannelError> {
        self.inner.edit(target, msg).await
    }

    async fn typing(&self, conversation: &ConversationRef) -> Result<(), ChannelError> {
        self.inner.typing(conversation).await
    }

    /// The gateway connection, until `cancel` fires.
    async fn run(&self, ingress: Arc<dyn Ingress>, cancel: CancellationToken) -> Result<(), ChannelError> {
        if self.inner.running.swap(true, Ordering::SeqCst) {
            return Err(ChannelError::Rejected("the Discord gateway is already running".into()));
        }
        let result = gateway::run(&self.inner, &*ingress, &cancel).await;
        self.inner.running.store(false, Ordering::SeqCst);
        result
    }
}
