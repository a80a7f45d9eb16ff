//! The Telegram channel end to end: the real teloxide client inside Butler talks to the fake Bot
//! API (tests/support/fake_telegram.rs) through `api_url`, with the fake LLM as the model.
//! One module per promise of the channel: intake modes, normalization, rendering and
//! streaming, approvals, rate limits, durability, commands and doctor, files in and out.

#[path = "../support/mod.rs"]
mod support;

pub use support::app::settle;

mod approvals;
mod attachments;
mod details;
mod doctor;
mod durability;
mod media;
mod modes;
mod normalize;
mod owner;
mod previews;
mod ratelimit;
mod render;
mod unreadable;

use butler::channels::{TelegramConfig, TelegramMode};
use butler::config::Secret;
use support::app::{config, TestApp};
use support::fake_llm::FakeLlm;
use support::fake_telegram::FakeTelegram;

pub const TOKEN: &str = "123456:TEST-fake-token";
/// The owner's Telegram user id (a DM with the owner is chat 111).
pub const OWNER: i64 = 111;
/// Another allowed person.
pub const ALICE: i64 = 222;
/// Someone who may talk but is not an approver of the owner's requests.
pub const MALLORY: i64 = 333;
pub const GROUP: i64 = -1_001_234_567_890;

pub fn tls() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// `[channels.telegram]` pointing at the fake, in polling mode.
pub fn telegram(fake: &FakeTelegram) -> TelegramConfig {
    TelegramConfig {
        token: Secret::new(TOKEN),
        api_url: fake.api_url(),
        mode: TelegramMode::Polling,
        webhook_secret: None,
        webhook_url: None,
        poll_timeout_secs: 5,
        max_per_second: 30,
        chat_interval_ms: 1000,
        link_previews: false,
    }
}

/// A running Butler with Telegram (polling) against a fresh fake, and the fake LLM.
pub struct Tg {
    pub app: TestApp,
    pub fake: FakeTelegram,
    pub llm: FakeLlm,
}

impl Tg {
    pub async fn start() -> Self {
        Self::start_with(|_| {}, vec![]).await
    }

    /// `tweak` adjusts the config (e.g. webhook mode) before start.
    pub async fn start_with(
        tweak: impl FnOnce(&mut butler::config::Config),
        tools: Vec<std::sync::Arc<dyn butler::tools::Tool>>,
    ) -> Self {
        tls();
        let fake = FakeTelegram::start(TOKEN).await;
        let llm = FakeLlm::start().await;
        let (mut cfg, dir) = config(Some(&llm.openai_url()));
        cfg.channels.set("telegram", telegram(&fake).to_table());
        cfg.access.owners = vec![format!("telegram:{OWNER}").parse().unwrap()];
        cfg.access.allow =
            vec![format!("telegram:{ALICE}").parse().unwrap(), format!("telegram:{MALLORY}").parse().unwrap()];
        tweak(&mut cfg);
        let app = TestApp::start_with(cfg, Some(dir), tools).await;
        Self { app, fake, llm }
    }

    /// Waits until Butler is long-polling (registration done).
    pub async fn polling(&self) {
        self.fake.wait_calls("getUpdates", 1, 10).await;
    }

    /// Waits until `chat` shows `n` messages whose text satisfies nothing in particular and
    /// no draft is pending (the last sendMessage/edit settled); returns their texts.
    pub async fn texts(&self, chat: i64, n: usize) -> Vec<String> {
        let shown = self.fake.wait_chat(chat, 20, &format!("{n} messages"), |m| m.len() >= n).await;
        shown.into_iter().map(|m| m.text).collect()
    }

    pub async fn stop(self) {
        self.app.stop().await;
    }
}
