//! Sandboxed command hooks (`sandbox = true`, issue 13 point 5): with a canary secret in the
//! environment of the process that runs them (this test process, or a real `butler serve`), the
//! probes that read a parent's environment reveal nothing, host files are not there, decisions
//! and the payload on stdin work as unsandboxed, the network follows the hook's `network`, a
//! timeout or a dropped run kills everything the hook started, and without `bwrap` `butler
//! serve` refuses to start while `butler doctor` fails naming the hook. Unsandboxed hooks keep
//! today's behaviour (a scrubbed environment, the host visible). Needs `bwrap`.
//!
//! A sandboxed hook cannot write into the test's temp dir, so its probes print to stderr and
//! exit 2: the block reason carries what they saw.

use crate::support::fake_llm::{FakeLlm, Reply};
use crate::support::proc::{Deployment, Server};
use crate::{cmd, run, Expect, HookExt};
use butler::config::HookEvent;
use butler::hooks::{HookOutcome, Hooks};
use serde_json::{json, Value};
use std::process::Stdio;
use std::sync::atomic::Ordering;
use std::time::Duration;

const PRE: HookEvent = HookEvent::PreToolUse;
const CANARY_VAR: &str = "BUTLER_HOOK_SANDBOX_CANARY";
const CANARY: &str = "canary-hook-7d1e0b93-butler-secret";
/// The parent's and PID 1's environment and the hook's own, on stderr, then a block.
const ENV_PROBE: &str = r"{ tr '\0' '\n' < /proc/$PPID/environ; tr '\0' '\n' < /proc/1/environ; env; } >&2; exit 2";

/// The reason a pre_tool_use hook on `shell` blocked with; panics when it did not block.
async fn reason_of(hook: butler::config::HookConfig, payload: &Value) -> String {
    match run(&[hook], PRE, Some("shell"), payload).await {
        HookOutcome::Block(reason) => reason,
        HookOutcome::Continue => panic!("the hook did not block"),
    }
}

#[tokio::test]
async fn a_sandboxed_hook_sees_nothing_of_the_host() {
    // The canary in this process's environment and in a host file, as Butler's would be.
    std::env::set_var(CANARY_VAR, CANARY);
    let dir = tempfile::tempdir().unwrap();
    let secret_file = dir.path().join("butler.toml");
    std::fs::write(&secret_file, format!("[llm]\napi_key = \"{CANARY}\"\n")).unwrap();
    let secret = secret_file.display().to_string();
    let pid = format!("\n{}\n", std::process::id());
    let cwd = std::env::current_dir().unwrap().display().to_string();
    // (sandboxed, command, must not be in the reason, must be in it)
    let cases: Vec<(bool, String, Vec<&str>, Vec<&str>)> = vec![
        (
            true,
            ENV_PROBE.into(),
            vec![CANARY, CANARY_VAR, "BUTLER_HOOK_PAYLOAD", &cwd],
            vec!["BUTLER_HOOK_EVENT=pre_tool_use", "BUTLER_HOOK_TOOL=shell", "PATH=/usr/local/bin:/usr/bin:/bin"],
        ),
        (
            true,
            r"cat /proc/*/environ 2>/dev/null | tr '\0' '\n' >&2; echo done >&2; exit 2".into(),
            vec![CANARY],
            vec!["done"],
        ),
        (true, format!("cat '{secret}' >&2; exit 2"), vec![CANARY], vec!["No such file"]),
        (true, "cat /etc/shadow /etc/passwd >&2; exit 2".into(), vec!["root:"], vec!["No such file"]),
        (true, "ls /proc >&2; exit 2".into(), vec![pid.as_str()], vec!["self"]),
        (
            true,
            "pwd >&2; ls -A >&2; echo \"home=$HOME\" >&2; exit 2".into(),
            vec![&cwd, "Cargo.toml"],
            vec!["/butler-hook-"],
        ),
        // Unsandboxed: today's behaviour, a scrubbed environment but the host in plain view.
        (false, "env >&2; exit 2".into(), vec![CANARY, CANARY_VAR], vec!["BUTLER_HOOK_PAYLOAD="]),
        (false, format!("cat '{secret}' >&2; exit 2"), vec![], vec![CANARY]),
        (false, "pwd >&2; exit 2".into(), vec!["/butler-hook-"], vec![&cwd]),
    ];
    for (sandboxed, command, absent, present) in &cases {
        let hook = if *sandboxed { cmd(PRE, command).sandboxed(false) } else { cmd(PRE, command) };
        let reason = reason_of(hook, &json!({"arguments": {"command": "ls"}})).await;
        let seen = format!("\n{reason}\n");
        assert!(!reason.ends_with('…'), "sandbox = {sandboxed}, `{command}`: the reason was cut:\n{reason}");
        for unwanted in absent {
            assert!(!seen.contains(unwanted), "sandbox = {sandboxed}, `{command}` revealed `{unwanted}`:\n{reason}");
        }
        for wanted in present {
            assert!(seen.contains(wanted), "sandbox = {sandboxed}, `{command}`: expected `{wanted}` in:\n{reason}");
        }
        if *sandboxed && command.starts_with("pwd") {
            // The scratch directory is the working directory and HOME, and it is gone afterwards.
            let scratch = reason.lines().next().unwrap();
            assert!(reason.contains(&format!("home={scratch}")), "{reason}");
            assert!(!std::path::Path::new(scratch).exists(), "{scratch} was left behind");
        }
    }
}

#[tokio::test]
async fn decisions_and_the_payload_work_in_the_sandbox() {
    use Expect::*;
    // (command, block_on_failure, expected outcome), the same sandboxed or not.
    let cases: &[(&str, bool, Expect)] = &[
        ("true", true, Continue),
        ("cat >/dev/null; echo all good", true, Continue),
        (r#"echo '{"decision":"block","reason":"no rm -rf, please"}'"#, false, BlockExactly("no rm -rf, please")),
        ("echo 'touches a protected path' >&2; exit 2", false, BlockExactly("touches a protected path")),
        ("echo oops >&2; exit 1", false, Continue),
        ("echo oops >&2; exit 1", true, BlockWith(&["exited with code 1", "oops"])),
        ("butler-no-such-hook-command", true, BlockWith(&["exited with code 127 (command not found)"])),
    ];
    for (command, block_on_failure, expect) in cases {
        for sandboxed in [false, true] {
            let hook = cmd(PRE, command).blocking(*block_on_failure);
            let hook = if sandboxed { hook.sandboxed(false) } else { hook };
            let outcome = run(&[hook], PRE, Some("shell"), &json!({})).await;
            expect.check(&outcome, &format!("sandbox = {sandboxed}, `{command}`"));
        }
    }
    // The JSON on stdin is the same; in the sandbox it is not in the environment.
    let payload = json!({"arguments": {"command": "ls -la"}, "session": "s-1", "text": "héllo \"q\" $HOME"});
    let expected = json!({"event": "pre_tool_use", "tool": "shell", "arguments": {"command": "ls -la"},
        "session": "s-1", "text": "héllo \"q\" $HOME"});
    for sandboxed in [false, true] {
        let hook = cmd(PRE, "cat >&2; exit 2");
        let hook = if sandboxed { hook.sandboxed(false) } else { hook };
        let got: Value = serde_json::from_str(&reason_of(hook, &payload).await).unwrap();
        assert_eq!(got, expected, "sandbox = {sandboxed}");
        let hook = cmd(PRE, r#"printf '%s' "${BUTLER_HOOK_PAYLOAD-unset}" >&2; exit 2"#);
        let hook = if sandboxed { hook.sandboxed(false) } else { hook };
        let in_env = reason_of(hook, &payload).await;
        assert_eq!(in_env == "unset", sandboxed, "sandbox = {sandboxed}: {in_env}");
    }
}

#[tokio::test]
async fn the_network_follows_the_hooks_network_key() {
    let (port, accepted) = crate::support::proc::counting_listener().await;
    let probe = format!("bash -c 'echo ping > /dev/tcp/127.0.0.1/{port}' 2>&1 && echo CONNECTED-OK >&2; exit 2");
    for network in [false, true] {
        let reason = reason_of(cmd(PRE, &probe).sandboxed(network), &json!({})).await;
        assert_eq!(reason.contains("CONNECTED-OK"), network, "network = {network}: {reason}");
        if !network {
            assert_eq!(accepted.load(Ordering::SeqCst), 0, "no connection without the network");
        }
    }
}

/// Live processes whose command line contains `marker`.
fn with_marker(marker: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("read /proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let zombie = stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X']));
        // Never this test's own command line or the hook's shell, only the `sleep`s.
        if !zombie && cmdline.starts_with(b"sleep\0") && String::from_utf8_lossy(&cmdline).contains(marker) {
            out.push(pid);
        }
    }
    out
}

/// Waits (bounded) until `present(with_marker(marker))` holds.
async fn wait_for_marker(marker: &str, present: bool, case: &str) {
    for _ in 0..400 {
        if with_marker(marker).is_empty() != present {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{case}: processes with {marker}: {:?} (wanted present = {present})", with_marker(marker));
}

#[tokio::test]
async fn a_timeout_or_a_dropped_run_kills_everything_the_sandboxed_hook_started() {
    // (case, command): each outlives its 1 s timeout; the sleeps carry a marker to find them by.
    let cases = [
        ("foreground sleep and a background child", "sleep 7301.25 & sleep 7301.26"),
        ("ignoring SIGTERM", "trap '' TERM; sleep 7302.25 & sleep 7302.26"),
    ];
    for (case, command) in cases {
        let marker = &command[command.len() - 7..command.len() - 1];
        let hooks = [cmd(PRE, command).timeout(1).blocking(true).sandboxed(false)];
        let outcome = run(&hooks, PRE, Some("shell"), &json!({})).await;
        Expect::BlockWith(&["timed out after 1s"]).check(&outcome, case);
        wait_for_marker(marker, false, case).await;
    }
    // The caller gives up while the hook still runs.
    let hooks = Hooks::new(&[cmd(PRE, "sleep 7303.25 & sleep 7303.26").timeout(60).sandboxed(false)]);
    let payload = json!({});
    tokio::select! {
        outcome = hooks.run(PRE, Some("shell"), &payload) => panic!("the hook ended early: {outcome:?}"),
        _ = wait_for_marker("7303.2", true, "run dropped") => {}
    }
    wait_for_marker("7303.2", false, "run dropped").await;
}

/// Runs `cmd` to its end (at most 30 s); (exit code, stdout, stderr).
async fn run_to_end(mut cmd: std::process::Command) -> (Option<i32>, String, String) {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut cmd = tokio::process::Command::from(cmd);
    cmd.kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(30), cmd.output()).await.expect("still running after 30 s");
    let out = out.unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

fn hooks_toml(sandboxed_second: bool) -> String {
    let first = "[[hooks]]\nevent = \"session_start\"\ntype = \"command\"\ncommand = \"true\"\n";
    let second = format!(
        "[[hooks]]\nevent = \"pre_tool_use\"\ntype = \"command\"\ncommand = \"exit 0\"\nsandbox = {sandboxed_second}\n"
    );
    format!("{first}\n{second}")
}

#[tokio::test]
async fn without_bwrap_serve_refuses_a_sandboxed_hook_and_doctor_fails() {
    let dep = Deployment::new(&hooks_toml(true));
    let empty = dep.dir.path().join("empty-bin");
    std::fs::create_dir_all(&empty).unwrap();
    let mut serve = dep.command(&["serve"]);
    serve.env("PATH", &empty);
    let (code, _, stderr) = run_to_end(serve).await;
    assert_ne!(code, Some(0), "{stderr}");
    assert!(stderr.contains("hooks[1].sandbox") && stderr.contains("bubblewrap"), "{stderr}");

    let mut doctor = dep.command(&["doctor"]);
    doctor.env("PATH", &empty);
    let (code, stdout, _) = run_to_end(doctor).await;
    assert_ne!(code, Some(0), "{stdout}");
    assert!(stdout.contains("[FAIL] hook sandbox: hooks[1].sandbox = true"), "{stdout}");
    assert!(stdout.contains("install bubblewrap"), "{stdout}");

    // With bwrap on PATH, doctor tries it and says it works.
    let (_, stdout, _) = run_to_end(dep.command(&["doctor"])).await;
    assert!(stdout.contains("[ ok ] hook sandbox: bwrap ("), "{stdout}");

    // Unsandboxed hooks (the default) need no bwrap, and doctor has nothing to say about them.
    let dep = Deployment::new(&hooks_toml(false));
    let log = dep.dir.path().join("serve-plain.log");
    let mut serve = dep.command(&["serve"]);
    serve.env("PATH", &empty).stdout(Stdio::null()).stderr(std::fs::File::create(&log).unwrap());
    let mut server = Server { child: serve.spawn().unwrap(), log };
    server.wait_ready(&dep.base()).await;
    let mut doctor = dep.command(&["doctor"]);
    doctor.env("PATH", &empty);
    let (_, stdout, _) = run_to_end(doctor).await;
    assert!(!stdout.contains("hook sandbox"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_butlers_sandboxed_hook_reveals_nothing_of_its_environment() {
    let llm = FakeLlm::start().await;
    // Both hooks block `recall`; their reasons arrive, in this order, as the tool's error.
    let dep = Deployment::new(&format!(
        "[llm]\nprovider = \"openai\"\nbase_url = \"{}\"\nmodel = \"fake-model\"\nmax_retries = 0\n\n\
         [[hooks]]\nevent = \"pre_tool_use\"\ntype = \"command\"\nmatcher = \"recall\"\nsandbox = true\n\
         command = '''echo SANDBOXED >&2; {ENV_PROBE}'''\n\n\
         [[hooks]]\nevent = \"pre_tool_use\"\ntype = \"command\"\nmatcher = \"recall\"\n\
         command = '''{{ echo PLAIN; tr '\\0' '\\n' < /proc/$PPID/environ | grep {CANARY_VAR}; }} >&2; exit 2'''\n",
        llm.openai_url()
    ));
    llm.on("probe", Reply::tool_call("recall", json!({"query": "anything"})));
    llm.on("probe", Reply::text("probed"));

    // The canary arrives the README way: an API key exported in Butler's environment.
    let server = dep.serve_with_env(&[("OPENAI_API_KEY", CANARY), (CANARY_VAR, CANARY)]).await;
    let body = json!({"conversation": "hs1", "user": "local", "text": "probe the hook sandbox"});
    let r = reqwest::Client::new().post(format!("{}/api/v1/messages", dep.base())).json(&body).send().await.unwrap();
    assert_eq!(r.status(), 202);
    let result = llm.first_tool_result(|| server.log_text()).await;
    let (sandboxed, plain) = result.split_once("PLAIN").unwrap_or_else(|| panic!("both hooks block:\n{result}"));
    assert!(sandboxed.contains("SANDBOXED") && sandboxed.contains("BUTLER_HOOK_EVENT=pre_tool_use"), "{result}");
    for unwanted in [CANARY, CANARY_VAR, "OPENAI_API_KEY", "RUST_LOG"] {
        assert!(!sandboxed.contains(unwanted), "the sandboxed hook revealed `{unwanted}`:\n{result}");
    }
    // Unsandboxed, the same probe reads Butler's environment when it runs as root with every
    // capability (what the sandbox is for); as any other user Butler is non-dumpable (issue 36)
    // and its environ is closed to its children.
    let root = std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"));
    assert_eq!(plain.contains(&format!("{CANARY_VAR}={CANARY}")), root, "{result}");
}
