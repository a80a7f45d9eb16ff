//! Child agents across a crash, with the real binary: SIGKILL while one child has finished and
//! another is still running, restart, and the finished child is not re-run (its recorded answer
//! is the call's result), the cut-off one is reported as interrupted once, and the parent turn
//! answers exactly once. A background task cut off by a crash is reported once after the
//! restart, through the inbox, and not again after another restart.

use super::{llm_section, post, query, wait_messages};
use crate::support::fake_llm::{FakeLlm, Reply};
use crate::support::proc::Deployment;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

async fn wait_rows(db: &str, sql: &str, what: &str, pred: impl Fn(&[Vec<String>]) -> bool) -> Vec<Vec<String>> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let rows = query(db, sql).await;
        if pred(&rows) {
            return rows;
        }
        assert!(Instant::now() < deadline, "{what} never happened: {rows:?}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

fn replies_with<'a>(msgs: &'a [Value], needle: &str) -> Vec<&'a Value> {
    msgs.iter().filter(|m| m["role"] == "assistant" && m["text"].as_str().unwrap_or("").contains(needle)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_delegation_keeps_finished_children_reports_cut_off_ones_once_and_answers_once() {
    let llm = FakeLlm::start().await;
    let dep = Deployment::new(&llm_section(&llm.openai_url()));
    let base = dep.base();
    let db = dep.db_url();
    let mut server = dep.serve().await;
    llm.on(
        "crash-parent",
        Reply::tool_call("delegate", json!({"task": "kid-fast quick look"}))
            .and_tool_call("delegate", json!({"task": "kid-slow long look"})),
    );
    llm.on("kid-fast", Reply::text("fast answer"));
    llm.on("kid-slow", Reply::text("slow answer").first_byte_delay(Duration::from_secs(60)));
    llm.on("crash-parent", Reply::text("parent answered once"));
    post(&base, "kd", "crash-parent please").await;
    // The fast child has finished (its row is done), the slow one is still running: kill.
    let sql = "SELECT task, status FROM delegations ORDER BY task";
    wait_rows(&db, sql, "one child done, one running", |r| r.len() == 2 && r[0][1] == "done" && r[1][1] == "running")
        .await;
    server.kill();
    server = dep.serve().await;
    wait_messages(&base, "kd", "the parent's answer", |m| !replies_with(m, "parent answered once").is_empty()).await;
    // Let a stray duplicate surface before counting.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let msgs = super::messages(&base, "kd").await;
    assert_eq!(replies_with(&msgs, "parent answered once").len(), 1, "exactly once: {msgs:#?}");
    let count = |needle: &str| llm.requests().iter().filter(|r| r.last_user_text().contains(needle)).count();
    assert_eq!(count("kid-fast"), 1, "the finished child is not re-run");
    assert_eq!(count("kid-slow"), 1, "the cut-off child is not re-run either");
    assert_eq!(count("crash-parent"), 2, "the parent's call before the crash and its one follow-up");
    let parent = llm.requests_for("crash-parent", 2).await;
    let results: Vec<String> = parent[1]
        .messages()
        .iter()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .collect();
    assert_eq!(results.len(), 2, "{results:#?}");
    assert!(results[0].starts_with("fast answer"), "{results:#?}");
    assert!(results[1].contains("interrupted"), "{results:#?}");
    let rows = query(&db, sql).await;
    assert_eq!(
        rows,
        [
            vec!["kid-fast quick look".to_string(), "done".into()],
            vec!["kid-slow long look".into(), "interrupted".into()]
        ]
    );
    server.terminate(Duration::from_secs(20)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_task_cut_off_by_a_crash_is_reported_once_after_the_restart() {
    background_task_cut_off(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_task_cut_off_by_a_graceful_stop_is_reported_interrupted_once_after_the_restart() {
    background_task_cut_off(true).await;
}

/// A background task still running when Butler dies (SIGKILL) or stops (SIGTERM, `graceful`).
async fn background_task_cut_off(graceful: bool) {
    let llm = FakeLlm::start().await;
    let dep = Deployment::new(&llm_section(&llm.openai_url()));
    let base = dep.base();
    let db = dep.db_url();
    let mut server = dep.serve().await;
    llm.on("ended (interrupted)", Reply::text("Your background task was cut off by a restart."));
    llm.on("bg-parent", Reply::tool_call("delegate", json!({"task": "kid-bg research", "background": true})));
    llm.on("bg-parent", Reply::text("Started it."));
    llm.on("kid-bg", Reply::text("never").first_byte_delay(Duration::from_secs(60)));
    post(&base, "kb", "bg-parent please").await;
    wait_messages(&base, "kb", "the parent's answer", |m| !replies_with(m, "Started it.").is_empty()).await;
    llm.requests_for("kid-bg", 1).await;
    if graceful {
        server.terminate(Duration::from_secs(20)).await;
    } else {
        server.kill();
    }
    server = dep.serve().await;
    wait_messages(&base, "kb", "the report", |m| !replies_with(m, "cut off by a restart").is_empty()).await;
    server.kill();
    server = dep.serve().await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    let msgs = super::messages(&base, "kb").await;
    assert_eq!(replies_with(&msgs, "cut off by a restart").len(), 1, "reported once: {msgs:#?}");
    // The child itself ran once (the report's own turn quotes its task, so match the start).
    assert_eq!(llm.requests().iter().filter(|r| r.last_user_text().starts_with("kid-bg")).count(), 1);
    let rows = query(&db, "SELECT status, delivered_ms IS NOT NULL FROM delegations").await;
    assert_eq!(rows, [vec!["interrupted".to_string(), "1".into()]]);
    server.terminate(Duration::from_secs(20)).await;
}
