//! MCP tool servers (issue 15): real servers written with rmcp's server side
//! (`tests/support/mcp_server.rs`), over stdio (this test binary re-runs itself as the child:
//! see [`stdio_server_entry`]) and over streamable HTTP on 127.0.0.1, driven through
//! `butler::mcp` and the `Tool` trait with a real `ToolCtx`.
//!
//! Every wait here is bounded; nothing reaches beyond loopback and this machine's processes.

#[path = "../support/mcp_server.rs"]
pub(crate) mod server;

use super::{err_text, Harness};
use butler::config::{McpConfig, McpServerConfig, Secret};
use butler::mcp::{McpManager, McpServer, Status};
use butler::tools::{Tool, ToolError};
use serde_json::json;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Not a test of its own: when the child's environment says so, this process serves MCP on
/// stdio and exits; in a normal run it does nothing.
#[test]
fn stdio_server_entry() {
    if std::env::var(server::ROLE_VAR).as_deref() == Ok("stdio") {
        server::serve_stdio_and_exit();
    }
}

/// A stdio server `name`: this test binary, told to serve MCP.
pub(crate) fn stdio(name: &str) -> McpServerConfig {
    let exe = std::env::current_exe().expect("test binary path");
    let mut env = std::collections::BTreeMap::new();
    env.insert(server::ROLE_VAR.to_string(), Secret::new("stdio"));
    McpServerConfig {
        name: name.into(),
        command: Some(exe.to_string_lossy().into_owned()),
        args: ["--exact", "mcp::stdio_server_entry", "--test-threads=1", "--nocapture", "-q"]
            .map(String::from)
            .to_vec(),
        env,
        timeout_secs: 10,
        connect_timeout_secs: 20,
        ..McpServerConfig::default()
    }
}

fn http(name: &str, addr: std::net::SocketAddr) -> McpServerConfig {
    McpServerConfig {
        name: name.into(),
        url: Some(format!("http://{addr}/mcp")),
        timeout_secs: 10,
        connect_timeout_secs: 20,
        ..McpServerConfig::default()
    }
}

fn manager(servers: Vec<McpServerConfig>) -> Arc<McpManager> {
    let root = std::env::temp_dir().join("butler-mcp-tests");
    McpManager::start(&McpConfig { servers, ..McpConfig::default() }, &root, &Default::default())
}

/// Waits (at most 30 s) until `server` is ready at a generation above `after`.
async fn ready_after(server: &McpServer, after: u64) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if matches!(server.status(), Status::Ready { .. }) && server.generation() > after {
            return;
        }
        assert!(Instant::now() < deadline, "`{}` not ready: {:?}", server.name(), server.status());
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

async fn ready(m: &McpManager) {
    for s in m.servers() {
        ready_after(s, 0).await;
    }
}

fn tool(m: &McpManager, name: &str) -> Arc<dyn Tool> {
    let snap = m.snapshot(&BTreeSet::new());
    snap.tools.iter().find(|t| t.spec().name == name).cloned().unwrap_or_else(|| {
        let names: Vec<&str> = snap.tools.iter().map(|t| t.spec().name.as_str()).collect();
        panic!("no tool {name} among {names:?}")
    })
}

/// Live (not zombie) processes whose process group is `pgrp`.
fn group_members(pgrp: i64) -> usize {
    let mut n = 0;
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // pid (comm) state ppid pgrp ...; comm may hold spaces, so split after the last ')'.
        let Some(rest) = stat.rsplit_once(") ").map(|(_, r)| r) else { continue };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() > 2 && fields[0] != "Z" && fields[2].parse::<i64>().ok() == Some(pgrp) {
            n += 1;
        }
    }
    n
}

async fn whoami(h: &Harness, m: &McpManager, prefix: &str) -> i64 {
    let out = h.call(tool(m, &format!("{prefix}__whoami")).as_ref(), json!({})).await.unwrap();
    let v: serde_json::Value =
        serde_json::from_str(out.trim_start_matches("structured result: ")).unwrap_or_else(|_| panic!("{out}"));
    v["pgrp"].as_i64().unwrap()
}

/// Point 1: over stdio and streamable HTTP, tools are listed at start and offered as
/// `<server>__<tool>`, called with validated arguments; text, structured and image results
/// reach the model; `isError` is a tool error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_over_stdio_and_http() {
    let ct = CancellationToken::new();
    let addr = server::serve_http(ct.clone()).await;
    let m = manager(vec![stdio("local"), http("remote", addr)]);
    ready(&m).await;
    let h = Harness::new().await;
    for prefix in ["local", "remote"] {
        let names: Vec<String> = m.snapshot(&BTreeSet::new()).tools.iter().map(|t| t.spec().name.clone()).collect();
        for want in ["echo", "add", "image", "fail", "slow"] {
            assert!(names.contains(&format!("{prefix}__{want}")), "{prefix}__{want} missing from {names:?}");
        }
        // (tool, args, Ok(contains) | Err(contains))
        let cases: [(&str, serde_json::Value, Result<&str, &str>); 6] = [
            ("echo", json!({"text": "hello there"}), Ok("hello there")),
            ("add", json!({"a": 2, "b": 3}), Ok(r#""sum":5"#)),
            ("image", json!({}), Ok("[image 1: image/png, 70 bytes]")),
            ("fail", json!({}), Err("the disk is on fire")),
            ("echo", json!({"text": 5}), Err("invalid arguments: argument `text` must be of type string")),
            ("add", json!({"a": 1}), Err("missing required argument `b`")),
        ];
        for (name, args, want) in cases {
            let t = tool(&m, &format!("{prefix}__{name}"));
            let got = h.call(t.as_ref(), args.clone()).await;
            match (want, got) {
                (Ok(w), Ok(out)) => assert!(out.contains(w), "{prefix} {name} {args}: {out}"),
                (Err(w), Err(e)) => assert!(e.to_string().contains(w), "{prefix} {name} {args}: {e}"),
                (w, g) => panic!("{prefix} {name} {args}: want {w:?}, got {g:?}"),
            }
        }
        let out = tool(&m, &format!("{prefix}__image")).call_rich(&h.ctx, json!({})).await.unwrap();
        assert!(out.text.starts_with("a tiny picture\n"), "{out:?}");
        let shown: Vec<_> = out.images.iter().map(|i| (i.mime.as_str(), i.data.as_str())).collect();
        assert_eq!(shown, [("image/png", server::PNG)], "the image itself reaches the model");
        let fail = h.call(tool(&m, &format!("{prefix}__fail")).as_ref(), json!({})).await;
        assert!(matches!(fail, Err(ToolError::Failed(_))), "{fail:?}");
    }
    m.stop().await;
    ct.cancel();
}

/// Point 1: a name that is already taken is refused with a message naming both claimants,
/// and only the first keeps it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn colliding_names_are_refused_naming_both() {
    let ct = CancellationToken::new();
    let addr = server::serve_http(ct.clone()).await;
    let m = manager(vec![http("web", addr)]);
    ready(&m).await;
    let reserved: BTreeSet<String> = ["web__echo".to_string()].into();
    let snap = m.snapshot(&reserved);
    assert!(!snap.tools.iter().any(|t| t.spec().name == "web__echo"));
    assert!(snap.tools.iter().any(|t| t.spec().name == "web__add"));
    assert_eq!(snap.refused.len(), 1, "{:?}", snap.refused);
    let msg = &snap.refused[0];
    assert!(msg.contains("built-in tool `web__echo`") && msg.contains("tool `echo` of MCP server `web`"), "{msg}");
    m.stop().await;
    ct.cancel();
}

/// Point 3: a server that cannot start gives an error saying why, is retried with growing
/// waits, and never holds up the others (start-up returns at once; the good one joins).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_cannot_start_is_retried_and_blocks_nothing() {
    let broken = McpServerConfig {
        name: "broken".into(),
        command: Some("/nonexistent/mcp-server".into()),
        ..McpServerConfig::default()
    };
    // Never speaks MCP: start-up must not wait on it either.
    let silent = McpServerConfig {
        name: "silent".into(),
        command: Some("/bin/sleep".into()),
        args: vec!["30".into()],
        connect_timeout_secs: 1,
        ..McpServerConfig::default()
    };
    let m = manager(vec![broken, silent, stdio("good")]);
    assert!(matches!(m.servers()[1].status(), Status::Starting), "{:?}", m.servers()[1].status());
    ready_after(&m.servers()[2], 0).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    let (why, retry) = loop {
        if let Status::Failed { why, failures, retry_in } = m.servers()[0].status() {
            if failures >= 3 {
                break (why, retry_in);
            }
        }
        assert!(Instant::now() < deadline, "{:?}", m.servers()[0].status());
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(why.contains("could not be started"), "{why}");
    assert!(retry >= butler::mcp::server::backoff(3), "{retry:?}");
    assert!(butler::mcp::server::backoff(2) > butler::mcp::server::backoff(1));
    let names: Vec<String> = m.snapshot(&BTreeSet::new()).tools.iter().map(|t| t.spec().name.clone()).collect();
    assert!(names.iter().all(|n| n.starts_with("good__")), "{names:?}");
    let silent_status = m.servers()[1].status();
    assert!(
        matches!(&silent_status, Status::Failed { why, .. } if why.contains("did not start within 1 s")),
        "{silent_status:?}"
    );
    m.stop().await;
}

/// Point 3: a crash mid-call is a clear tool error, the server is restarted, and the crashed
/// server's process group (with its own child) is gone. Unsandboxed, so the server's process
/// group is the host's (in bubblewrap it is its PID namespace's; `process::mcp` covers that).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_mid_call_is_a_tool_error_and_the_server_comes_back() {
    let mut cfg = stdio("c");
    cfg.sandbox = butler::config::SandboxMode::None;
    cfg.env.insert(server::SLEEPER_VAR.into(), Secret::new("1"));
    let m = manager(vec![cfg]);
    ready(&m).await;
    let h = Harness::new().await;
    let old_group = whoami(&h, &m, "c").await;
    assert!(group_members(old_group) >= 2, "server and its sleeper share a group");
    let generation = m.servers()[0].generation();
    let e = err_text(h.call(tool(&m, "c__crash").as_ref(), json!({})).await);
    assert!(e.contains("MCP server `c` stopped during `crash`; it is being restarted"), "{e}");
    ready_after(&m.servers()[0], generation).await;
    let out = h.call(tool(&m, "c__echo").as_ref(), json!({"text": "back"})).await.unwrap();
    assert_eq!(out, "back");
    assert_eq!(group_members(old_group), 0, "the crashed server's group is gone");
    let new_group = whoami(&h, &m, "c").await;
    assert_ne!(new_group, old_group);
    m.stop().await;
    assert_eq!(group_members(new_group), 0, "no process of the stopped server's group is left");
}

/// Point 3: a call that runs past `timeout_secs` is a clear error well before the tool would
/// have finished, the server is sent a cancellation, and it keeps serving; a server that stops
/// answering altogether is restarted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeouts_cancel_the_call_and_a_hung_server_is_restarted() {
    let mut cfg = stdio("h");
    cfg.timeout_secs = 2;
    let m = manager(vec![cfg]);
    ready(&m).await;
    let h = Harness::new().await;
    // A slow tool on a healthy server: an error within the timeout; the server stays.
    let started = Instant::now();
    let e = err_text(h.call(tool(&m, "h__slow").as_ref(), json!({"secs": 50})).await);
    assert!(started.elapsed() < Duration::from_secs(40), "the call waited for the tool");
    assert!(e.contains("did not answer `slow` within 2 s (the call was cancelled)"), "{e}");
    // Garbage on stdout and a malformed response: a clear error, and the server still works.
    let e = err_text(h.call(tool(&m, "h__garbage").as_ref(), json!({})).await);
    assert!(e.starts_with("MCP server `h` failed `garbage`: ") || e.contains("did not answer `garbage`"), "{e}");
    let generation = m.servers()[0].generation();
    let out = h.call(tool(&m, "h__echo").as_ref(), json!({"text": "still here"})).await.unwrap();
    assert_eq!(out, "still here");
    assert_eq!(m.servers()[0].generation(), generation, "a slow tool is no reason to restart");
    // A server that hangs whole: the call times out, the ping fails, it is restarted.
    let e = err_text(h.call(tool(&m, "h__hang").as_ref(), json!({})).await);
    assert!(e.contains("did not answer `hang` within 2 s"), "{e}");
    ready_after(&m.servers()[0], generation).await;
    let out = h.call(tool(&m, "h__echo").as_ref(), json!({"text": "restarted"})).await.unwrap();
    assert_eq!(out, "restarted");
    m.stop().await;
}

/// Point 2 (the part inside the tool): `/stop` (the turn's cancel token) ends a running call at
/// once with a clear error, and the server is sent `notifications/cancelled`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_cancels_a_running_call_and_tells_the_server() {
    let ct = CancellationToken::new();
    let addr = server::serve_http(ct.clone()).await;
    let m = manager(vec![http("s", addr)]);
    ready(&m).await;
    let h = Harness::new().await;
    let before = server::CANCELLED.load(std::sync::atomic::Ordering::SeqCst);
    let stop = h.ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        stop.cancel();
    });
    let e = err_text(h.call(tool(&m, "s__slow").as_ref(), json!({"secs": 30})).await);
    assert!(e.contains("the call of `slow` on MCP server `s` was stopped"), "{e}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while server::CANCELLED.load(std::sync::atomic::Ordering::SeqCst) == before {
        assert!(Instant::now() < deadline, "the server never saw notifications/cancelled");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    m.stop().await;
    ct.cancel();
}

/// Point 4: `notifications/tools/list_changed` updates the tools offered from the next
/// snapshot (the next turn) on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changed_updates_the_offered_tools() {
    let m = manager(vec![stdio("g")]);
    ready(&m).await;
    let h = Harness::new().await;
    let names = |m: &McpManager| -> Vec<String> {
        m.snapshot(&BTreeSet::new()).tools.iter().map(|t| t.spec().name.clone()).collect()
    };
    assert!(!names(&m).contains(&"g__extra".to_string()));
    let generation = m.servers()[0].generation();
    h.call(tool(&m, "g__grow").as_ref(), json!({})).await.unwrap();
    ready_after(&m.servers()[0], generation).await;
    assert!(names(&m).contains(&"g__extra".to_string()), "{:?}", names(&m));
    assert_eq!(h.call(tool(&m, "g__extra").as_ref(), json!({})).await.unwrap(), "extra!");
    m.stop().await;
}

/// Point 2 (the part this module owns): an MCP tool is acting unless its server is
/// `read_only`, and every path-like argument goes through the hard deny list.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permission_engine_sees_read_only_and_paths() {
    use butler::permissions::{Permission, Policy, Request};
    let ct = CancellationToken::new();
    let addr = server::serve_http(ct.clone()).await;
    let mut ro = http("ro", addr);
    ro.read_only = true;
    let m = manager(vec![http("rw", addr), ro]);
    ready(&m).await;
    let h = Harness::new().await;
    let policy = Policy::with_home(&Default::default(), Vec::new(), "/home/u".into());
    // (tool, args, expected decision kind)
    let cases = [
        ("rw__echo", json!({"text": "hi"}), "ask"),
        ("ro__echo", json!({"text": "hi"}), "allow"),
        ("ro__read_file", json!({"path": "~/.ssh/id_ed25519"}), "deny"),
        ("rw__echo", json!({"text": "/etc/shadow"}), "deny"),
        ("ro__read_file", json!({"path": "notes/today.md"}), "allow"),
    ];
    for (name, args, want) in cases {
        let t = tool(&m, name);
        let action = t.action(&h.ctx, &args);
        assert!(action.summary.contains("of MCP server"), "{}", action.summary);
        let pretty = serde_json::to_string_pretty(&args).unwrap();
        let detail = action.detail.as_ref().map(|d| (d.kind, d.text.as_str()));
        assert_eq!(detail, Some((butler::tools::DetailKind::Arguments, pretty.as_str())), "the arguments, whole");
        let decision = policy.decide(&Request {
            tool: t.spec(),
            action: &action,
            channel: "web",
            kind: butler::channel::ConversationKind::Direct,
            role: butler::store::UserRole::Member,
            granted: false,
            args: &args,
        });
        let got = match decision {
            Permission::Allow(_) => "allow",
            Permission::Ask(_) => "ask",
            Permission::Deny(_) => "deny",
        };
        assert_eq!(got, want, "{name} {args}: {decision:?}");
    }
    m.stop().await;
    ct.cancel();
}

/// Point 8: bad `[[mcp.servers]]` config is an error naming the key.
#[test]
fn bad_config_names_the_key() {
    let cases: [(&str, &str); 12] = [
        ("name = \"a\"\ncommand = \"x\"\nurl = \"http://127.0.0.1:1/mcp\"", "mcp.servers[0].command"),
        ("name = \"a\"", "mcp.servers[0].command"),
        ("name = \"Files\"\ncommand = \"x\"", "mcp.servers[0].name"),
        ("name = \"a.b\"\ncommand = \"x\"", "mcp.servers[0].name"),
        ("name = \"a\"\ncommand = \"x\"\ncolour = \"red\"", "colour"),
        ("name = \"a\"\nurl = \"ftp://x\"", "mcp.servers[0].url"),
        ("name = \"a\"\ncommand = \"x\"\ntimeout_secs = 0", "mcp.servers[0].timeout_secs"),
        ("name = \"a\"\nurl = \"http://127.0.0.1:1/mcp\"\nargs = [\"x\"]", "mcp.servers[0].args"),
        // A sandboxed server's extra folders: absolute, below /, no `..`; stdio servers only.
        ("name = \"a\"\ncommand = \"x\"\npaths = [\"notes\"]", "mcp.servers[0].paths[0]"),
        ("name = \"a\"\ncommand = \"x\"\npaths = [\"/srv\", \"/\"]", "mcp.servers[0].paths[1]"),
        ("name = \"a\"\ncommand = \"x\"\npaths = [\"/srv/../etc\"]", "mcp.servers[0].paths[0]"),
        ("name = \"a\"\nurl = \"http://127.0.0.1:1/mcp\"\npaths = [\"/srv\"]", "mcp.servers[0].paths"),
    ];
    for (body, key) in cases {
        let text = format!("[[mcp.servers]]\n{body}\n");
        let err = match butler::config::parse_str(
            &text,
            "t.toml",
            &butler::config::Env::from_pairs(Vec::<(String, String)>::new()),
        ) {
            Err(e) => e.to_string(),
            Ok(cfg) => match butler::app::check_config(&cfg) {
                Err(e) => e.to_string(),
                Ok(()) => panic!("accepted: {text}"),
            },
        };
        assert!(err.contains(key), "{text}: {err}");
    }
    let dup = "[[mcp.servers]]\nname = \"a\"\ncommand = \"x\"\n[[mcp.servers]]\nname = \"a\"\ncommand = \"y\"\n";
    let cfg =
        butler::config::parse_str(dup, "t.toml", &butler::config::Env::from_pairs(Vec::<(String, String)>::new()))
            .unwrap();
    let err = butler::app::check_config(&cfg).unwrap_err().to_string();
    assert!(err.contains("mcp.servers[1].name") && err.contains("mcp.servers[0]"), "{err}");
    let ok = "[mcp]\nmax_schema_tokens = 100\n[[mcp.servers]]\nname = \"files_1-a\"\ncommand = \"npx\"\n";
    let cfg = butler::config::parse_str(ok, "t.toml", &butler::config::Env::from_pairs(Vec::<(String, String)>::new()))
        .unwrap();
    butler::app::check_config(&cfg).unwrap();
}
