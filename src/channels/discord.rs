//! The Discord glue: `[channels.discord]` to `butler_discord::Settings`, the channel (its
//! gateway runs as the channel's receive loop), the optional signed interactions endpoint
//! (mounted when `public_key` is set), its file source (attachments from Discord's CDN), and the
//! `butler doctor` check (`GET /users/@me` and `GET /gateway/bot`).
//!
//! It must never hold platform logic, and never print the token.

use super::built::{BuildError, Built, Check};
use crate::config::DiscordConfig;
use butler_channel::limit::Gate;
use butler_channel::{ChannelError, Ingress};
use butler_discord::{Discord, Settings};
use std::sync::Arc;

fn settings(cfg: &DiscordConfig, gate: &Gate) -> Settings {
    Settings {
        token: cfg.token.expose().to_string(),
        api_url: cfg.api_url.clone(),
        public_key: cfg.public_key.clone(),
        gate: gate.clone(),
    }
}

pub async fn build(
    cfg: &DiscordConfig,
    ingress: Arc<dyn Ingress>,
    gate: &Gate,
    built: &mut Built,
) -> Result<(), BuildError> {
    let discord =
        Discord::new(settings(cfg, gate)).map_err(|e| BuildError { channel: "discord", message: e.to_string() })?;
    if let Some(routes) = discord.interactions(ingress) {
        built.routes = std::mem::take(&mut built.routes).merge(routes);
    }
    built.files.insert(butler_discord::CHANNEL.into(), discord.files());
    built.channels.push(Arc::new(discord));
    Ok(())
}

pub async fn doctor(cfg: &DiscordConfig) -> Check {
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
