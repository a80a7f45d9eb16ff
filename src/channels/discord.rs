//! The Discord glue: `[channels.discord]` (its type, checks and `butler init` section) to
//! `butler_discord::Settings`, the channel (its
//! gateway runs as the channel's receive loop), the optional signed interactions endpoint
//! (mounted when `public_key` is set), its file source (attachments from Discord's CDN), and the
//! `butler doctor` check (`GET /users/@me` and `GET /gateway/bot`).
//!
//! It must never hold platform logic, and never print the token.

use super::built::{BuildError, Built, Check};
use super::registry::{Context, Platform};
use crate::config::{Problems, Secret};
use butler_channel::limit::Gate;
use butler_channel::ChannelError;
use butler_discord::{Discord, Settings};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

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
    /// Let Discord embed link previews; false: every message and edit carries the
    /// SUPPRESS_EMBEDS flag (an embed fetches the link at once, so a link with a secret in it
    /// would leak without a click).
    #[serde(default)]
    pub link_previews: bool,
}

fn discord_api() -> String {
    "https://discord.com".into()
}

impl DiscordConfig {
    /// This section as a `[channels.discord]` table, secrets included.
    pub fn to_table(&self) -> toml::Table {
        super::built::section_table(self, &[("token", Some(&self.token))])
    }
}

/// The Discord channel's registry entry.
pub struct DiscordPlatform;

fn settings(cfg: &DiscordConfig, gate: &Gate) -> Settings {
    Settings {
        token: cfg.token.expose().to_string(),
        api_url: cfg.api_url.clone(),
        public_key: cfg.public_key.clone(),
        gate: gate.clone(),
        link_previews: cfg.link_previews,
    }
}

#[async_trait::async_trait]
impl Platform for DiscordPlatform {
    const NAME: &'static str = "discord";
    const INIT: &'static str = "# Discord (README, Discord): uncomment and fill in.\n\
                                # [channels.discord]\n# token = \"${DISCORD_BOT_TOKEN}\"\n\n";
    type Section = DiscordConfig;

    /// `[channels.discord]`: a token, a public key Discord could have issued (32 bytes in hex),
    /// and an http(s) base URL.
    fn check(&self, d: &DiscordConfig, p: &mut Problems) {
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

    async fn build(&self, cfg: DiscordConfig, cx: &Context<'_>, built: &mut Built) -> Result<(), BuildError> {
        let discord = Discord::new(settings(&cfg, cx.gate))
            .map_err(|e| BuildError { channel: "discord", message: e.to_string() })?;
        if let Some(routes) = discord.interactions(cx.ingress.clone()) {
            built.routes = std::mem::take(&mut built.routes).merge(routes);
        }
        built.files.insert(butler_discord::CHANNEL.into(), discord.files());
        built.channels.push(Arc::new(discord));
        Ok(())
    }

    async fn doctor(&self, cfg: &DiscordConfig) -> Check {
        let what = "discord".to_string();
        match butler_discord::check(&settings(cfg, &Gate::local())).await {
            Ok(bot) => {
                let shards = if bot.shards > 1 {
                    format!("; Discord recommends {} gateway shards and Butler runs one", bot.shards)
                } else {
                    String::new()
                };
                (
                    what,
                    Ok(format!(
                        "bot {} ({}), {} gateway sessions left today{shards}",
                        bot.name, bot.user_id, bot.sessions_left
                    )),
                )
            }
            Err(e) => {
                let fix = match &e {
                    ChannelError::Unauthorized(_) => {
                        "set [channels.discord] token to the bot token (Developer Portal -> your application -> Bot -> \
                         Reset Token)"
                            .to_string()
                    }
                    ChannelError::Transient(_) | ChannelError::RateLimited { .. } => {
                        format!("check that this machine can reach {} (channels.discord.api_url)", cfg.api_url)
                    }
                    _ => "check [channels.discord] token and api_url".to_string(),
                };
                (what, Err((e.to_string(), fix)))
            }
        }
    }
}
