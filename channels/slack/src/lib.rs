//! Butler's Slack channel, on slack-morphism (its hyper Web API client and Block Kit models).
//!
//! In: the Events API, interactivity (button clicks) and slash commands, over HTTP
//! ([`SlackChannel::routes`]: `POST /channels/slack/events`, `/interactive`, `/commands`,
//! signature-checked) or over Socket Mode ([`Channel::run`] when an app-level token is set).
//! Both paths map the same payloads to the same [`butler_channel::InboundEvent`]s and
//! acknowledge Slack only after [`Ingress::accept`] returned `Ok`.
//!
//! Out: Markdown rendered to mrkdwn in Block Kit sections (<= 3,000 characters each), buttons
//! as an actions block, always in the conversation's thread; edits by chat.update at most once
//! a second per message; private answers to clicks as ephemeral messages; `#name` targets
//! resolved to channel ids; 429s held per method and reported as `RateLimited` so the outbox
//! retries later. Links and media are not unfurled unless `link_previews` allows it.
//!
//! Files: shared files arrive as the event's attachments and are fetched with the bot token
//! from Slack's file host only ([`SlackFiles`]); Butler's own files go out through Slack's
//! external upload flow, in the conversation's thread, with the text as their comment.
//!
//! This crate knows Slack and nothing else: it must never touch a database, Redis or an LLM,
//! never import Butler's root crate, and never log a token, a signing secret or a body.

mod api;
mod attach;
mod blocks;
mod channel;
mod files;
mod http;
#[doc(hidden)] // public for the fuzz targets (fuzz/)
pub mod inbound;
#[doc(hidden)] // public for the fuzz targets (fuzz/)
pub mod interact;
mod limit;
mod receive;
pub mod render;
mod socket;
#[cfg(test)]
mod tests;
mod upload;
pub mod verify;

pub use api::AuthInfo;
pub use blocks::{BLOCKS_MAX, MESSAGE_MAX, SECTION_MAX};
pub use files::{SlackFiles, FILES_READ_FIX, FILE_HOST};
pub use http::{COMMANDS_PATH, EVENTS_PATH, INTERACTIVE_PATH};

use api::Api;
use butler_channel::limit::Gate;
use butler_channel::{ChannelError, Ingress};
use files::Transfer;
use inbound::{Me, Threads};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, Weak};
use tokio_util::task::TaskTracker;

/// The channel name in identities and conversations: `slack:U2CERLKJA`, `slack:C024BE91L/1355517523.000005`.
pub const CHANNEL: &str = "slack";

/// How the adapter is set up (from `[channels.slack]`).
#[derive(Clone)]
pub struct SlackSettings {
    /// `xoxb-...`
    pub bot_token: String,
    /// Verifies the HTTP endpoints; without it they are not mounted.
    pub signing_secret: Option<String>,
    /// `xapp-...`: Socket Mode.
    pub app_token: Option<String>,
    /// The Web API base, e.g. `https://slack.com/api`.
    pub api_url: String,
    /// Threads remembered as Butler's (replies there need no mention); oldest forgotten first.
    pub remembered_threads: usize,
    /// Emoji name put on a message while Butler works on it (removed with the answer); None: off.
    pub working_reaction: Option<String>,
    /// Where per-method holds are kept: this process's, or the replicas' shared gate (which
    /// also counts refused requests on the signed endpoints).
    pub gate: Gate,
    /// Let Slack unfurl links and media in Butler's messages; false: every post and update
    /// asks for none.
    pub link_previews: bool,
}

impl std::fmt::Debug for SlackSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlackSettings")
            .field("api_url", &self.api_url)
            .field("http", &self.signing_secret.is_some())
            .field("socket_mode", &self.app_token.is_some())
            .field("gate", &self.gate)
            .field("link_previews", &self.link_previews)
            .finish_non_exhaustive()
    }
}

/// State shared by the receiving paths and the sending side.
pub(crate) struct Shared {
    api: Api,
    /// Downloads and uploads of files over plain HTTP.
    transfer: Transfer,
    me: Me,
    threads: Threads,
    settings: SlackSettings,
    /// users.info results (None: no name).
    names: Mutex<HashMap<String, Option<String>>>,
    /// `#name` -> channel id.
    channel_ids: Mutex<HashMap<String, String>>,
    /// Messages carrying Butler's working reaction, by conversation (`slack:C1/ts`), oldest
    /// first: (channel, ts).
    working: Mutex<HashMap<String, VecDeque<(String, String)>>>,
    /// When each recent message was last posted or updated (for the 1 s edit spacing).
    touched: Mutex<HashMap<String, tokio::time::Instant>>,
    /// Background calls (reactions), awaited when the channel stops.
    tasks: TaskTracker,
    /// Itself, for background tasks (which must not keep it alive).
    this: Weak<Shared>,
}

/// The Slack channel: a [`butler_channel::Channel`] plus its HTTP routes.
#[derive(Clone)]
pub struct SlackChannel {
    shared: Arc<Shared>,
}

/// Checks a bot token with auth.test (for `butler doctor` and at start).
pub async fn check_token(api_url: &str, bot_token: &str) -> Result<AuthInfo, ChannelError> {
    Api::new(api_url, bot_token, None, Gate::local()).auth_test().await
}

impl Shared {
    /// A channel's state without calling Slack (the API at an address that refuses
    /// connections), for unit tests of the receiving paths.
    #[cfg(test)]
    pub(crate) fn for_tests(settings: SlackSettings) -> Arc<Self> {
        let api =
            Api::new(&settings.api_url, &settings.bot_token, settings.app_token.as_deref(), settings.gate.clone())
                .link_previews(settings.link_previews);
        let transfer = Transfer::new(&settings.api_url, &settings.bot_token, &api.tls()).expect("an HTTP client");
        Arc::new_cyclic(|this| Shared {
            this: this.clone(),
            api,
            transfer,
            me: Me { user_id: "UBUTLER".into(), bot_id: Some("BBUTLER".into()) },
            threads: Threads::new(settings.remembered_threads),
            settings,
            names: Mutex::default(),
            channel_ids: Mutex::default(),
            working: Mutex::default(),
            touched: Mutex::default(),
            tasks: TaskTracker::new(),
        })
    }
}

impl SlackChannel {
    /// Checks the token (auth.test, which also says who Butler is on Slack) and builds the
    /// channel.
    pub async fn connect(settings: SlackSettings) -> Result<Self, ChannelError> {
        let api =
            Api::new(&settings.api_url, &settings.bot_token, settings.app_token.as_deref(), settings.gate.clone())
                .link_previews(settings.link_previews);
        let auth = api.auth_test().await?;
        tracing::info!(team = %auth.team, bot_user = %auth.user_id, "Slack bot token accepted");
        let transfer = Transfer::new(&settings.api_url, &settings.bot_token, &api.tls())?;
        let shared = Arc::new_cyclic(|this| Shared {
            this: this.clone(),
            api,
            transfer,
            me: Me { user_id: auth.user_id, bot_id: auth.bot_id },
            threads: Threads::new(settings.remembered_threads),
            settings,
            names: Mutex::default(),
            channel_ids: Mutex::default(),
            working: Mutex::default(),
            touched: Mutex::default(),
            tasks: TaskTracker::new(),
        });
        Ok(Self { shared })
    }

    /// Butler's own Slack user id.
    pub fn bot_user_id(&self) -> &str {
        &self.shared.me.user_id
    }

    /// How Butler downloads the files people share here (with the bot token, from Slack only).
    pub fn files(&self) -> Arc<dyn butler_channel::FileSource> {
        Arc::new(SlackFiles::new(self.shared.clone()))
    }

    /// The HTTP endpoints (events, interactive, commands), or None without a signing secret
    /// (Socket Mode only).
    pub fn routes(&self, ingress: Arc<dyn Ingress>) -> Option<axum::Router> {
        let secret = self.shared.settings.signing_secret.as_deref().filter(|s| !s.is_empty())?;
        Some(http::routes(self.shared.clone(), ingress, secret))
    }
}
