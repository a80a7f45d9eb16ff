//! `[channels.telegram]` -> the Telegram channel (channels/telegram): its settings (the command
//! menu comes from triage's `/help` list), its webhook route (`POST /channels/telegram/webhook`,
//! mounted in webhook mode), its file source (getFile and the file URL, under "telegram" in
//! `Built.files`), and the `butler doctor` check (the token through getMe).
//!
//! It must never hold Telegram logic or print a secret: mapping config to settings is all it does.

use super::built::{BuildError, Built, Check};
use crate::config::{TelegramConfig, TelegramMode};
use butler_channel::limit::Gate;
use butler_channel::Ingress;
use butler_telegram::{ConnectError, Limits, Mode, Settings, TelegramChannel};
use std::sync::Arc;
use std::time::Duration;

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

pub fn settings(cfg: &TelegramConfig, gate: &Gate) -> Settings {
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

pub async fn build(
    cfg: &TelegramConfig,
    ingress: Arc<dyn Ingress>,
    gate: &Gate,
    built: &mut Built,
) -> Result<(), BuildError> {
    let channel = TelegramChannel::connect(settings(cfg, gate)).await.map_err(|e| {
        let (problem, fix) = explain(&e, cfg);
        BuildError { channel: "telegram", message: format!("{problem}; {fix} (`butler doctor` checks it)") }
    })?;
    let routes = butler_telegram::webhook_routes(channel.clone(), ingress);
    built.routes = std::mem::take(&mut built.routes).merge(routes);
    built.files.insert(butler_telegram::CHANNEL.to_string(), channel.files());
    built.channels.push(channel);
    Ok(())
}

pub async fn doctor(cfg: &TelegramConfig) -> Check {
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
