//! A restart while an approval is pending: after SIGKILL and restart, clicking the old button
//! still resumes the turn, exactly once, with the real binary (the acting tool is the built-in
//! `file_write`, which asks by default), and `butler audit` lists every decision.

use super::{approve_action, click, llm_section, messages, post, wait_messages};
use crate::support::fake_llm::{FakeLlm, Reply};
use crate::support::proc::Deployment;
use serde_json::{json, Value};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pending_approval_survives_sigkill_and_resumes_once() {
    let llm = FakeLlm::start().await;
    // The binary runs in the deployment's directory, so the workspaces land there.
    let dep =
        Deployment::new(&format!("{}\n[tools]\nworkspace_dir = \"workspaces\"\n", llm_section(&llm.openai_url())));
    let workspaces = dep.dir.path().join("workspaces");
    let base = dep.base();

    llm.on("write it down", Reply::tool_call("file_write", json!({"path": "notes/todo.md", "content": "buy milk"})));
    llm.on("write it down", Reply::text("Written to notes/todo.md."));
    let server = dep.serve().await;
    post(&base, "r1", "write it down please").await;
    let msgs = wait_messages(&base, "r1", "the approval request", |m| approve_action(m).is_some()).await;
    let action = approve_action(&msgs).unwrap();
    let file = workspaces.join("local/notes/todo.md");
    assert!(!file.exists(), "nothing written before approval");
    server.kill();

    let server = dep.serve().await;
    click(&base, "r1", &action).await;
    let msgs = wait_messages(&base, "r1", "the answer", |m| {
        m.iter().any(|x| x["role"] == "assistant" && x["text"] == "Written to notes/todo.md.")
    })
    .await;
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "buy milk");
    // A second click on the old button is refused at once (the button is gone) and changes nothing.
    let body = json!({"conversation": "r1", "user": "local", "action": action});
    let r = reqwest::Client::new().post(format!("{base}/api/v1/actions")).json(&body).send().await.unwrap();
    assert_eq!(r.status(), 409);
    let refused: Value = r.json().await.unwrap();
    assert_eq!(refused["error"]["code"], "stale_action", "{refused}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let answers = messages(&base, "r1").await.iter().filter(|x| x["text"] == "Written to notes/todo.md.").count();
    assert_eq!(answers, 1, "resumed exactly once: {msgs:#?}");
    assert_eq!(llm.request_count(), 2, "one model call before and one after the approval");
    server.terminate(Duration::from_secs(20)).await;

    let out = dep.command(&["audit"]).output().unwrap();
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    let outcomes: Vec<&str> = listing.lines().filter_map(|l| l.split_whitespace().nth(1)).collect();
    assert_eq!(outcomes, ["approved", "asked"], "{listing}");
    assert!(listing.contains("file_write") && !listing.contains("buy milk"), "{listing}");
}
