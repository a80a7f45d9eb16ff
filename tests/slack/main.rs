//! Slack: a team bot that answers in threads and acts, with approvals by the right people.
//! Every test runs a real Butler against the fake Slack of tests/support/fake_slack.rs (the real
//! slack-morphism client pointed at it through `api_url`), with Slack's side of the traffic
//! signed as Slack signs it, and the recorded payloads of tests/fixtures/slack replayed.

#[path = "../support/mod.rs"]
mod support;

mod acting;
mod approvals;
mod conversations;
mod details;
mod doctor;
mod limits;
mod media;
mod previews;
mod rendering;
mod signatures;
mod socket;

use butler::channels::SlackConfig;
use butler::config::{Config, Secret};
use std::sync::Arc;
use support::app::{config, TestApp};
use support::fake_llm::FakeLlm;
use support::fake_slack::{FakeSlack, Sender, APP_TOKEN, BOT_TOKEN};

/// Slack's documented example signing secret.
pub const SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
pub const ALICE: &str = "UALICE";
pub const BOB: &str = "UBOB";
pub const BOSS: &str = "UBOSS";
pub const OWNER: &str = "UOWNER";

/// A Butler with Slack, the fake Slack and the fake LLM.
pub struct Rig {
    pub app: TestApp,
    pub slack: FakeSlack,
    pub llm: FakeLlm,
    /// Slack's side: signed POSTs to Butler.
    pub send: Sender,
    pub touch: Arc<Touch>,
}

/// A change to the test config.
pub type Tweak = Box<dyn FnOnce(&mut Config)>;

/// How a test wants Butler set up.
#[derive(Default)]
pub struct Setup {
    /// Socket Mode (app token, no signing secret) instead of the HTTP endpoints.
    pub socket: bool,
    /// Changes to the config after the defaults below.
    pub tweak: Option<Tweak>,
    /// Tools besides the built-ins and `touch`.
    pub tools: Vec<Arc<dyn butler::tools::Tool>>,
}

/// Starts everything: Alice, Bob and the boss may talk (members), UOWNER is the owner.
pub async fn start(setup: Setup) -> Rig {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let slack = FakeSlack::start().await;
    for (id, name, display) in
        [(ALICE, "alice", "Alice"), (BOB, "bob", "Bob"), (BOSS, "boss", "Boss"), (OWNER, "owner", "Owen")]
    {
        slack.add_user(id, name, display);
    }
    let llm = FakeLlm::start().await;
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    let section = SlackConfig {
        bot_token: Secret::new(BOT_TOKEN),
        signing_secret: (!setup.socket).then(|| Secret::new(SECRET)),
        app_token: setup.socket.then(|| Secret::new(APP_TOKEN)),
        api_url: slack.api_url(),
        working_reaction: "eyes".into(),
        remembered_threads: 1000,
        link_previews: false,
    };
    cfg.channels.set("slack", section.to_table());
    cfg.access.owners = vec![format!("slack:{OWNER}").parse().unwrap()];
    cfg.access.allow = [ALICE, BOB, BOSS].iter().map(|u| format!("slack:{u}").parse().unwrap()).collect();
    if let Some(tweak) = setup.tweak {
        tweak(&mut cfg);
    }
    butler::app::check_config(&cfg).expect("a valid test config");
    let touch = Touch::new();
    let mut tools: Vec<Arc<dyn butler::tools::Tool>> = vec![touch.clone()];
    tools.extend(setup.tools);
    let app = TestApp::start_with(cfg, Some(dir), tools).await;
    let send = Sender::new(&app.base, SECRET);
    Rig { app, slack, llm, send, touch }
}

impl Rig {
    /// Whether the inbox holds the event with this Slack event id.
    pub async fn stored(&self, event_id: &str) -> bool {
        self.app.app.store.inbox_get(&format!("slack:event:{event_id}")).await.unwrap().is_some()
    }
}

pub use support::touch::Touch;
