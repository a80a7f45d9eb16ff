//! What a command may use (issue 36, point 7): a fork bomb, a memory hog and a CPU spinner in
//! the shell each end with a clear result and leave nothing running, and the next command runs
//! as before (Butler unaffected); a full workspace (`[tools] workspace_quota_mb`) refuses the
//! shell and the file tools, and one command cannot write past it. In bubblewrap and without.
//! Before this step, one command held 3,000 live processes and wrote 300 MB with no limit.

use crate::{err_text, Harness};
use butler::config::{FilesConfig, SandboxMode, ShellConfig};
use butler::tools::builtin::{file_tools, Shell};
use butler::tools::limits::count_tree;
use serde_json::json;
use std::time::{Duration, Instant};

/// A fork bomb of depth 10 whose processes leave their parents behind (the subshell that
/// starts a pipeline exits at once), so only a count that follows orphans sees it.
const BOMB: &str =
    "bomb() { [ \"$1\" -gt 0 ] || { sleep 5; return; }; bomb $(($1 - 1)) | bomb $(($1 - 1)) & }; bomb 10; sleep 10";

fn shell(sandbox: SandboxMode, tune: impl FnOnce(&mut ShellConfig)) -> Shell {
    let mut cfg = ShellConfig { enabled: true, timeout_secs: 20, sandbox, ..ShellConfig::default() };
    tune(&mut cfg);
    Shell::new(&cfg)
}

/// Waits (5 s at most) until this process has no more descendants than `baseline`.
async fn settled(baseline: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let now = count_tree(std::process::id(), 100_000);
        if now <= baseline || Instant::now() > deadline {
            return now;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_fork_bomb_a_memory_hog_and_a_spinner_end_clearly_and_leave_nothing() {
    let h = Harness::new().await;
    let baseline = count_tree(std::process::id(), 100_000);
    for mode in [SandboxMode::Bwrap, SandboxMode::None] {
        let tool = shell(mode, |c| {
            c.max_processes = 32;
            c.max_memory_mb = 128;
            c.max_cpu_secs = 1;
        });
        // (command, what the result says)
        let cases: [(&str, &str); 3] = [
            // A bomb bounded at 2,047 processes, its leaves alive 5 s: should the limit ever fail,
            // this test must not take the machine down with it.
            (BOMB, "started more than 32 processes at once"),
            ("python3 -c 'b = bytearray(1024 * 1024 * 1024); print(len(b))'", "MemoryError"),
            ("while :; do :; done", "stopped: it used its 1 s of CPU time ([tools.shell] max_cpu_secs)"),
        ];
        for (command, says) in cases {
            let out = match h.call(&tool, json!({ "command": command })).await {
                Ok(text) => text,
                Err(e) => e.to_string(),
            };
            assert!(out.contains(says), "{mode:?} `{command}`: expected `{says}` in:\n{out}");
            let left = settled(baseline).await;
            assert!(left <= baseline, "{mode:?} `{command}` left {} processes running", left - baseline);
            let next = h.call(&tool, json!({"command": "echo still here"})).await.unwrap();
            assert!(next.contains("exit code: 0\nstill here"), "{mode:?}: {next}");
        }
    }
}

#[tokio::test]
async fn a_full_workspace_refuses_writes_and_one_command_cannot_overfill_it() {
    let h = Harness::new().await;
    let tool = shell(SandboxMode::Bwrap, |_| {}).with_quota(1);
    let files = file_tools(&FilesConfig::default(), 1);
    let write = files.iter().find(|t| t.spec().name == "file_write").unwrap();
    assert!(h.call(&**write, json!({"path": "small.txt", "content": "fits"})).await.is_ok());
    // One command writing 3 MB gets no further than the quota, and is told the workspace is full.
    let out = h.call(&tool, json!({"command": "head -c 3000000 /dev/zero > big; ls -l big"})).await.unwrap();
    assert!(out.contains("your workspace is full"), "{out}");
    let big = std::fs::metadata(h.workspace().join("big")).unwrap().len();
    assert!(big <= 1024 * 1024, "the file stopped at the quota: {big} bytes");
    // Now every write is refused, saying why and what to do; reading still works.
    let e = err_text(h.call(&tool, json!({"command": "echo more > more.txt"})).await);
    assert!(e.contains("your workspace is full") && e.contains("workspace_quota_mb"), "{e}");
    assert!(!h.workspace().join("more.txt").exists(), "the command never ran");
    let e = err_text(h.call(&**write, json!({"path": "more.txt", "content": "x"})).await);
    assert!(e.contains("your workspace is full"), "{e}");
    let read = files.iter().find(|t| t.spec().name == "file_read").unwrap();
    assert!(h.call(&**read, json!({"path": "small.txt"})).await.unwrap().contains("fits"));
    // Removing the file frees it again.
    std::fs::remove_file(h.workspace().join("big")).unwrap();
    assert!(h.call(&**write, json!({"path": "more.txt", "content": "x"})).await.is_ok());
}
