//! Butler's Telegram channel, on teloxide's Bot API client.
//!
//! - Intake: long polling (`getUpdates`, the offset advances only past updates the ingress has
//!   made durable) or a webhook route for Butler's HTTP server (secret header checked in
//!   constant time; 200 only after the ingress stored the update, so Telegram redelivers
//!   otherwise). Updates become `InboundEvent`s with the id `telegram:update:<update_id>`, so
//!   redeliveries are dropped by the inbox.
//! - Output: Markdown rendered to Telegram HTML, inline keyboards for buttons (callback data =
//!   the opaque action id, at most 64 bytes), answers to clicks with `answerCallbackQuery`,
//!   edits for streaming and outcomes, typing indicators, files (`sendPhoto` / `sendDocument`,
//!   streamed from disk, the text as caption). Every message and edit goes through one send
//!   scheduler (1 per second per chat, 30 per second overall, 429s honoured), and asks for no
//!   link preview unless [`Settings::link_previews`] allows them (a preview fetches the link
//!   at once, so a link carrying a secret would leak it without a click).
//! - Files people send: attachments on the event (`normalize`), fetched through
//!   [`TelegramFiles`] (`getFile`, then the file URL, streamed).
//!
//! This crate knows Telegram and nothing else: it must never use SQL, Redis, an LLM or the
//! root crate, and it never decides what to say.

mod files;
mod limits;
pub mod normalize;
mod poll;
pub mod render;
mod send;
mod upload;
mod webhook;

pub use files::{TelegramFiles, MAX_DOWNLOAD};
pub use limits::{Limits, Scheduler};
pub use normalize::{BotIdentity, CHANNEL};
pub use webhook::{routes as webhook_routes, SECRET_HEADER, WEBHOOK_PATH};

use butler_channel::limit::Gate;
use butler_channel::{Caps, Channel, ChannelError, ConversationRef, Ingress, MessageRef, Outbound, TextFormat};
use std::sync::Arc;
use std::time::Duration;
use teloxide::requests::Requester;
use teloxide::{Bot, RequestError};
use tokio_util::sync::CancellationToken;

/// Telegram's limit on one message, in UTF-16 code units after entity parsing.
pub const MAX_LEN: usize = 4096;
/// Telegram's limit on callback data, in bytes.
pub const MAX_CALLBACK_DATA: usize = 64;

/// How updates arrive. Its Debug form masks the webhook secret.
#[derive(Clone, PartialEq, Eq)]
pub enum Mode {
    /// `getUpdates` long polling with this server-side timeout.
    Polling { timeout: Duration },
    /// Telegram POSTs to `url` (Butler's `POST /channels/telegram/webhook`) with `secret` in
    /// the `X-Telegram-Bot-Api-Secret-Token` header.
    Webhook { url: String, secret: String },
}

/// What a secret prints as in Debug output.
const MASK: &str = "********";

impl std::fmt::Debug for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Polling { timeout } => f.debug_struct("Polling").field("timeout", timeout).finish(),
            Self::Webhook { url, .. } => f.debug_struct("Webhook").field("url", url).field("secret", &MASK).finish(),
        }
    }
}

/// Everything the adapter needs, mapped from `[channels.telegram]` by the root's glue. Its
/// Debug form masks the bot token (and the mode's webhook secret).
#[derive(Clone)]
pub struct Settings {
    pub token: String,
    /// The Bot API server (`https://api.telegram.org`, a self-hosted one, or a test fake).
    pub api_url: String,
    pub mode: Mode,
    /// The command menu registered with setMyCommands: (command without `/`, description).
    pub commands: Vec<(String, String)>,
    pub limits: Limits,
    /// Where the send limits are kept: this process's, or the replicas' shared gate.
    pub gate: Gate,
    /// Let Telegram show link previews; false (the default): every message and edit asks for
    /// none.
    pub link_previews: bool,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("token", &MASK)
            .field("api_url", &self.api_url)
            .field("mode", &self.mode)
            .field("commands", &self.commands.len())
            .field("limits", &self.limits)
            .field("gate", &self.gate)
            .field("link_previews", &self.link_previews)
            .finish()
    }
}

/// Why the channel could not start (or `butler doctor`'s getMe failed).
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("`{0}` is not a valid Bot API URL")]
    BadUrl(String),
    #[error("Telegram refused the bot token (getMe: {0})")]
    BadToken(String),
    #[error("cannot reach the Bot API at {url}: {error}")]
    Unreachable { url: String, error: String },
    #[error("the Bot API answered getMe with an error: {0}")]
    Other(String),
}

/// The Telegram channel: a `Channel` for delivery and, in polling mode, the receive loop.
pub struct TelegramChannel {
    /// For sends, edits and short calls (teloxide's default 17 s timeout).
    bot: Bot,
    /// For long polls (a timeout above the long-poll timeout).
    poller: Bot,
    /// For uploads and downloads of files (no short overall timeout, see [`transfer_bot`]).
    transfer: Bot,
    me: BotIdentity,
    settings: Settings,
    scheduler: Scheduler,
}

fn new_bot(token: &str, api_url: &str, timeout: Duration) -> Result<Bot, ConnectError> {
    let url = api_url.parse().map_err(|_| ConnectError::BadUrl(api_url.to_string()))?;
    let client = teloxide::net::default_reqwest_settings()
        .timeout(timeout)
        .build()
        .map_err(|e| ConnectError::Other(e.to_string()))?;
    Ok(Bot::with_client(token, client).set_api_url(url))
}

/// Longest a file upload or download may take as a whole (50 MB at ~100 KB/s).
const TRANSFER_TIMEOUT: Duration = Duration::from_secs(600);
/// Longest a transfer may go without receiving anything.
const TRANSFER_STALL: Duration = Duration::from_secs(60);

/// The client for file transfers: the 17 s overall timeout of ordinary calls would cut a large
/// file on a slow link, so it has a long overall limit and a limit on silence instead.
fn transfer_bot(token: &str, api_url: &str) -> Result<Bot, ConnectError> {
    let url = api_url.parse().map_err(|_| ConnectError::BadUrl(api_url.to_string()))?;
    let client = teloxide::net::default_reqwest_settings()
        .timeout(TRANSFER_TIMEOUT)
        .read_timeout(TRANSFER_STALL)
        .build()
        .map_err(|e| ConnectError::Other(e.to_string()))?;
    Ok(Bot::with_client(token, client).set_api_url(url))
}

/// Asks getMe with `token` at `api_url`: who the bot is, or what is wrong (for `butler doctor`
/// and for start-up).
pub async fn check(token: &str, api_url: &str) -> Result<BotIdentity, ConnectError> {
    let b = new_bot(token, api_url, Duration::from_secs(10))?;
    match b.get_me().await {
        Ok(me) => Ok(BotIdentity { id: me.user.id.0, username: me.user.username.clone().unwrap_or_default() }),
        Err(RequestError::Api(teloxide::ApiError::InvalidToken)) => Err(ConnectError::BadToken("Unauthorized".into())),
        Err(RequestError::Api(e)) if e.to_string().contains("Unauthorized") || e.to_string().contains("Not Found") => {
            Err(ConnectError::BadToken(e.to_string()))
        }
        Err(RequestError::Network(e)) => {
            Err(ConnectError::Unreachable { url: api_url.to_string(), error: redact(&root_cause(&*e), token) })
        }
        Err(e) => Err(ConnectError::Other(redact(&e.to_string(), token))),
    }
}

/// `text` with the bot token (which teloxide's errors carry inside request URLs) masked.
pub(crate) fn redact(text: &str, token: &str) -> String {
    if token.is_empty() {
        text.to_string()
    } else {
        text.replace(token, "<token>")
    }
}

fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut msg = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        msg = format!("{msg}: {s}");
        cur = s.source();
    }
    msg
}

impl TelegramChannel {
    /// Checks the token (getMe) and builds the channel. Registration with Telegram
    /// (deleteWebhook or setWebhook, setMyCommands) happens when it runs.
    pub async fn connect(settings: Settings) -> Result<Arc<Self>, ConnectError> {
        let me = check(&settings.token, &settings.api_url).await?;
        let bot = new_bot(&settings.token, &settings.api_url, Duration::from_secs(17))?;
        let poll_timeout = match settings.mode {
            Mode::Polling { timeout } => timeout,
            Mode::Webhook { .. } => Duration::ZERO,
        };
        let poller = new_bot(&settings.token, &settings.api_url, poll_timeout + Duration::from_secs(15))?;
        let transfer = transfer_bot(&settings.token, &settings.api_url)?;
        let scheduler = Scheduler::new(settings.limits, settings.gate.clone());
        Ok(Arc::new(Self { bot, poller, transfer, me, settings, scheduler }))
    }

    /// How the files people send on this bot are fetched (for `Built.files`).
    pub fn files(&self) -> Arc<TelegramFiles> {
        Arc::new(TelegramFiles::new(self.bot.clone(), self.transfer.clone(), self.settings.token.clone()))
    }

    /// The bot's own identity, from getMe.
    pub fn me(&self) -> &BotIdentity {
        &self.me
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }
}

#[async_trait::async_trait]
impl Channel for TelegramChannel {
    fn name(&self) -> &str {
        CHANNEL
    }

    fn caps(&self) -> Caps {
        Caps {
            buttons: true,
            edit: true,
            max_len: MAX_LEN,
            typing: true,
            min_edit_interval: Duration::from_secs(1),
            format: TextFormat::Native,
            exclusive: matches!(self.settings.mode, Mode::Polling { .. }),
            reply_window: false,
        }
    }

    async fn send(&self, msg: &Outbound) -> Result<MessageRef, ChannelError> {
        match &msg.file {
            // A private answer to a click cannot carry a file: only its text goes.
            Some(file) if msg.private_to.is_none() => self.send_file(msg, file).await,
            _ => self.send_message(msg).await,
        }
    }

    async fn edit(&self, target: &MessageRef, msg: &Outbound) -> Result<(), ChannelError> {
        self.edit_message(target, msg).await
    }

    async fn typing(&self, conversation: &ConversationRef) -> Result<(), ChannelError> {
        self.send_typing(conversation).await
    }

    async fn run(&self, ingress: Arc<dyn Ingress>, cancel: CancellationToken) -> Result<(), ChannelError> {
        self.receive(ingress, cancel).await
    }
}

#[cfg(test)]
mod debug_tests {
    use super::*;

    #[test]
    fn debug_output_masks_the_token_and_the_webhook_secret() {
        let mode = Mode::Webhook { url: "https://bot.example/hook".into(), secret: "canary-hook-5e1f".into() };
        let settings = Settings {
            token: "123:canary-token-9d2c".into(),
            api_url: "https://api.telegram.org".into(),
            mode: mode.clone(),
            commands: vec![],
            limits: Limits { per_chat: Duration::from_secs(1), per_second: 30 },
            gate: Gate::local(),
            link_previews: false,
        };
        for text in [format!("{mode:?}"), format!("{settings:?}"), format!("{settings:#?}")] {
            assert!(!text.contains("canary"), "{text}");
            assert!(text.contains("https://bot.example/hook") && text.contains(MASK), "{text}");
        }
    }
}
