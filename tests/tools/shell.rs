//! shell: off by default, runs in the user's workspace with a scrubbed environment, kills its
//! whole process group at the timeout, on stop and when the command ends, caps its output.

use crate::{err_text, Harness};
use butler::config::{Config, ShellConfig};
use butler::tools::builtin::{Shell, SAFE_PATH};
use butler::tools::builtin_tools;
use serde_json::json;
use std::time::{Duration, Instant};

fn shell(timeout_secs: u64, max_output_bytes: usize) -> Shell {
    Shell::new(&ShellConfig { enabled: true, timeout_secs, max_output_bytes, ..ShellConfig::default() })
}

/// Processes whose command line contains `marker` (other than this test process).
fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if text.contains(marker) {
                found.push(format!("{}: {text}", entry.file_name().to_string_lossy()));
            }
        }
    }
    found
}

/// Waits up to 2 s for every process with `marker` to be gone.
async fn assert_gone(marker: &str) {
    for _ in 0..20 {
        if processes_with(marker).is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("left running: {:?}", processes_with(marker));
}

#[test]
fn shell_is_off_unless_enabled() {
    let default = builtin_tools(&Config::default(), &Default::default());
    assert!(default.get("shell").is_none(), "{:?}", default.names());
    let mut cfg = Config::default();
    cfg.tools.shell.enabled = true;
    let tool = builtin_tools(&cfg, &Default::default()).get("shell").cloned().expect("registered when enabled");
    assert!(!tool.spec().read_only);
}

#[tokio::test]
async fn runs_in_the_workspace_with_a_scrubbed_environment() {
    let h = Harness::new().await;
    // A secret in Butler's own environment must not reach the command.
    std::env::set_var("BUTLER_TOOLS_TEST_SECRET", "hunter2-in-env");
    let out = h.call(&shell(10, 65536), json!({"command": "pwd; env; echo \"home=$HOME\""})).await.unwrap();
    let ws = h.workspace();
    assert!(out.starts_with("exit code: 0\n"), "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[1], ws.display().to_string(), "{out}");
    assert!(!out.contains("hunter2-in-env") && !out.contains("BUTLER_TOOLS_TEST_SECRET"), "{out}");
    assert!(lines.contains(&format!("PATH={SAFE_PATH}").as_str()), "{out}");
    assert!(lines.contains(&format!("HOME={}", ws.display()).as_str()), "{out}");
    assert!(lines.contains(&"LANG=C.UTF-8") && lines.contains(&"TERM=dumb"), "{out}");
    let names: Vec<&str> = lines.iter().filter_map(|l| l.split_once('=').map(|(k, _)| k)).collect();
    for name in &names {
        assert!(
            ["PATH", "HOME", "LANG", "TERM", "PWD", "OLDPWD", "SHLVL", "_", "home"].contains(name),
            "unexpected variable {name} in {out}"
        );
    }
    // Files the command writes land in the workspace.
    h.call(&shell(10, 65536), json!({"command": "echo hi > made-by-shell.txt"})).await.unwrap();
    assert_eq!(std::fs::read_to_string(ws.join("made-by-shell.txt")).unwrap(), "hi\n");
}

#[tokio::test]
async fn exit_codes_and_stderr_are_reported() {
    let h = Harness::new().await;
    let out = h.call(&shell(10, 65536), json!({"command": "echo out; echo err >&2; exit 3"})).await.unwrap();
    assert!(out.starts_with("exit code: 3\n") && out.contains("out") && out.contains("err"), "{out}");
    let out = h.call(&shell(10, 65536), json!({"command": "true"})).await.unwrap();
    assert_eq!(out, "exit code: 0\n(no output)");
    let e = h.call(&shell(10, 65536), json!({"command": "  "})).await.unwrap_err();
    assert!(e.to_string().contains("empty"), "{e}");
}

#[tokio::test]
async fn the_timeout_kills_the_whole_process_group() {
    let h = Harness::new().await;
    let started = Instant::now();
    let e = err_text(
        h.call(&shell(1, 65536), json!({"command": "echo before; sleep 31.4159 & sleep 32.4159; echo never"})).await,
    );
    let took = started.elapsed();
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert!(e.contains("timed out after 1 s") && e.contains("before") && !e.contains("never"), "{e}");
    assert_gone("31.4159").await;
    assert_gone("32.4159").await;
}

#[tokio::test]
async fn background_processes_do_not_outlive_the_command() {
    let h = Harness::new().await;
    let started = Instant::now();
    let out = h.call(&shell(20, 65536), json!({"command": "sleep 33.4159 & echo started"})).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    assert!(out.contains("started"), "{out}");
    assert_gone("33.4159").await;
}

#[tokio::test]
async fn a_stopped_turn_kills_the_command() {
    let mut h = Harness::new().await;
    let cancel = tokio_util::sync::CancellationToken::new();
    h.ctx.cancel = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let e = err_text(h.call(&shell(30, 65536), json!({"command": "sleep 34.4159"})).await);
    assert!(e.contains("stopped") && started.elapsed() < Duration::from_secs(5), "{e}");
    assert_gone("34.4159").await;
}

#[tokio::test]
async fn a_dropped_call_kills_the_command() {
    let h = Harness::new().await;
    let tool = shell(30, 65536);
    let call = h.call(&tool, json!({"command": "sleep 35.4159 & sleep 36.4159"}));
    assert!(tokio::time::timeout(Duration::from_millis(500), call).await.is_err());
    assert_gone("35.4159").await;
    assert_gone("36.4159").await;
}

#[tokio::test]
async fn output_is_capped() {
    let h = Harness::new().await;
    let out = h.call(&shell(10, 1000), json!({"command": "yes | head -c 100000"})).await.unwrap();
    assert!(out.ends_with("[… output cut at 1000 bytes (shell.max_output_bytes); 100000 bytes in all]"), "{out}");
    let kept = out.split("[…").next().unwrap();
    assert_eq!(kept.matches('y').count(), 500, "{out}");
    // An endless writer is cut too, and stopped by the timeout.
    let e = err_text(h.call(&shell(1, 1000), json!({"command": "yes"})).await);
    assert!(e.contains("timed out") && e.contains("output cut at 1000 bytes"), "{}", &e[..e.len().min(300)]);
}
