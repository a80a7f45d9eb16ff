//! `[channels.telegram]`, `[channels.slack]`, `[channels.discord]`: platform credentials and
//! endpoints. Secrets are [`Secret`]s; every key is documented in config/butler.example.toml.

use super::Secret;
use serde::{Deserialize, Serialize};

/// How Telegram delivers updates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TelegramMode {
    /// Butler asks with getUpdates (long polling): works behind NAT, no public URL needed.
    #[default]
    Polling,
    /// Telegram POSTs to `POST /channels/telegram/webhook` on Butler's server.
    Webhook,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TelegramConfig {
    pub token: Secret,
    /// The Bot API server (the public one, a self-hosted one, or a test fake).
    #[serde(default = "telegram_api")]
    pub api_url: String,
    #[serde(default)]
    pub mode: TelegramMode,
    /// Webhook mode: the secret Telegram sends in `X-Telegram-Bot-Api-Secret-Token`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_secret: Option<Secret>,
    /// Webhook mode: the public URL of `/channels/telegram/webhook` given to setWebhook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_url: Option<String>,
    /// Polling mode: how long one getUpdates call waits for updates (Telegram allows up to 50).
    #[serde(default = "telegram_poll_timeout")]
    pub poll_timeout_secs: u32,
    /// Messages (sends and edits) per second over all chats; Telegram's limit is 30.
    #[serde(default = "telegram_per_second")]
    pub max_per_second: u32,
    /// Shortest gap between two messages to one chat, in milliseconds; Telegram's limit is ~1 s.
    #[serde(default = "telegram_chat_interval")]
    pub chat_interval_ms: u64,
}

fn telegram_api() -> String {
    "https://api.telegram.org".into()
}

fn telegram_poll_timeout() -> u32 {
    30
}

fn telegram_per_second() -> u32 {
    30
}

fn telegram_chat_interval() -> u64 {
    1000
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SlackConfig {
    /// `xoxb-...`
    pub bot_token: Secret,
    /// Verifies Events API and interactivity requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signing_secret: Option<Secret>,
    /// `xapp-...`: Socket Mode instead of the HTTP endpoints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_token: Option<Secret>,
    /// The Web API base (tests point it at a fake).
    #[serde(default = "slack_api")]
    pub api_url: String,
    /// Emoji name put on a message while Butler works on it, removed with the answer (Slack has
    /// no typing indicator for bots); empty: none.
    #[serde(default = "slack_working_reaction")]
    pub working_reaction: String,
    /// Threads Butler remembers having spoken in (replies there need no mention); the oldest
    /// are forgotten first, and all after a restart.
    #[serde(default = "slack_remembered_threads")]
    pub remembered_threads: usize,
}

fn slack_api() -> String {
    "https://slack.com/api".into()
}

fn slack_working_reaction() -> String {
    "eyes".into()
}

fn slack_remembered_threads() -> usize {
    10_000
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DiscordConfig {
    pub token: Secret,
    /// Verifies `POST /channels/discord/interactions` (hex Ed25519 public key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_key: Option<String>,
    /// Stands in for https://discord.com: the REST API is at `<api_url>/api/v10`.
    #[serde(default = "discord_api")]
    pub api_url: String,
}

fn discord_api() -> String {
    "https://discord.com".into()
}
