//! `butler chat`: the terminal goes through the same pipeline and store as the web chat (same
//! user, same memory), streams replies, Ctrl-C stops the running turn, Ctrl-D exits.

use super::llm_section;
use crate::support::app::TestApp;
use crate::support::fake_llm::{FakeLlm, Reply};
use crate::support::proc::{signal, Deployment};
use serde_json::json;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

/// Reads stdout in a thread, forwarding it in pieces.
fn reader(mut out: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = out.read(&mut buf) {
            if n == 0 || tx.send(String::from_utf8_lossy(&buf[..n]).into_owned()).is_err() {
                break;
            }
        }
    });
    rx
}

/// Collects output until it contains `needle`.
fn until(rx: &mpsc::Receiver<String>, seen: &mut String, needle: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !seen.contains(needle) {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(s) => seen.push_str(&s),
            Err(_) => panic!("`{needle}` never appeared; output so far:\n{seen}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminal_chat_shares_memory_with_the_web_and_stops_on_ctrl_c() {
    let llm = FakeLlm::start().await;
    let dep = Deployment::new(&llm_section(&llm.openai_url()));

    // On the web (the local user), Butler remembers something.
    let mut cfg = crate::support::app::config(Some(&llm.openai_url())).0;
    cfg.database.url = butler::config::Secret::new(dep.db_url());
    let web = TestApp::start(cfg, None).await;
    llm.on("my cat", Reply::tool_call("remember", json!({"text": "The user's cat is called Tom"})));
    llm.on("my cat", Reply::text("I'll remember that."));
    web.post("w", "local", "my cat is Tom").await;
    web.wait_replies("w", 1, 30).await;
    web.stop().await;

    // In the terminal, the same user recalls it.
    llm.on("which cat", Reply::tool_call("recall", json!({"query": "cat"})));
    llm.on("which cat", Reply::chunks(["Your cat ", "is ", "Tom."]).chunk_delay(Duration::from_millis(100)));
    llm.on("long", Reply::chunks((0..200).map(|i| format!("t{i} "))).chunk_delay(Duration::from_millis(50)));
    let mut child =
        dep.command(&["chat"]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let rx = reader(child.stdout.take().unwrap());
    let err = BufReader::new(child.stderr.take().unwrap());
    let err_lines = std::thread::spawn(move || err.lines().map_while(Result::ok).collect::<Vec<_>>().join("\n"));
    let mut stdin = child.stdin.take().unwrap();
    let mut seen = String::new();
    writeln!(stdin, "which cat do I have?").unwrap();
    until(&rx, &mut seen, "Your cat is Tom.");
    let recalled =
        llm.requests().iter().filter_map(|r| r.last_tool_result()).any(|t| t.contains("The user's cat is called Tom"));
    assert!(recalled, "the terminal user found the web user's memory");

    // Ctrl-C during a long streamed reply stops it; the chat goes on.
    writeln!(stdin, "tell me something long").unwrap();
    until(&rx, &mut seen, "t3 ");
    signal(child.id(), "INT");
    until(&rx, &mut seen, "⏹ Stopped.");
    assert!(!seen.contains("t199"), "the reply was cut short");
    writeln!(stdin, "/whoami").unwrap();
    until(&rx, &mut seen, "cli:local");

    // Ctrl-D (end of input) exits cleanly.
    drop(stdin);
    let status = tokio::task::spawn_blocking(move || child.wait()).await.unwrap().unwrap();
    let stderr = err_lines.join().unwrap();
    assert!(status.success(), "exit {status:?}; stderr:\n{stderr}");
    assert!(stderr.contains("Ctrl-C stops a reply"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_terminal_asks_y_or_n_before_acting() {
    let llm = FakeLlm::start().await;
    let dep = Deployment::new(&format!("{}\n[tools]\nworkspace_dir = \"ws\"\n", llm_section(&llm.openai_url())));
    for (needle, path) in [("save a note", "note.txt"), ("save another", "other.txt")] {
        llm.on(needle, Reply::tool_call("file_write", json!({"path": path, "content": "hi"})));
        llm.on(needle, Reply::text(&format!("done with {path}")));
    }
    let mut child =
        dep.command(&["chat"]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let rx = reader(child.stdout.take().unwrap());
    let mut stdin = child.stdin.take().unwrap();
    let mut seen = String::new();
    writeln!(stdin, "save a note").unwrap();
    until(&rx, &mut seen, "Approve? [y] once, [a] always in this session, [n] no:");
    assert!(seen.contains("write 2 bytes to note.txt") || seen.contains("note.txt"), "{seen}");
    writeln!(stdin, "y").unwrap();
    until(&rx, &mut seen, "done with note.txt");
    assert_eq!(std::fs::read_to_string(dep.dir.path().join("ws/local/note.txt")).unwrap(), "hi");

    writeln!(stdin, "save another").unwrap();
    // Wait for the second question: only what came after the first answer counts.
    let mut rest = String::new();
    until(&rx, &mut rest, "Approve?");
    writeln!(stdin, "n").unwrap();
    seen.push_str(&rest);
    until(&rx, &mut rest, "done with other.txt");
    assert!(!dep.dir.path().join("ws/local/other.txt").exists(), "denied: not written");
    assert!(llm.last_request().unwrap().last_tool_result().unwrap().contains("denied"));
    drop(stdin);
    let status = tokio::task::spawn_blocking(move || child.wait()).await.unwrap().unwrap();
    assert!(status.success());
}
