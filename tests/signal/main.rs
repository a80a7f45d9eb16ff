//! The Signal channel end to end: the real adapter inside Butler talks to the fake signal-cli
//! daemon (tests/support/fake_signal.rs: JSON-RPC and the Server-Sent Events stream) through
//! `[channels.signal] url`; the fake LLM is the model. `turns.rs`: answers, text styles, long
//! answers, groups and mentions, approvals by reaction and by numbered reply; `stream.rs`: the
//! event stream (redeliveries, reconnects, a restart), files both ways and `butler doctor`.

#[path = "../support/mod.rs"]
mod support;

pub use support::app::settle;

mod stream;
mod turns;

use butler::channels::SignalConfig;
use std::time::Duration;
use support::app::{config_in, TestApp};
use support::fake_llm::FakeLlm;
use support::fake_signal::{FakeSignal, ACCOUNT};

/// The owner's number.
pub const OWNER: &str = "+15550000111";
/// Another allowed person.
pub const ALICE: &str = "+15550000222";
/// Someone who may talk to Butler but decides nothing of Alice's.
pub const MALLORY: &str = "+15550000333";
/// A group the three share (standard base64, with `+` and `/`).
pub const GROUP: &str = "kC1z+aB/9xQ=";
/// The group as Butler's conversation id.
pub const GROUP_CONVERSATION: &str = "group:kC1z-aB_9xQ=";

/// `[channels.signal]` pointing at the fake.
pub fn signal(fake: &FakeSignal) -> SignalConfig {
    SignalConfig { url: fake.url(), account: ACCOUNT.into() }
}

/// A running Butler with Signal against a fake daemon, and the fake LLM.
pub struct Sg {
    pub app: TestApp,
    pub fake: FakeSignal,
    pub llm: FakeLlm,
}

impl Sg {
    pub async fn start() -> Self {
        Self::start_with(vec![]).await
    }

    pub async fn start_with(tools: Vec<std::sync::Arc<dyn butler::tools::Tool>>) -> Self {
        let fake = FakeSignal::start().await;
        let llm = FakeLlm::start().await;
        let app = Self::app(&fake, &llm, None, tools).await;
        Self { app, fake, llm }
    }

    /// Butler on `dir`'s database (a fresh one when `None`), with Signal and the people above.
    pub async fn app(
        fake: &FakeSignal,
        llm: &FakeLlm,
        dir: Option<tempfile::TempDir>,
        tools: Vec<std::sync::Arc<dyn butler::tools::Tool>>,
    ) -> TestApp {
        let (mut cfg, dir) = config_in(Some(&llm.openai_url()), dir);
        cfg.channels.set("signal", signal(fake).to_table());
        cfg.access.owners = vec![format!("signal:{OWNER}").parse().unwrap()];
        cfg.access.allow =
            vec![format!("signal:{ALICE}").parse().unwrap(), format!("signal:{MALLORY}").parse().unwrap()];
        TestApp::start_with(cfg, Some(dir), tools).await
    }

    pub async fn stop(self) {
        self.app.stop().await;
    }
}

/// Waits until the fake has seen an event stream connect (Butler listens).
pub async fn listening(fake: &FakeSignal) {
    for _ in 0..200 {
        if fake.streams_open() > 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("Butler never opened the event stream");
}
