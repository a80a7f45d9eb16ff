//! The Matrix channel end to end against a real Synapse on 127.0.0.1 (tests/support/synapse.rs,
//! one per test): Butler's real adapter logs in as its own user with end-to-end encryption, and
//! the people are second matrix-sdk clients with encryption of their own (`Person`); the fake
//! LLM is the model. `rooms.rs`: encrypted DMs, invites, groups and mentions, formatting,
//! replies, receipts; `more.rs`: streaming edits, approvals by reaction and by number, files
//! both ways, `butler doctor`.

/// Only the Matrix binaries compile the people's client (matrix-sdk is heavy to build).
#[path = "../support/matrix_person.rs"]
pub mod matrix_person;
#[path = "../support/mod.rs"]
mod support;

pub use support::app::settle;

mod more;
mod rooms;

use butler::channels::MatrixConfig;
use butler::config::Secret;
pub use matrix_person::{Person, Seen};
use matrix_sdk::ruma::OwnedRoomId;
use support::app::{config_in, TestApp};
use support::fake_llm::FakeLlm;
use support::synapse::Synapse;

pub const BUTLER_PASSWORD: &str = "butler-matrix-pw-4";

/// `[channels.matrix]` for Butler on `hs`, its store in `dir`, invites taken from `allowed`.
pub fn matrix(hs: &Synapse, dir: &std::path::Path, allowed: &[&str]) -> MatrixConfig {
    MatrixConfig {
        homeserver: hs.url(),
        user_id: format!("@butler:{}", support::synapse::SERVER_NAME),
        password: Secret::new(BUTLER_PASSWORD),
        access_token: Secret::new(""),
        device_id: None,
        store_path: Some(dir.join("matrix").display().to_string()),
        allowed: allowed.iter().map(|a| a.to_string()).collect(),
    }
}

/// A Synapse with Butler's account, Alice (the owner, allowed to invite), Bob (allowed to talk,
/// not to invite) and Mallory (neither), Butler running with Matrix, and the fake LLM.
pub struct Mx {
    pub app: TestApp,
    pub hs: Synapse,
    pub llm: FakeLlm,
    pub alice: Person,
    pub bob: Person,
    pub butler: String,
}

impl Mx {
    pub async fn start() -> Self {
        Self::start_with(vec![]).await
    }

    pub async fn start_with(tools: Vec<std::sync::Arc<dyn butler::tools::Tool>>) -> Self {
        let hs = Synapse::start().await;
        let butler = hs.register("butler", BUTLER_PASSWORD).await;
        let alice = Person::register(&hs, "alice").await;
        let bob = Person::register(&hs, "bob").await;
        let llm = FakeLlm::start().await;
        let app = Self::app(&hs, &llm, &alice, &bob, None, tools).await;
        Self { app, hs, llm, alice, bob, butler }
    }

    /// Butler on `dir` (fresh when `None`): its database and its Matrix store.
    pub async fn app(
        hs: &Synapse,
        llm: &FakeLlm,
        alice: &Person,
        bob: &Person,
        dir: Option<tempfile::TempDir>,
        tools: Vec<std::sync::Arc<dyn butler::tools::Tool>>,
    ) -> TestApp {
        let (mut cfg, dir) = config_in(Some(&llm.openai_url()), dir);
        cfg.channels.set("matrix", matrix(hs, dir.path(), &[&alice.user_id]).to_table());
        cfg.access.owners = vec![format!("matrix:{}", alice.user_id).parse().unwrap()];
        cfg.access.allow = vec![format!("matrix:{}", bob.user_id).parse().unwrap()];
        TestApp::start_with(cfg, Some(dir), tools).await
    }

    /// An encrypted DM from Alice that Butler has joined.
    pub async fn alice_dm(&self) -> OwnedRoomId {
        let room = self.alice.create_room(&[&self.butler], true, true).await;
        self.alice.wait_member(&room, &self.butler, true, 30).await;
        room
    }

    pub async fn stop(self) {
        self.app.stop().await;
    }
}
