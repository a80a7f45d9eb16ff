//! Hooks around tool calls in a real turn: a pre_tool_use hook that blocks turns the call into
//! an error result with its reason (audited); a hook that hangs or crashes never hangs or
//! crashes the turn; post_tool_use hooks see the result.

use crate::support::app::{config, TestApp};
use crate::support::fake_llm::{FakeLlm, Reply};
use crate::{wait_for, Peek};
use butler::config::{HookConfig, HookEvent, HookKind};
use serde_json::json;
use std::sync::atomic::Ordering;

fn hook(event: HookEvent, command: &str, timeout_secs: u64, block_on_failure: bool) -> HookConfig {
    HookConfig {
        event,
        kind: HookKind::Command,
        command: Some(command.to_string()),
        url: None,
        matcher: "peek".into(),
        timeout_secs,
        block_on_failure,
        sandbox: false,
        network: false,
    }
}

fn replied(m: &[serde_json::Value], text: &str) -> bool {
    m.iter().any(|x| x["role"] == "assistant" && x["text"].as_str().unwrap_or("").ends_with(text))
}

#[tokio::test]
async fn a_blocking_pre_hook_refuses_the_call_with_its_reason() {
    let llm = FakeLlm::start().await;
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    cfg.hooks = vec![hook(HookEvent::PreToolUse, "echo 'peeking is not allowed today' >&2; exit 2", 5, false)];
    let peek = Peek::new();
    let app = TestApp::start_with(cfg, Some(dir), vec![peek.clone()]).await;
    llm.on("peek", Reply::tool_call("peek", json!({})));
    llm.on("peek", Reply::text("The hook said no."));
    app.post("h1", "local", "peek please").await;
    wait_for(&app, "h1", "the answer", |m| replied(m, "The hook said no.")).await;
    assert_eq!(peek.runs.load(Ordering::SeqCst), 0);
    let result = llm.last_request().unwrap().last_tool_result().unwrap();
    assert_eq!(result, "error: blocked by a hook: peeking is not allowed today");
    let audit = app.app.store.audit_recent(5).await.unwrap();
    assert_eq!((audit[0].outcome.as_str(), audit[0].reason.as_str()), ("blocked", "peeking is not allowed today"));
    app.stop().await;
}

#[tokio::test]
async fn hanging_or_crashing_hooks_never_hang_the_turn() {
    let llm = FakeLlm::start().await;
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    let seen = dir.path().join("post.json");
    cfg.hooks = vec![
        hook(HookEvent::PreToolUse, "sleep 30", 1, false),
        hook(HookEvent::PreToolUse, "kill -SEGV $$", 5, false),
        hook(HookEvent::PostToolUse, &format!("cat > {}", seen.display()), 5, false),
        hook(HookEvent::PostToolUse, "sleep 30", 1, true),
    ];
    let peek = Peek::new();
    let app = TestApp::start_with(cfg, Some(dir), vec![peek.clone()]).await;
    llm.on("peek", Reply::tool_call("peek", json!({})));
    llm.on("peek", Reply::text("Quiet out there."));
    app.post("h2", "local", "peek please").await;
    wait_for(&app, "h2", "the answer", |m| replied(m, "Quiet out there.")).await;
    assert_eq!(peek.runs.load(Ordering::SeqCst), 1, "the call ran despite the broken hooks");
    let payload: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!((payload["event"].as_str(), payload["tool"].as_str()), (Some("post_tool_use"), Some("peek")));
    assert_eq!(payload["result"], "all quiet");
    app.stop().await;
}

#[tokio::test]
async fn session_hooks_see_sessions_start_and_end() {
    let llm = FakeLlm::start().await;
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    let log = dir.path().join("sessions.log");
    let append = |event: HookEvent| HookConfig {
        event,
        kind: HookKind::Command,
        command: Some(format!("echo \"$BUTLER_HOOK_EVENT $(cat)\" >> {}", log.display())),
        url: None,
        matcher: "*".into(),
        timeout_secs: 5,
        block_on_failure: false,
        sandbox: false,
        network: false,
    };
    cfg.hooks = vec![append(HookEvent::SessionStart), append(HookEvent::SessionEnd)];
    let app = TestApp::start(cfg, Some(dir)).await;
    app.post("s", "local", "hello").await;
    wait_for(&app, "s", "the echo", |m| replied(m, "echo: hello")).await;
    app.post("s", "local", "/new").await;
    wait_for(&app, "s", "the reset", |m| replied(m, "no longer sent to the model.")).await;
    let lines: Vec<String> = std::fs::read_to_string(&log).unwrap().lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[0].starts_with("session_start {") && lines[0].contains("\"key\":\"dm:web:s:local\""), "{lines:?}");
    assert!(lines[1].starts_with("session_end {"), "{lines:?}");
    app.stop().await;
}
