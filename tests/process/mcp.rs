//! MCP servers through the real binary (issue 15): a stdio server configured in butler.toml (this
//! test binary re-running itself as the server, see [`stdio_server_entry`]) joins after start-up,
//! its tools reach the model per request, the permission engine asks for a server's tools unless
//! the server is `read_only`, and SIGTERM to `butler serve` mid-call leaves no process of the
//! server's process group behind, and a call goes through allowed_tools, hooks, the hard deny
//! list, max_tool_result_chars and the audit log like a built-in one.
//!
//! Every wait is bounded; the server only speaks on its stdio.

#[path = "../support/mcp_server.rs"]
#[allow(dead_code)]
mod server;

use super::{approve_action, click, llm_section, post, wait_messages};
use crate::support::fake_llm::{fenced, FakeLlm, Reply};
use crate::support::proc::Deployment;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// Not a test of its own: when the child's environment says so, this process serves MCP on
/// stdio and exits; in a normal run it does nothing.
#[test]
fn stdio_server_entry() {
    if std::env::var(server::ROLE_VAR).as_deref() == Ok("stdio") {
        server::serve_stdio_and_exit();
    }
}

/// A `[[mcp.servers]]` entry running this test binary as a stdio server.
fn server_toml(name: &str, read_only: bool, sleeper: &str) -> String {
    let exe = std::env::current_exe().unwrap();
    format!(
        "[[mcp.servers]]\nname = \"{name}\"\ncommand = \"{}\"\n\
         args = [\"--exact\", \"mcp::stdio_server_entry\", \"--test-threads=1\", \"--nocapture\", \"-q\"]\n\
         read_only = {read_only}\nconnect_timeout_secs = 30\nenv = {{ {} = \"stdio\", {} = \"{}\" }}\n",
        exe.display(),
        server::ROLE_VAR,
        server::SLEEPER_VAR,
        sleeper,
    )
}

fn tool_names(req: &crate::support::fake_llm::RecordedRequest) -> Vec<String> {
    req.tools().iter().filter_map(|t| t["function"]["name"].as_str().or(t["name"].as_str()).map(String::from)).collect()
}

/// Sends pings until a model request offers every tool in `want` (the servers start in the
/// background, so the first turns may not have them yet).
async fn wait_for_tools(llm: &FakeLlm, base: &str, want: &[&str]) {
    let deadline = Instant::now() + Duration::from_secs(60);
    for i in 0.. {
        let before = llm.request_count();
        post(base, "warmup", &format!("ping {i}")).await;
        assert!(llm.wait_for_requests(before + 1, Duration::from_secs(20)).await, "no model request");
        let names = llm.last_request().map(|r| tool_names(&r)).unwrap_or_default();
        if want.iter().all(|w| names.iter().any(|n| n == w)) {
            return;
        }
        assert!(Instant::now() < deadline, "the MCP tools {want:?} never reached the model: {names:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `(pid, pgrp)` of every live (not zombie) process whose parent is `parent`.
fn children(parent: u32) -> Vec<(i64, i64)> {
    procs().into_iter().filter(|p| p.1 == i64::from(parent)).map(|p| (p.0, p.2)).collect()
}

/// `(pid, ppid, pgrp)` of every live process, from /proc/<pid>/stat.
fn procs() -> Vec<(i64, i64, i64)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i64>() else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r.split_whitespace().collect::<Vec<_>>()) else {
            continue;
        };
        if rest.len() < 3 || rest[0] == "Z" || rest[0] == "X" {
            continue;
        }
        if let (Ok(ppid), Ok(pgrp)) = (rest[1].parse(), rest[2].parse()) {
            out.push((pid, ppid, pgrp));
        }
    }
    out
}

/// A read-only server's tool runs at once; a server without `read_only` asks first and runs
/// after the click. Either way the model gets the server's result and the reply follows it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_tools_reach_the_model_and_ask_unless_read_only() {
    let llm = FakeLlm::start().await;
    let extra = format!(
        "{}\n{}\n{}",
        llm_section(&llm.openai_url()),
        server_toml("ro", true, "0"),
        server_toml("rw", false, "0")
    );
    let dep = Deployment::new(&extra);
    let base = dep.base();
    let server = dep.serve().await;
    wait_for_tools(&llm, &base, &["ro__echo", "rw__echo", "now"]).await;

    // `/tools` lists them by source, from the servers' state now.
    post(&base, "cmd", "/tools").await;
    let msgs = wait_messages(&base, "cmd", "the /tools answer", |m| {
        m.iter().any(|x| x["role"] == "assistant" && x["text"].as_str().unwrap_or("").starts_with("Tools"))
    })
    .await;
    let listing = msgs.iter().filter_map(|x| x["text"].as_str()).find(|t| t.starts_with("Tools")).unwrap();
    let builtin = listing.lines().find(|l| l.starts_with("Built-in (")).unwrap_or_default();
    assert!(builtin.contains("now") && !builtin.contains("__") && !builtin.contains(" skill"), "{listing}");
    for want in
        ["MCP server `ro` (ready, 12 tools, ", "ro__echo, ", "MCP server `rw` (ready, ", "Skills: the `skill` tool"]
    {
        assert!(listing.contains(want), "`{want}` missing from:\n{listing}");
    }

    // (conversation, tool, echoed text, asks first)
    let cases = [("c-ro", "ro__echo", "hello from ro", false), ("c-rw", "rw__echo", "hello from rw", true)];
    for (conv, tool, text, asks) in cases {
        let ask = format!("echo via {tool}");
        let answer = format!("The server said: {text}");
        llm.on(&ask, Reply::tool_call(tool, json!({"text": text})));
        llm.on(&ask, Reply::text(&answer));
        post(&base, conv, &ask).await;
        if asks {
            let msgs = wait_messages(&base, conv, "the approval request", |m| approve_action(m).is_some()).await;
            let asked_so_far = llm.requests().iter().filter(|r| r.last_user_text().contains(&ask)).count();
            assert_eq!(asked_so_far, 1, "{tool}: nothing ran before the click");
            click(&base, conv, &approve_action(&msgs).unwrap()).await;
        }
        wait_messages(&base, conv, "the answer", |m| {
            m.iter().any(|x| x["role"] == "assistant" && x["text"] == answer.as_str())
        })
        .await;
        // With read_only nothing was clicked: had it asked, the answer would never have come.
        let last = llm.requests().into_iter().rev().find(|r| r.last_user_text().contains(&ask)).unwrap();
        let seen = last.last_tool_result().and_then(|r| fenced(&r));
        assert_eq!(seen.as_deref(), Some(text), "{tool}: the server's result reached the model, fenced as untrusted");
    }

    // An image result reaches the model as an image, and stays in the stored transcript: the
    // next turn of the conversation (read back from the database) still shows it.
    let png_url = format!("data:image/png;base64,{}", server::PNG);
    llm.on("show the picture", Reply::tool_call("ro__image", json!({})));
    llm.on("show the picture", Reply::text("A tiny picture."));
    post(&base, "c-img", "show the picture").await;
    wait_messages(&base, "c-img", "the picture answer", |m| m.iter().any(|x| x["text"] == "A tiny picture.")).await;
    let after = llm.requests().into_iter().rev().find(|r| r.last_user_text().contains("show the picture")).unwrap();
    assert_eq!(after.images(), std::slice::from_ref(&png_url), "the follow-up request carries the image");
    assert!(after.last_tool_result().unwrap().contains("[image 1: image/png, 70 bytes]"));
    llm.on("what was in it", Reply::text("One pixel."));
    post(&base, "c-img", "what was in it").await;
    wait_messages(&base, "c-img", "the second answer", |m| m.iter().any(|x| x["text"] == "One pixel.")).await;
    let next = llm.requests().into_iter().rev().find(|r| r.last_user_text().contains("what was in it")).unwrap();
    assert_eq!(next.images(), [png_url], "the next turn still has it");

    // list_changed: `grow` adds `ro__extra`; the turn that grew keeps its tools, the next turn
    // of the same conversation offers it, and the system prompt stays byte-identical.
    llm.on("grow it", Reply::tool_call("ro__grow", json!({})));
    llm.on("grow it", Reply::text("Grown."));
    post(&base, "c-grow", "grow it").await;
    wait_messages(&base, "c-grow", "the grow answer", |m| m.iter().any(|x| x["text"] == "Grown.")).await;
    let grow_turn: Vec<_> = llm.requests().into_iter().filter(|r| r.last_user_text().contains("grow it")).collect();
    assert_eq!(grow_turn.len(), 2);
    assert!(grow_turn.iter().all(|r| !tool_names(r).contains(&"ro__extra".to_string())), "same turn: same tools");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let before = llm.request_count();
        post(&base, "c-grow", "and now?").await;
        assert!(llm.wait_for_requests(before + 1, Duration::from_secs(20)).await);
        let next = llm.last_request().unwrap();
        assert_eq!(next.system_text(), grow_turn[0].system_text(), "the stored system prompt did not change");
        if tool_names(&next).contains(&"ro__extra".to_string()) {
            break;
        }
        assert!(Instant::now() < deadline, "ro__extra never offered: {:?}", tool_names(&next));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    server.terminate(Duration::from_secs(30)).await;
}

/// SIGTERM while a server's tool is running: butler exits and no process the server started is
/// left, not even a child that left its process group and session with `setsid` (issue 36: one
/// survived). The server runs in bubblewrap (the default), whose whole PID namespace ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_mid_call_leaves_no_process_of_the_servers_group() {
    let llm = FakeLlm::start().await;
    let extra = format!("{}\n{}", llm_section(&llm.openai_url()), server_toml("slowpoke", true, "setsid"));
    let dep = Deployment::new(&extra);
    let base = dep.base();
    let server = dep.serve().await;
    wait_for_tools(&llm, &base, &["slowpoke__slow"]).await;
    let groups: Vec<i64> = children(server.child.id()).into_iter().map(|c| c.1).collect();
    assert_eq!(groups.len(), 1, "one child: the stdio server's sandbox");
    let started = descendants(server.child.id());
    let sleeper = started.iter().any(|p| cmdline(*p) == "sleep 600");
    assert!(sleeper && started.len() >= 3, "the server and its setsid sleeper: {started:?}");

    llm.on("take your time", Reply::tool_call("slowpoke__slow", json!({"secs": 50})));
    let before = llm.request_count();
    post(&base, "slow", "take your time").await;
    assert!(llm.wait_for_requests(before + 1, Duration::from_secs(20)).await);
    // The call is on its way to the server (no second model request comes while it runs).
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(llm.request_count(), before + 1, "the call is still running");

    let status = server.terminate(Duration::from_secs(40)).await;
    assert!(status.success(), "butler exits cleanly: {status}");
    let alive = || procs().into_iter().filter(|p| started.contains(&p.0)).map(|p| p.0).collect::<Vec<_>>();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !alive().is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(alive(), Vec::<i64>::new(), "no process the server started is left");
}

/// Every live process below `pid`.
fn descendants(pid: u32) -> Vec<i64> {
    let all = procs();
    let mut out = Vec::new();
    let mut stack = vec![i64::from(pid)];
    while let Some(parent) = stack.pop() {
        for p in all.iter().filter(|p| p.1 == parent) {
            out.push(p.0);
            stack.push(p.0);
        }
    }
    out
}

/// The command line of `pid`, its arguments joined by spaces.
fn cmdline(pid: i64) -> String {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    raw.split(|b| *b == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a)).collect::<Vec<_>>().join(" ")
}

/// A stdio server is sandboxed (issue 36: one read Butler's config file with the model's key,
/// its SQLite database and `/proc/<Butler>/environ`): the same reads, by a tool the permission
/// engine cannot see a path in, now find nothing, and its environment holds only what it was
/// given. Before, each read returned the canary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_server_reads_nothing_of_butler() {
    const CANARY: &str = "sk-mcpProbeCanary41d7";
    let llm = FakeLlm::start().await;
    let extra =
        format!("{}api_key = \"{CANARY}\"\n{}", llm_section(&llm.openai_url()), server_toml("snoop", true, "0"));
    let dep = Deployment::new(&extra);
    let base = dep.base();
    let server = dep.serve_with_env(&[("BUTLER_PROBE_CANARY", CANARY)]).await;
    wait_for_tools(&llm, &base, &["snoop__probe"]).await;
    let db = dep.db_url().trim_start_matches("sqlite://").split('?').next().unwrap().to_string();
    let targets = [
        dep.config.display().to_string(),
        db.clone(),
        format!("{db}-wal"),
        format!("/proc/{}/environ", server.child.id()),
        "/proc/1/environ".to_string(),
        "/proc/self/environ".to_string(),
    ];
    for (i, path) in targets.iter().enumerate() {
        let hex: String = path.bytes().map(|b| format!("{b:02x}")).collect();
        let needle = format!("probe number {i}");
        llm.on(&needle, Reply::tool_call("snoop__probe", json!({"hex": hex})));
        llm.on(&needle, Reply::text("probed"));
        post(&base, "snoop", &needle).await;
        let reqs = llm.requests_for(&needle, 2).await;
        let result = reqs[1].last_tool_result().unwrap_or_default();
        assert!(!result.contains(CANARY), "the server read Butler's secret through {path}");
        if !path.starts_with("/proc/1/") && !path.starts_with("/proc/self/") {
            assert!(result.contains(&format!("could not read {path}")), "{path}: {}", &result[..result.len().min(300)]);
        }
    }
    server.terminate(Duration::from_secs(30)).await;
}

/// `butler doctor` prints one line per MCP server: started with its tool count and a round
/// trip, or why it did not start (and fails), and leaves no server running.
#[test]
fn doctor_reports_each_mcp_server() {
    let bad = "[[mcp.servers]]\nname = \"nothere\"\ncommand = \"/nonexistent/mcp-server\"\nconnect_timeout_secs = 5\n";
    let dep = Deployment::new(&format!("{}\n{bad}", server_toml("good", true, "0")));
    let out = dep.command(&["doctor"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = |prefix: &str| stdout.lines().find(|l| l.starts_with(prefix)).map(str::to_string);
    // (line prefix, what it must say)
    let cases = [
        ("[ ok ] mcp server `good`: ", "started (stdio), 12 tool(s), round trip "),
        ("[FAIL] mcp server `nothere`: ", "did not start (stdio): "),
    ];
    for (prefix, want) in cases {
        let got = line(prefix).unwrap_or_else(|| panic!("no `{prefix}` line:\n{stdout}"));
        assert!(got[prefix.len()..].starts_with(want), "{got}");
    }
    assert!(stdout.contains("fix: check mcp.servers[1]"), "{stdout}");
    assert!(!out.status.success(), "a server that does not start fails doctor");
}

/// MCP tools go through the same pipeline as built-in ones, shown per call through the real
/// binary: `allowed_tools` lets a non-read-only server's tool run without asking, a blocking
/// pre_tool_use hook matched on `<server>__<tool>` stops the call (the model gets the reason),
/// the hard deny list refuses a path-like argument even on a read-only server,
/// `max_tool_result_chars` cuts an oversized result with the marker, and every decision leaves
/// an audit row naming `<server>__<tool>`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_calls_go_through_policy_hooks_limits_and_audit() {
    const MAX: usize = 40;
    let llm = FakeLlm::start().await;
    let extra = format!(
        "{}\n[permissions]\nallowed_tools = [\"rw__echo\"]\n\n[limits]\nmax_tool_result_chars = {MAX}\n\n\
         [[hooks]]\nevent = \"pre_tool_use\"\ntype = \"command\"\nmatcher = \"ro__echo\"\n\
         command = \"echo 'no echo on ro, please' >&2; exit 2\"\n\n{}\n{}",
        llm_section(&llm.openai_url()),
        server_toml("ro", true, "0"),
        server_toml("rw", false, "0")
    );
    let dep = Deployment::new(&extra);
    let base = dep.base();
    let server = dep.serve().await;
    wait_for_tools(&llm, &base, &["ro__echo", "rw__echo", "ro__read_file"]).await;

    let long = "x".repeat(MAX * 3);
    let cut = format!("{}\n[... truncated: showing {MAX} of {} characters]", "x".repeat(MAX), MAX * 3);
    // (conversation, tool, arguments, what the model gets as the call's result, audit outcome)
    let cases: Vec<(&str, &str, Value, String, &str)> = vec![
        ("c-allowed", "rw__echo", json!({"text": "allowed, no click"}), "allowed, no click".into(), "allowed"),
        (
            "c-hook",
            "ro__echo",
            json!({"text": "never echoed"}),
            "error: blocked by a hook: no echo on ro, please".into(),
            "blocked",
        ),
        ("c-deny", "ro__read_file", json!({"path": "~/.ssh/id_rsa"}), "error: denied by policy: ".into(), "denied"),
        ("c-long", "rw__echo", json!({"text": long}), cut, "allowed"),
    ];
    for (conv, tool, args, want, _) in &cases {
        let ask = format!("please call {tool} in {conv}");
        let answer = format!("done with {conv}");
        llm.on(&ask, Reply::tool_call(tool, args.clone()));
        llm.on(&ask, Reply::text(&answer));
        post(&base, conv, &ask).await;
        // No click anywhere: had any of these asked, the answer would never come.
        let msgs = wait_messages(&base, conv, "the answer", |m| {
            m.iter().any(|x| x["role"] == "assistant" && x["text"] == answer.as_str())
        })
        .await;
        assert!(approve_action(&msgs).is_none(), "{conv}: nothing asked: {msgs:#?}");
        let last = llm.requests().into_iter().rev().find(|r| r.last_user_text().contains(&ask)).unwrap();
        let got = last.last_tool_result().unwrap_or_default();
        if *conv == "c-deny" {
            assert!(got.starts_with(want.as_str()) && !got.contains("contents of"), "{conv}: {got}");
        } else if want.starts_with("error: ") {
            assert_eq!(&got, want, "{conv}: what the model got (Butler's own words, not fenced)");
        } else {
            assert_eq!(fenced(&got).as_ref(), Some(want), "{conv}: what the model got, fenced as untrusted: {got}");
        }
    }

    let rows = crate::query(&dep.db_url(), "SELECT tool, outcome, reason FROM audit ORDER BY id").await;
    for (conv, tool, _, _, outcome) in &cases {
        assert!(
            rows.iter().any(|r| r[0] == *tool && r[1] == *outcome),
            "{conv}: no audit row ({tool}, {outcome}) in {rows:?}"
        );
    }
    assert!(
        rows.iter().any(|r| r[0] == "ro__read_file" && r[1] == "denied" && r[2].contains(".ssh")),
        "the denial names the protected path: {rows:?}"
    );
    assert!(
        rows.iter().filter(|r| r[0] == "rw__echo").all(|r| r[1] == "allowed" && r[2] == "allowed_tools: rw__echo"),
        "rw__echo ran because of allowed_tools: {rows:?}"
    );
    assert!(!rows.iter().any(|r| r[1] == "asked"), "nothing asked: {rows:?}");
    server.terminate(Duration::from_secs(30)).await;
}
