//! Who may talk to Butler, end to end through triage: identities and `/link`, pairing, policies,
//! groups, commands answered without the model, and the record of every decision. Driven through
//! the web chat and a fake group-capable chat platform (tests/support/fake_channel.rs).

#[path = "../support/mod.rs"]
mod support;

mod commands;
mod groups;
mod identities;
mod pairing;

use butler::config::Config;
use std::sync::Arc;
use support::app::{config, TestApp};
use support::fake_channel::FakeChannel;
use support::fake_llm::FakeLlm;

/// A Butler with the fake LLM and the fake platform `chat`, its owner `chat:owner`.
pub async fn start(adjust: impl FnOnce(&mut Config)) -> (TestApp, Arc<FakeChannel>, FakeLlm) {
    let llm = FakeLlm::start().await;
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    cfg.access.owners = vec!["chat:owner".parse().unwrap()];
    adjust(&mut cfg);
    let chat = FakeChannel::new("chat");
    let app = TestApp::start_full(cfg, Some(dir), vec![], vec![chat.clone()]).await;
    (app, chat, llm)
}

/// The decisions recorded so far, as (decision, actor) pairs, oldest first.
pub async fn decisions(app: &TestApp) -> Vec<(String, String)> {
    let mut rows = app.app.store.decisions_recent(1000).await.unwrap();
    rows.reverse();
    rows.into_iter().map(|d| (d.decision, d.actor)).collect()
}
