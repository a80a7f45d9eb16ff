//! `[channels.slack]` -> the Slack channel (channels/slack): the section's type and checks,
//! its `butler init` section, its settings, its HTTP routes
//! (`/channels/slack/events`, `/interactive`, `/commands`, mounted when a signing secret is
//! set), its file source (shared files fetched with the bot token), and the `butler doctor` check (the bot token through auth.test, and a way for Slack
//! to reach Butler: a signing secret or an app-level token).
//!
//! It must never hold Slack logic or print a secret: mapping config to settings is all it does.

use super::built::{BuildError, Built, Check};
use super::registry::{Context, Platform};
use crate::config::{Problems, Secret};
use butler_channel::limit::Gate;
use butler_slack::{SlackChannel, SlackSettings};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

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
    /// Let Slack unfurl links and media; false: every post and update asks for none (an unfurl
    /// fetches the link at once, so a link with a secret in it would leak without a click).
    #[serde(default)]
    pub link_previews: bool,
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

impl SlackConfig {
    /// This section as a `[channels.slack]` table, secrets included.
    pub fn to_table(&self) -> toml::Table {
        let secrets = [
            ("bot_token", Some(&self.bot_token)),
            ("signing_secret", self.signing_secret.as_ref()),
            ("app_token", self.app_token.as_ref()),
        ];
        super::built::section_table(self, &secrets)
    }
}

/// The Slack channel's registry entry.
pub struct Slack;

fn settings(cfg: &SlackConfig, gate: &Gate) -> SlackSettings {
    let nonempty = |s: Option<&Secret>| s.filter(|s| !s.is_empty()).map(|s| s.expose().to_string());
    SlackSettings {
        bot_token: cfg.bot_token.expose().to_string(),
        signing_secret: nonempty(cfg.signing_secret.as_ref()),
        app_token: nonempty(cfg.app_token.as_ref()),
        api_url: cfg.api_url.clone(),
        remembered_threads: cfg.remembered_threads,
        working_reaction: Some(cfg.working_reaction.trim().to_string()).filter(|r| !r.is_empty()),
        gate: gate.clone(),
        link_previews: cfg.link_previews,
    }
}

#[async_trait::async_trait]
impl Platform for Slack {
    const NAME: &'static str = "slack";
    const INIT: &'static str =
        "# Slack (README, Slack; the app manifest is deploy/slack-manifest.yaml): uncomment and fill in.\n\
         # [channels.slack]\n# bot_token = \"${SLACK_BOT_TOKEN}\"            # xoxb-...\n\
         # signing_secret = \"${SLACK_SIGNING_SECRET}\"  # Events API over HTTP, or instead:\n\
         # app_token = \"${SLACK_APP_TOKEN}\"            # xapp-..., Socket Mode\n\n";
    type Section = SlackConfig;

    /// `[channels.slack]`: a bot token, and a way for Slack to reach Butler (a signing secret
    /// for the HTTP endpoints, or an app-level token for Socket Mode).
    fn check(&self, s: &SlackConfig, p: &mut Problems) {
        if s.bot_token.expose().trim().is_empty() {
            p.add("channels.slack.bot_token", "is empty; set the Bot User OAuth Token (xoxb-...) of your Slack app");
        }
        let set = |v: &Option<Secret>| v.as_ref().is_some_and(|v| !v.expose().trim().is_empty());
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

    async fn build(&self, cfg: SlackConfig, cx: &Context<'_>, built: &mut Built) -> Result<(), BuildError> {
        let channel = SlackChannel::connect(settings(&cfg, cx.gate)).await.map_err(|e| BuildError {
            channel: "slack",
            message: format!("auth.test failed ({e}); check [channels.slack] bot_token and api_url (`butler doctor`)"),
        })?;
        if let Some(routes) = channel.routes(cx.ingress.clone()) {
            built.routes = std::mem::take(&mut built.routes).merge(routes);
        }
        built.files.insert(butler_slack::CHANNEL.into(), channel.files());
        built.channels.push(Arc::new(channel));
        Ok(())
    }

    async fn doctor(&self, cfg: &SlackConfig) -> Check {
        let what = "slack".to_string();
        let s = settings(cfg, &Gate::local());
        let reach = match (&s.signing_secret, &s.app_token) {
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
                let detail = format!(
                    "auth.test accepted the bot token: {name}({}) in {}; receiving by {reach}",
                    a.user_id, a.team
                );
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
                    "check that Butler can reach Slack (network, proxy) and that [channels.slack] api_url is right"
                        .into(),
                )),
            ),
        }
    }
}
