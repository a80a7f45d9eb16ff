//! Checks of the platform channel sections, `[channels.discord]`, `[channels.slack]` and
//! `[channels.telegram]`: credentials present, URLs usable, limits sane. Like every check, a
//! message names its key and must never contain a secret.

use super::{http_url, Problems};
use crate::config::{DiscordConfig, SlackConfig, TelegramConfig};

/// `[channels.discord]`: a token, a public key Discord could have issued (32 bytes in hex),
/// and an http(s) base URL.
pub(in crate::config) fn check_discord(d: Option<&DiscordConfig>, p: &mut Problems) {
    let Some(d) = d else { return };
    if d.token.expose().trim().is_empty() {
        p.add(
            "channels.discord.token",
            "is empty; set it to the bot token (Developer Portal -> your application -> Bot -> Reset Token)",
        );
    }
    if let Some(key) = &d.public_key {
        if key.len() != 64 || !key.chars().all(|c| c.is_ascii_hexdigit()) {
            p.add(
                "channels.discord.public_key",
                "must be the application's public key: 64 hex characters (Developer Portal -> General \
                 Information -> Public Key); remove the key to turn the interactions endpoint off",
            );
        }
    }
    if !(d.api_url.starts_with("https://") || d.api_url.starts_with("http://")) {
        p.add(
            "channels.discord.api_url",
            "must be an http(s) URL standing in for https://discord.com (the default); the REST API is \
             under <api_url>/api/v10",
        );
    }
}

/// `[channels.slack]`: a bot token, and a way for Slack to reach Butler (a signing secret
/// for the HTTP endpoints, or an app-level token for Socket Mode).
pub(in crate::config) fn check_slack(s: Option<&SlackConfig>, p: &mut Problems) {
    let Some(s) = s else { return };
    if s.bot_token.expose().trim().is_empty() {
        p.add("channels.slack.bot_token", "is empty; set the Bot User OAuth Token (xoxb-...) of your Slack app");
    }
    let set = |v: &Option<crate::config::Secret>| v.as_ref().is_some_and(|v| !v.expose().trim().is_empty());
    if !set(&s.signing_secret) && !set(&s.app_token) {
        p.add(
            "channels.slack",
            "needs signing_secret (Slack POSTs to /channels/slack/events and /interactive) or app_token \
             (Socket Mode, an xapp- token); set one of them",
        );
    }
    if !(s.api_url.starts_with("https://") || s.api_url.starts_with("http://")) {
        p.add("channels.slack.api_url", "must be an http(s) URL such as https://slack.com/api");
    }
    p.positive("channels.slack.remembered_threads", s.remembered_threads);
}

/// `[channels.telegram]`: a token, an http(s) Bot API URL, sane limits, and in webhook mode a
/// secret Telegram accepts and the public https URL to register.
pub(in crate::config) fn check_telegram(t: Option<&TelegramConfig>, p: &mut Problems) {
    let Some(t) = t else { return };
    if t.token.expose().trim().is_empty() {
        p.add(
            "channels.telegram.token",
            "is empty; create a bot with @BotFather (/newbot) and set the token it gives you",
        );
    }
    http_url(p, "channels.telegram.api_url", &t.api_url);
    if !(1..=50).contains(&t.poll_timeout_secs) {
        p.add("channels.telegram.poll_timeout_secs", "must be 1-50 (seconds); the default is 30");
    }
    p.positive("channels.telegram.max_per_second", t.max_per_second);
    if t.chat_interval_ms > 60_000 {
        p.add("channels.telegram.chat_interval_ms", "must be at most 60000 (a minute); the default is 1000");
    }
    if t.mode != crate::config::TelegramMode::Webhook {
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
        Some(url) => http_url(p, "channels.telegram.webhook_url", url),
    }
}

#[cfg(test)]
mod telegram_tests {
    use crate::config::{Config, ConfigError, Secret, TelegramConfig, TelegramMode};

    fn problems(t: TelegramConfig) -> Vec<(String, String)> {
        let c = Config {
            channels: crate::config::ChannelsConfig { telegram: Some(t), ..Default::default() },
            ..Default::default()
        };
        match c.validate() {
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
