//! `[[hooks]]` run for real: `butler::hooks::Hooks` driven directly with command hooks (real
//! `/bin/sh` processes) and HTTP hooks (a local axum server), and the validation of the
//! configuration. Named `hookrun` because `tests/hooks` holds the webhook triggers.
//!
//! Sandboxed command hooks need `bwrap` (tests/run installs it).
//!
//! These tests must never assert wall-clock speed (the machine is shared and noisy): a hook that
//! must not hang is only bounded by a generous limit, and concurrency is shown by a handshake.
//! They never reach the network beyond 127.0.0.1, and every file a hook writes is in a temp dir.

#[path = "../support/mod.rs"]
mod support;

mod command;
mod config;
mod http;
mod outcome;
mod sandbox;

use butler::config::{HookConfig, HookEvent, HookKind};
use butler::hooks::{HookOutcome, Hooks};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// Far longer than any hook here may take; reaching it means `run` hung.
const HANG_LIMIT: Duration = Duration::from_secs(60);

/// A command hook for `event` with the defaults (matcher `*`, 5 s, no block_on_failure).
pub fn cmd(event: HookEvent, command: &str) -> HookConfig {
    HookConfig {
        event,
        kind: HookKind::Command,
        command: Some(command.to_string()),
        url: None,
        matcher: "*".into(),
        timeout_secs: 5,
        block_on_failure: false,
        sandbox: false,
        network: false,
    }
}

/// An HTTP hook for `event` with the defaults.
pub fn http_hook(event: HookEvent, url: &str) -> HookConfig {
    HookConfig { kind: HookKind::Http, command: None, url: Some(url.to_string()), ..cmd(event, "") }
}

/// Changes to a hook written in a table.
pub trait HookExt {
    fn blocking(self, block_on_failure: bool) -> Self;
    fn timeout(self, secs: u64) -> Self;
    fn matcher(self, glob: &str) -> Self;
    /// `sandbox = true`, with `network` as given.
    fn sandboxed(self, network: bool) -> Self;
}

impl HookExt for HookConfig {
    fn blocking(mut self, block_on_failure: bool) -> Self {
        self.block_on_failure = block_on_failure;
        self
    }
    fn timeout(mut self, secs: u64) -> Self {
        self.timeout_secs = secs;
        self
    }
    fn matcher(mut self, glob: &str) -> Self {
        self.matcher = glob.to_string();
        self
    }
    fn sandboxed(mut self, network: bool) -> Self {
        self.sandbox = true;
        self.network = network;
        self
    }
}

/// `Hooks::new(hooks).run(...)`, failing the test if it does not return within [`HANG_LIMIT`].
pub async fn run(hooks: &[HookConfig], event: HookEvent, tool: Option<&str>, payload: &Value) -> HookOutcome {
    let hooks = Hooks::new(hooks);
    match tokio::time::timeout(HANG_LIMIT, hooks.run(event, tool, payload)).await {
        Ok(outcome) => outcome,
        Err(_) => panic!("Hooks::run did not return within {HANG_LIMIT:?}"),
    }
}

/// What a table expects of an outcome.
#[derive(Clone, Copy, Debug)]
pub enum Expect {
    Continue,
    /// Blocked with exactly this reason.
    BlockExactly(&'static str),
    /// Blocked with a reason containing all these fragments.
    BlockWith(&'static [&'static str]),
}

impl Expect {
    pub fn check(self, outcome: &HookOutcome, case: &str) {
        match (self, outcome) {
            (Expect::Continue, HookOutcome::Continue) => {}
            (Expect::BlockExactly(want), HookOutcome::Block(reason)) => {
                assert_eq!(reason, want, "{case}: wrong reason");
            }
            (Expect::BlockWith(fragments), HookOutcome::Block(reason)) => {
                for f in fragments {
                    assert!(reason.contains(f), "{case}: reason {reason:?} lacks {f:?}");
                }
            }
            (expect, got) => panic!("{case}: expected {expect:?}, got {got:?}"),
        }
    }
}

/// A path inside `dir`, single-quoted for a shell command.
pub fn sh_path(dir: &Path, name: &str) -> String {
    let path = dir.join(name).display().to_string();
    assert!(!path.contains('\''), "temp paths are expected to be quotable: {path}");
    format!("'{path}'")
}

/// Waits (a bounded time) until `path` exists, then returns its contents.
pub async fn read_when_written(path: &Path) -> String {
    for _ in 0..400 {
        if let Ok(text) = std::fs::read_to_string(path) {
            if text.ends_with('\n') {
                return text;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{} was never written", path.display());
}

/// Pids of live (not zombie) processes in process group `pgid`, from /proc.
pub fn live_members(pgid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("read /proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
        let Some((_, rest)) = stat.rsplit_once(')') else { continue };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() > 2 && fields[0] != "Z" && fields[0] != "X" && fields[2] == pgid.to_string() {
            out.push(pid);
        }
    }
    out
}

/// Waits (a bounded time) until process group `pgid` has no live member; fails if it keeps one.
pub async fn assert_group_gone(pgid: u32, case: &str) {
    for _ in 0..200 {
        if live_members(pgid).is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{case}: process group {pgid} still has live processes {:?}", live_members(pgid));
}
