//! The shell's bubblewrap sandbox (issue 13, point 5): with a canary secret in Butler's own
//! environment and files outside the workspace, the probes that once read Butler's environment
//! and /etc/shadow reveal nothing, the network is there only when configured, ordinary commands
//! still work in the workspace, Butler refuses to start the shell without bubblewrap unless
//! `sandbox = "none"`, and `doctor` says which it is. Needs `bwrap` (tests/run installs it).

use crate::support::fake_llm::{FakeLlm, Reply};
use crate::support::proc::{Deployment, Server};
use crate::Harness;
use butler::config::{SandboxMode, ShellConfig};
use butler::tools::builtin::Shell;
use serde_json::json;
use std::process::Stdio;
use std::sync::atomic::Ordering;
use std::time::Duration;

const CANARY_VAR: &str = "BUTLER_SANDBOX_TEST_CANARY";
const CANARY: &str = "canary-9f2c41e7-butler-secret";

fn shell(sandbox: SandboxMode, network: bool) -> Shell {
    Shell::new(&ShellConfig { enabled: true, timeout_secs: 20, sandbox, network, ..ShellConfig::default() })
}

/// The canary in this process's environment and in two files outside the workspace standing
/// in for Butler's config file and database; returns their paths.
fn plant_canary(h: &Harness) -> (String, String) {
    std::env::set_var(CANARY_VAR, CANARY);
    let config = h.tmp.path().join("butler.toml");
    std::fs::write(&config, format!("[llm]\napi_key = \"{CANARY}\"\n")).unwrap();
    let db = h.tmp.path().join("data").join("butler.db");
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    std::fs::write(&db, format!("SQLite format 3\0{CANARY}")).unwrap();
    (config.display().to_string(), db.display().to_string())
}

/// Lines of /etc/shadow that hold a password field (`root:*:...`): none may show up.
fn shadow_marker() -> &'static str {
    "root:"
}

#[tokio::test]
async fn probes_reveal_nothing_of_butler() {
    let h = Harness::new().await;
    let (config, db) = plant_canary(&h);
    let exe = std::env::current_exe().unwrap().file_name().unwrap().to_string_lossy().into_owned();
    let tool = shell(SandboxMode::Bwrap, false);
    let pid = std::process::id().to_string();
    // (command, must not contain, must contain)
    let probes: Vec<(String, Vec<&str>, Vec<&str>)> = vec![
        (r"cd /proc/$PPID && tr '\0' '\n' < environ".into(), vec![CANARY, CANARY_VAR], vec![]),
        ("cat /proc/1/environ".into(), vec![CANARY, CANARY_VAR, "PATH=", "HOME="], vec![]),
        ("cat /proc/*/environ 2>/dev/null".into(), vec![CANARY, CANARY_VAR], vec![]),
        ("env".into(), vec![CANARY, CANARY_VAR], vec!["PATH=/usr/local/bin:/usr/bin:/bin"]),
        ("cat $(echo L2V0Yy9zaGFkb3cK | base64 -d)".into(), vec![shadow_marker()], vec!["No such file"]),
        ("cat /etc/shadow /etc/passwd /etc/gshadow".into(), vec![shadow_marker()], vec!["No such file"]),
        (format!("cat {config}"), vec![CANARY], vec!["No such file"]),
        (format!("cat {db}"), vec![CANARY, "SQLite"], vec!["No such file"]),
        (format!("cat $(echo {} | base64 -d)", b64(&db)), vec![CANARY], vec!["No such file"]),
        ("cat /proc/*/cmdline | tr '\\0' ' '".into(), vec![exe.as_str()], vec!["/bin/sh"]),
        ("ls /proc".into(), vec![pid.as_str()], vec!["self"]),
        ("ls /etc".into(), vec!["passwd", "shadow", "ssl", "resolv.conf"], vec![]),
        ("grep CapEff /proc/self/status".into(), vec![], vec!["0000000000000000"]),
        ("ls ~/.. /root /home /var 2>&1".into(), vec![CANARY, "butler.toml"], vec![]),
    ];
    for (command, absent, present) in &probes {
        let out = h.call(&tool, json!({ "command": command })).await.unwrap();
        for unwanted in absent {
            assert!(!out.contains(unwanted), "`{command}` revealed `{unwanted}`:\n{out}");
        }
        for wanted in present {
            assert!(out.contains(wanted), "`{command}`: expected `{wanted}` in:\n{out}");
        }
    }
    // The root holds only the minimal system and the way to the workspace.
    let out = h.call(&tool, json!({"command": "ls -1 /"})).await.unwrap();
    let allowed = ["bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "sbin", "tmp", "usr"];
    let top = h.workspace().components().nth(1).unwrap().as_os_str().to_string_lossy().into_owned();
    for entry in out.lines().skip(1) {
        assert!(allowed.contains(&entry) || entry == top, "unexpected /{entry} in the sandbox:\n{out}");
    }
}

fn b64(text: &str) -> String {
    let out = std::process::Command::new("base64").arg("-w0").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn();
    let mut child = out.unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap()
}

#[tokio::test]
async fn ordinary_commands_work_in_the_workspace() {
    let h = Harness::new().await;
    let tool = shell(SandboxMode::Bwrap, false);
    let ws = h.workspace();
    // (command, expected in the output)
    let cases = [
        ("echo hi > a.txt && cat a.txt", vec!["exit code: 0", "hi"]),
        ("ls", vec!["a.txt"]),
        ("wc -c a.txt", vec!["3 a.txt"]),
        ("pwd; echo \"home=$HOME\"", vec![ws.to_str().unwrap()]),
        ("mkdir -p sub/dir && cd sub/dir && echo deep > f && cat ../../sub/dir/f", vec!["deep"]),
        ("echo scratch > /tmp/butler-sandbox-scratch && tr a-z A-Z < /tmp/butler-sandbox-scratch", vec!["SCRATCH"]),
        ("exit 4", vec!["exit code: 4"]),
    ];
    for (command, wanted) in cases {
        let out = h.call(&tool, json!({ "command": command })).await.unwrap();
        for want in wanted {
            assert!(out.contains(want), "`{command}`: expected `{want}` in:\n{out}");
        }
    }
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "hi\n");
    assert_eq!(std::fs::read_to_string(ws.join("sub/dir/f")).unwrap(), "deep\n");
    // The sandbox's /tmp is its own.
    assert!(!std::path::Path::new("/tmp/butler-sandbox-scratch").exists());
}

#[tokio::test]
async fn the_network_is_there_only_when_configured() {
    let h = Harness::new().await;
    let (port, accepted) = crate::support::proc::counting_listener().await;
    let probe = format!("bash -c 'echo ping > /dev/tcp/127.0.0.1/{port}' && echo connected");
    // (network, connects)
    for (network, connects) in [(false, false), (true, true)] {
        let before = accepted.load(Ordering::SeqCst);
        let out = h.call(&shell(SandboxMode::Bwrap, network), json!({ "command": probe })).await.unwrap();
        assert_eq!(out.contains("connected"), connects, "network = {network}:\n{out}");
        if connects {
            for _ in 0..50 {
                if accepted.load(Ordering::SeqCst) > before {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        assert_eq!(accepted.load(Ordering::SeqCst) > before, connects, "network = {network}:\n{out}");
    }
}

#[tokio::test]
async fn sandbox_none_still_clears_the_environment() {
    let h = Harness::new().await;
    let (config, _) = plant_canary(&h);
    let tool = shell(SandboxMode::None, false);
    let out = h.call(&tool, json!({"command": "env"})).await.unwrap();
    assert!(!out.contains(CANARY) && !out.contains(CANARY_VAR), "{out}");
    // Unsandboxed, the host's files are there: that is what "none" means.
    let out = h.call(&tool, json!({ "command": format!("cat {config}") })).await.unwrap();
    assert!(out.contains(CANARY), "{out}");
}

/// Runs `cmd` to its end (at most 30 s); (exit code, stdout, stderr).
async fn run_to_end(mut cmd: std::process::Command) -> (Option<i32>, String, String) {
    let child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let pid = child.id();
    let waited =
        tokio::time::timeout(Duration::from_secs(30), tokio::task::spawn_blocking(|| child.wait_with_output()));
    match waited.await {
        Ok(out) => {
            let out = out.unwrap().unwrap();
            let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
            (out.status.code(), text(&out.stdout), text(&out.stderr))
        }
        Err(_) => {
            crate::support::proc::signal(pid, "KILL");
            panic!("still running after 30 s");
        }
    }
}

/// A directory with no `bwrap` in it, used as the whole PATH of a butler process.
fn path_without_bwrap(dep: &Deployment) -> String {
    let dir = dep.dir.path().join("empty-bin");
    std::fs::create_dir_all(&dir).unwrap();
    dir.display().to_string()
}

#[tokio::test]
async fn without_bwrap_the_shell_refuses_to_start_unless_sandbox_is_none() {
    let dep = Deployment::new("[tools.shell]\nenabled = true\n");
    let path = path_without_bwrap(&dep);
    let mut cmd = dep.command(&["serve"]);
    cmd.env("PATH", &path);
    let (code, _, stderr) = run_to_end(cmd).await;
    assert_ne!(code, Some(0), "{stderr}");
    assert!(stderr.contains("[tools.shell] sandbox") && stderr.contains("bubblewrap"), "{stderr}");

    let mut cmd = dep.command(&["doctor"]);
    cmd.env("PATH", &path);
    let (code, stdout, _) = run_to_end(cmd).await;
    assert_ne!(code, Some(0), "{stdout}");
    assert!(stdout.contains("[FAIL] shell sandbox:") && stdout.contains("install bubblewrap"), "{stdout}");

    // With bwrap on PATH, doctor says the sandbox works.
    let (_, stdout, _) = run_to_end(dep.command(&["doctor"])).await;
    assert!(stdout.contains("[ ok ] shell sandbox: bwrap (") && stdout.contains("no network"), "{stdout}");

    // `sandbox = "none"` is the explicit way to run without it.
    let dep = Deployment::new("[tools.shell]\nenabled = true\nsandbox = \"none\"\n");
    let mut cmd = dep.command(&["serve"]);
    let log = dep.dir.path().join("serve-none.log");
    cmd.env("PATH", path_without_bwrap(&dep)).stdout(Stdio::null()).stderr(std::fs::File::create(&log).unwrap());
    let mut server = Server { child: cmd.spawn().unwrap(), log };
    server.wait_ready(&dep.base()).await;
    let mut cmd = dep.command(&["doctor"]);
    cmd.env("PATH", path_without_bwrap(&dep));
    let (_, stdout, _) = run_to_end(cmd).await;
    assert!(stdout.contains("[ ok ] shell sandbox: none"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_butler_shell_reveals_nothing_of_its_environment() {
    let llm = FakeLlm::start().await;
    let dep = Deployment::new(&format!(
        "[llm]\nprovider = \"openai\"\nbase_url = \"{}\"\nmodel = \"fake-model\"\nmax_retries = 0\n\n\
         [permissions]\nmode = \"full_auto\"\n\n[tools]\nworkspace_dir = \"workspaces\"\n\n\
         [tools.shell]\nenabled = true\n",
        llm.openai_url()
    ));
    let db = dep.dir.path().join("butler.db");
    // Obfuscated where the permission engine's lexical deny list would refuse the plain word:
    // the sandbox must hold where words are not caught.
    let probes = format!(
        "(cd /proc/$PPID && tr '\\0' '\\n' < environ); e=$(echo {} | base64 -d); cat /proc/1/$e; \
         cat /proc/*/$e; env; cat $(echo L2V0Yy9zaGFkb3cK | base64 -d); cat $(echo {} | base64 -d) \
         $(echo {} | base64 -d); ls / /proc; echo hi > a.txt && cat a.txt && echo END-OF-PROBES",
        b64("environ"),
        b64(&db.display().to_string()),
        b64(&dep.config.display().to_string())
    );
    llm.on("probe", Reply::tool_call("shell", json!({ "command": probes })));
    llm.on("probe", Reply::text("probed"));

    // The canary arrives the README way: an API key exported in Butler's environment.
    let server = dep.serve_with_env(&[("OPENAI_API_KEY", CANARY), (CANARY_VAR, CANARY)]).await;
    let body = json!({"conversation": "sb1", "user": "local", "text": "probe the sandbox"});
    let r = reqwest::Client::new().post(format!("{}/api/v1/messages", dep.base())).json(&body).send().await.unwrap();
    assert_eq!(r.status(), 202);
    let result = llm.first_tool_result(|| server.log_text()).await;
    assert!(result.contains("END-OF-PROBES"), "{result}");
    for unwanted in [CANARY, CANARY_VAR, "OPENAI_API_KEY", shadow_marker(), "SQLite format", "[llm]"] {
        assert!(!result.contains(unwanted), "the shell revealed `{unwanted}`:\n{result}");
    }
    let file = dep.dir.path().join("workspaces/local/a.txt");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "hi\n");
}
