//! The Discord channel end to end: a real Butler (its serenity-based Discord channel included)
//! against the fake Discord in tests/support (REST + gateway websocket), replaying the payloads
//! in tests/fixtures/discord. One module per point of the issue:
//! `gateway` (intents, DMs, mentions, replies, threads; drops, Resume, fresh Identify),
//! `approvals` (buttons, deferred acknowledgement, ephemeral refusals, the edited outcome),
//! `details` (what each approval request shows of the call, a long one cut and attached whole),
//! `endpoint` (the signed HTTP interactions endpoint, RFC 8032 vectors, PING/PONG),
//! `delivery` (rendering, 2,000-character chunks, typing, streaming edits, 429s),
//! `doctor` (`butler doctor` with users/@me, config validation), `durable` (the adapter on
//! its own with a failing inbox: nothing counts as processed, or is acknowledged, before it is
//! stored), `media` (attachments in, downloads from the CDN only, files out as multipart), and
//! `previews` (no link previews unless `link_previews = true`).

#[path = "../support/mod.rs"]
mod support;

mod approvals;
mod delivery;
mod details;
mod doctor;
mod durable;
mod endpoint;
mod gateway;
mod media;
mod previews;

use butler::channels::DiscordConfig;
use butler::config::{Config, Secret};
use butler::tools::Tool;
use serde_json::Value;
use std::sync::Arc;
use support::app::{config, TestApp};
use support::fake_discord::payloads::{user, UserMessage};
use support::fake_discord::{FakeDiscord, TOKEN};
use support::fake_llm::FakeLlm;

pub const ALICE: &str = "2000000000000000001";
pub const BOB: &str = "2000000000000000002";
/// A DM channel, a guild text channel, a thread in it.
pub const DM: &str = "3000000000000000001";
pub const GENERAL: &str = "3000000000000000002";
pub const THREAD: &str = "3000000000000000003";

pub fn alice() -> Value {
    user(ALICE, "alice")
}

pub fn bob() -> Value {
    user(BOB, "bob")
}

/// A running Butler with its Discord channel on the fake.
pub struct Rig {
    pub app: TestApp,
    pub discord: FakeDiscord,
    pub llm: FakeLlm,
}

impl Rig {
    /// Butler on a fresh fake Discord; alice is an owner, bob may talk.
    pub async fn start() -> Self {
        Self::start_on(FakeDiscord::start().await, vec![], |_| {}).await
    }

    /// Butler on `discord` (already adjusted by the test), with extra tools and config changes.
    pub async fn start_on(discord: FakeDiscord, tools: Vec<Arc<dyn Tool>>, adjust: impl FnOnce(&mut Config)) -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let llm = FakeLlm::start().await;
        let (mut cfg, dir) = config(Some(&llm.openai_url()));
        let section =
            DiscordConfig { token: Secret::new(TOKEN), public_key: None, api_url: discord.url(), link_previews: false };
        cfg.channels.set("discord", section.to_table());
        cfg.access.owners = vec![format!("discord:{ALICE}").parse().unwrap()];
        cfg.access.allow = vec![format!("discord:{BOB}").parse().unwrap()];
        adjust(&mut cfg);
        let app = TestApp::start_full(cfg, Some(dir), tools, vec![]).await;
        discord.wait_connected().await;
        Self { app, discord, llm }
    }

    /// `author` writes `text` in a DM with Butler.
    pub fn dm(&self, author: &Value, text: &str) -> Value {
        self.discord.post(UserMessage::new(&self.discord.snowflake(), DM, author, text))
    }

    /// `author` writes `text` in a guild channel (or thread), shaped by `f`.
    pub fn say(&self, channel: &str, author: &Value, text: &str, f: impl FnOnce(UserMessage) -> UserMessage) -> Value {
        self.discord.post(f(UserMessage::new(&self.discord.snowflake(), channel, author, text).in_guild()))
    }

    pub async fn stop(self) {
        self.app.stop().await;
    }
}
