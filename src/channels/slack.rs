//! `[channels.slack]` -> the Slack channel (channels/slack): its settings, its HTTP routes
//! (`/channels/slack/events`, `/interactive`, `/commands`, mounted when a signing secret is
//! set), its file source (shared files fetched with the bot token), and the `butler doctor` check (the bot token through auth.test, and a way for Slack
//! to reach Butler: a signing secret or an app-level token).
//!
//! It must never hold Slack logic or print a secret: mapping config to settings is all it does.

use super::built::{BuildError, Built, Check};
use crate::config::SlackConfig;
use butler_channel::limit::Gate;
use butler_channel::Ingress;
use butler_slack::{SlackChannel, SlackSettings};
use std::sync::Arc;

fn settings(cfg: &SlackConfig, gate: &Gate) -> SlackSettings {
    let nonempty = |s: Option<&crate::config::Secret>| s.filter(|s| !s.is_empty()).map(|s| s.expose().to_string());
    SlackSettings {
        bot_token: cfg.bot_token.expose().to_string(),
        signing_secret: nonempty(cfg.signing_secret.as_ref()),
        app_token: nonempty(cfg.app_token.as_ref()),
        api_url: cfg.api_url.clone(),
        remembered_threads: cfg.remembered_threads,
        working_reaction: Some(cfg.working_reaction.trim().to_string()).filter(|r| !r.is_empty()),
        gate: gate.clone(),
    }
}

pub async fn build(
    cfg: &SlackConfig,
    _root: &crate::config::Config,
    ingress: Arc<dyn Ingress>,
    gate: &Gate,
    built: &mut Built,
) -> Result<(), BuildError> {
    let channel = SlackChannel::connect(settings(cfg, gate)).await.map_err(|e| BuildError {
        channel: "slack",
        message: format!("auth.test failed ({e}); check [channels.slack] bot_token and api_url (`butler doctor`)"),
    })?;
    if let Some(routes) = channel.routes(ingress) {
        built.routes = std::mem::take(&mut built.routes).merge(routes);
    }
    built.files.insert(butler_slack::CHANNEL.into(), channel.files());
    built.channels.push(Arc::new(channel));
    Ok(())
}

pub async fn doctor(cfg: &SlackConfig) -> Check {
    let what = "slack".to_string();
    let s = settings(cfg, &Gate::local());
    let reach =
        match (&s.signing_secret, &s.app_token) {
            (_, Some(_)) => "Socket Mode (app_token)",
            (Some(_), None) => "Events API over HTTP (signing_secret)",
            (None, None) => return (
                what,
                Err((
                    "neither signing_secret nor app_token is set, so Slack cannot reach Butler".into(),
                    "set [channels.slack] signing_secret (Basic Information > App Credentials; Slack then POSTs to \
                     /channels/slack/events) or app_token (an xapp- token with connections:write, for Socket Mode)"
                        .into(),
                )),
            ),
        };
    if s.app_token.as_deref().is_some_and(|t| !t.starts_with("xapp-")) {
        return (
            what,
            Err((
                "app_token is not an app-level token (they start with xapp-)".into(),
                "create one under Basic Information > App-Level Tokens with the scope connections:write".into(),
            )),
        );
    }
    match butler_slack::check_token(&s.api_url, &s.bot_token).await {
        Ok(a) => {
            let name = a.user.as_deref().map_or_else(String::new, |u| format!("@{u} "));
            let detail =
                format!("auth.test accepted the bot token: {name}({}) in {}; receiving by {reach}", a.user_id, a.team);
            (what, Ok(detail))
        }
        Err(e @ butler_channel::ChannelError::Unauthorized(_)) => (
            what,
            Err((
                format!("auth.test refused the bot token: {e}"),
                "install the app to the workspace and copy the Bot User OAuth Token (xoxb-...) from OAuth & \
                 Permissions into [channels.slack] bot_token (see README, Slack)"
                    .into(),
            )),
        ),
        Err(e) => (
            what,
            Err((
                format!("auth.test failed at {}: {e}", s.api_url),
                "check that Butler can reach Slack (network, proxy) and that [channels.slack] api_url is right".into(),
            )),
        ),
    }
}
