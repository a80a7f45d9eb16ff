//! The WhatsApp channel end to end: the real adapter inside Butler talks to the fake Graph API
//! (tests/support/fake_whatsapp.rs) through `api_url`, and the fake signs webhook deliveries as
//! Meta does; the fake LLM is the model. `webhook.rs`: the handshake, signatures, redeliveries,
//! status callbacks and the documented payloads; `turns.rs`: answers, long answers, WhatsApp
//! formatting, approvals by reply buttons, refusals of the Graph API.

#[path = "../support/mod.rs"]
mod support;

pub use support::app::settle;

mod files;
mod turns;
mod webhook;

use butler::channels::WhatsAppConfig;
use butler::config::Secret;
use support::app::{config, TestApp};
use support::fake_llm::FakeLlm;
use support::fake_whatsapp::{FakeWhatsApp, APP_SECRET, PHONE_NUMBER_ID, TOKEN, VERIFY_TOKEN};

/// The owner's WhatsApp id.
pub const OWNER: &str = "16505550111";
/// Another allowed person.
pub const ALICE: &str = "16505550222";
/// Someone who may talk to Butler but decides nothing of Alice's.
pub const MALLORY: &str = "16505550333";

/// `[channels.whatsapp]` pointing at the fake.
pub fn whatsapp(fake: &FakeWhatsApp) -> WhatsAppConfig {
    WhatsAppConfig {
        access_token: Secret::new(TOKEN),
        phone_number_id: PHONE_NUMBER_ID.into(),
        app_secret: Secret::new(APP_SECRET),
        verify_token: Secret::new(VERIFY_TOKEN),
        api_url: fake.api_url(),
        briefing_template: None,
        template_language: "en_US".into(),
    }
}

/// A running Butler with WhatsApp against a fresh fake, and the fake LLM.
pub struct Wa {
    pub app: TestApp,
    pub fake: FakeWhatsApp,
    pub llm: FakeLlm,
}

impl Wa {
    pub async fn start() -> Self {
        Self::start_with(vec![]).await
    }

    pub async fn start_with(tools: Vec<std::sync::Arc<dyn butler::tools::Tool>>) -> Self {
        Self::start_full(tools, |_| {}).await
    }

    /// `tweak` adjusts `[channels.whatsapp]` before start.
    pub async fn start_full(
        tools: Vec<std::sync::Arc<dyn butler::tools::Tool>>,
        tweak: impl FnOnce(&mut WhatsAppConfig),
    ) -> Self {
        Self::start_config(tools, tweak, |_| {}).await
    }

    /// `tweak` adjusts `[channels.whatsapp]`, `other` the rest of the config, before start.
    pub async fn start_config(
        tools: Vec<std::sync::Arc<dyn butler::tools::Tool>>,
        tweak: impl FnOnce(&mut WhatsAppConfig),
        other: impl FnOnce(&mut butler::config::Config),
    ) -> Self {
        let fake = FakeWhatsApp::start().await;
        let llm = FakeLlm::start().await;
        let (mut cfg, dir) = config(Some(&llm.openai_url()));
        let mut section = whatsapp(&fake);
        tweak(&mut section);
        cfg.channels.set("whatsapp", section.to_table());
        other(&mut cfg);
        cfg.access.owners = vec![format!("whatsapp:{OWNER}").parse().unwrap()];
        cfg.access.allow =
            vec![format!("whatsapp:{ALICE}").parse().unwrap(), format!("whatsapp:{MALLORY}").parse().unwrap()];
        let app = TestApp::start_with(cfg, Some(dir), tools).await;
        Self { app, fake, llm }
    }

    /// Delivers a signed payload to Butler's webhook; the HTTP status.
    pub async fn deliver(&self, payload: &serde_json::Value) -> u16 {
        self.fake.deliver(&self.app.base, payload).await
    }

    pub async fn stop(self) {
        self.app.stop().await;
    }
}
