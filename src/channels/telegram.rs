//! `[channels.telegram]` -> the Telegram channel (channels/telegram): the section's type and
//! checks, its `butler init` section, its settings (the command
//! menu comes from triage's `/help` list), its webhook route (`POST /channels/telegram/webhook`,
//! mounted in webhook mode), its file source (getFile and the file URL, under "telegram" in
//! `Built.files`), and the `butler doctor` check (the token through getMe).
//!
//! It must never hold Telegram logic or print a secret: mapping config to settings is all it does.

use super::built::{BuildError, Built, Check};
use super::registry::{Context, Platform};
use crate::config::{Problems, Secret};
use butler_channel::limit::Gate;
use butler_telegram::{ConnectError, Limits, Mode, Settings, TelegramChannel};
use serde::{Deserialize, Serialize};
use std::time::Duration;

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
    /// Let Telegram show link previews; false: every message and edit asks for none (a preview
    /// fetches the link at once, so a link with a secret in it would leak without a click).
    #[serde(default)]
    pub link_previews: bool,
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

impl TelegramConfig {
    /// This section as a `[channels.telegram]` table, secrets included.
    pub fn to_table(&self) -> toml::Table {
        let secrets = [("token", Some(&self.token)), ("webhook_secret", self.webhook_secret.as_ref())];
        super::built::section_table(self, &secrets)
    }
}

/// The Telegram channel's registry entry.
pub struct Telegram;

/// The `/help` list as Telegram's command menu: `/cmd[ ARGS][, /cmd2 ARGS] - description`.
pub fn commands() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in crate::triage::HELP.lines() {
        let Some((names, description)) = line.split_once(" - ") else { continue };
        let description: String = description.replace('`', "").chars().take(256).collect();
        for name in names.split(", ") {
            let Some(word) = name.trim().strip_prefix('/').and_then(|n| n.split_whitespace().next()) else {
                continue;
            };
            let ok = (1..=32).contains(&word.len())
                && word.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
            if ok && !out.iter().any(|(n, _): &(String, String)| n == word) {
                out.push((word.to_string(), description.clone()));
            }
        }
    }
    out
}

fn settings(cfg: &TelegramConfig, gate: &Gate) -> Settings {
    let mode = match cfg.mode {
        TelegramMode::Polling => Mode::Polling { timeout: Duration::from_secs(u64::from(cfg.poll_timeout_secs)) },
        TelegramMode::Webhook => Mode::Webhook {
            url: cfg.webhook_url.clone().unwrap_or_default(),
            secret: cfg.webhook_secret.as_ref().map(|s| s.expose().to_string()).unwrap_or_default(),
        },
    };
    Settings {
        token: cfg.token.expose().to_string(),
        api_url: cfg.api_url.clone(),
        mode,
        commands: commands(),
        limits: Limits { per_chat: Duration::from_millis(cfg.chat_interval_ms), per_second: cfg.max_per_second },
        gate: gate.clone(),
        link_previews: cfg.link_previews,
    }
}

/// What is wrong and what to do about it, for start-up errors and `butler doctor`.
fn explain(e: &ConnectError, cfg: &TelegramConfig) -> (String, String) {
    let fix = match e {
        ConnectError::BadToken(_) => {
            "check [channels.telegram] token with @BotFather (/mybots -> your bot -> API Token); a revoked token \
             must be replaced"
                .to_string()
        }
        ConnectError::Unreachable { .. } | ConnectError::BadUrl(_) => {
            format!("check [channels.telegram] api_url ({}) and that this machine can reach it", cfg.api_url)
        }
        ConnectError::Other(_) => "see the Bot API's answer above; check [channels.telegram]".to_string(),
    };
    (e.to_string(), fix)
}

#[async_trait::async_trait]
impl Platform for Telegram {
    const NAME: &'static str = "telegram";
    const INIT: &'static str = "# Telegram: uncomment with the token from @BotFather (README, Telegram).\n\
                                # [channels.telegram]\n# token = \"${TELEGRAM_BOT_TOKEN}\"\n\n";
    type Section = TelegramConfig;

    /// `[channels.telegram]`: a token, an http(s) Bot API URL, sane limits, and in webhook mode a
    /// secret Telegram accepts and the public https URL to register.
    fn check(&self, t: &TelegramConfig, p: &mut Problems) {
        if t.token.expose().trim().is_empty() {
            p.add(
                "channels.telegram.token",
                "is empty; create a bot with @BotFather (/newbot) and set the token it gives you",
            );
        }
        crate::config::http_url(p, "channels.telegram.api_url", &t.api_url);
        if !(1..=50).contains(&t.poll_timeout_secs) {
            p.add("channels.telegram.poll_timeout_secs", "must be 1-50 (seconds); the default is 30");
        }
        p.positive("channels.telegram.max_per_second", t.max_per_second);
        if t.chat_interval_ms > 60_000 {
            p.add("channels.telegram.chat_interval_ms", "must be at most 60000 (a minute); the default is 1000");
        }
        if t.mode != TelegramMode::Webhook {
            return;
        }
        match t.webhook_secret.as_ref().map(|s| s.expose()) {
            None | Some("") => p.add(
                "channels.telegram.webhook_secret",
                "is required with mode = \"webhook\"; set 1-256 letters, digits, `_` or `-` (e.g. from \
                 `openssl rand -hex 32`)",
            ),
            Some(s) if s.len() > 256 || !s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') => p.add(
                "channels.telegram.webhook_secret",
                "Telegram accepts only 1-256 letters, digits, `_` and `-` here (e.g. from `openssl rand -hex 32`)",
            ),
            Some(_) => {}
        }
        match &t.webhook_url {
            None => p.add(
                "channels.telegram.webhook_url",
                "is required with mode = \"webhook\": the public https URL that reaches \
                 /channels/telegram/webhook on this server",
            ),
            Some(url) => crate::config::http_url(p, "channels.telegram.webhook_url", url),
        }
    }

    async fn build(&self, cfg: TelegramConfig, cx: &Context<'_>, built: &mut Built) -> Result<(), BuildError> {
        let channel = TelegramChannel::connect(settings(&cfg, cx.gate)).await.map_err(|e| {
            let (problem, fix) = explain(&e, &cfg);
            BuildError { channel: "telegram", message: format!("{problem}; {fix} (`butler doctor` checks it)") }
        })?;
        let routes = butler_telegram::webhook_routes(channel.clone(), cx.ingress.clone());
        built.routes = std::mem::take(&mut built.routes).merge(routes);
        built.files.insert(butler_telegram::CHANNEL.to_string(), channel.files());
        built.channels.push(channel);
        Ok(())
    }

    async fn doctor(&self, cfg: &TelegramConfig) -> Check {
        let what = "telegram".to_string();
        match butler_telegram::check(cfg.token.expose(), &cfg.api_url).await {
            Ok(me) => {
                let mode = match cfg.mode {
                    TelegramMode::Polling => "long polling".to_string(),
                    TelegramMode::Webhook => format!("webhook at {}", cfg.webhook_url.as_deref().unwrap_or("?")),
                };
                (what, Ok(format!("bot @{} (id {}) accepted the token; {mode}", me.username, me.id)))
            }
            Err(e) => (what, Err(explain(&e, cfg))),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_help_list_becomes_the_command_menu() {
        let commands = super::commands();
        let names: Vec<&str> = commands.iter().map(|(n, _)| n.as_str()).collect();
        for want in ["help", "new", "stop", "status", "whoami", "link", "pair", "approve", "deny", "tasks", "cancel"] {
            assert!(names.contains(&want), "{want} missing from {names:?}");
        }
        let approve = commands.iter().find(|(n, _)| n == "approve").unwrap();
        assert_eq!(approve.1, "answer an approval request");
        assert!(commands.iter().all(|(_, d)| !d.is_empty() && d.len() <= 256 && !d.contains('`')));
    }
}

#[cfg(test)]
mod check_tests {
    use super::{TelegramConfig, TelegramMode};
    use crate::config::{Config, ConfigError, Secret};

    fn problems(t: TelegramConfig) -> Vec<(String, String)> {
        let mut c = Config::default();
        c.channels.set("telegram", t.to_table());
        match crate::app::check_config(&c) {
            Ok(()) => vec![],
            Err(ConfigError::Invalid { problems, .. }) => problems.into_iter().map(|p| (p.key, p.message)).collect(),
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn telegram_settings_are_checked() {
        let good = TelegramConfig {
            token: Secret::new("123:abc"),
            api_url: "https://api.telegram.org".into(),
            mode: TelegramMode::Polling,
            webhook_secret: None,
            webhook_url: None,
            poll_timeout_secs: 30,
            max_per_second: 30,
            chat_interval_ms: 1000,
            link_previews: false,
        };
        assert!(problems(good.clone()).is_empty());
        let keys = |t| problems(t).into_iter().map(|(k, _)| k).collect::<Vec<_>>();
        let bad =
            TelegramConfig { token: Secret::new(" "), api_url: "ftp://x".into(), poll_timeout_secs: 0, ..good.clone() };
        assert_eq!(
            keys(bad),
            ["channels.telegram.token", "channels.telegram.api_url", "channels.telegram.poll_timeout_secs"]
        );
        let hook = TelegramConfig { mode: TelegramMode::Webhook, ..good.clone() };
        assert_eq!(keys(hook), ["channels.telegram.webhook_secret", "channels.telegram.webhook_url"]);
        let hook = TelegramConfig {
            mode: TelegramMode::Webhook,
            webhook_secret: Some(Secret::new("has spaces!")),
            webhook_url: Some("butler.example.com/hook".into()),
            ..good
        };
        let found = problems(hook);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].1.contains("only 1-256 letters") && !found[0].1.contains("has spaces"), "{found:?}");
    }
}
