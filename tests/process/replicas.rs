//! Three real `butler serve` replicas on one Postgres database and one (private) Redis: a
//! session runs on one replica at a time under its lease, a paused owner's late commit is
//! refused by the fencing token, events posted to any replica are answered once by the owner,
//! the Telegram receiver runs on one replica and moves when it dies, a web page on one replica
//! sees replies made on another, and the ops surface (/readyz, /metrics, doctor, the log)
//! shows the cluster.

use super::llm_section;
use crate::support::cluster::Replicas;
use crate::support::fake_llm::{FakeLlm, Reply};
use futures::StreamExt;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// Every conversation's messages, read through replica 0 (the database is shared).
pub async fn answers(base: &str, conv: &str) -> Vec<String> {
    super::messages(base, conv)
        .await
        .iter()
        .filter(|m| m["role"] == "assistant")
        .map(|m| m["text"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// POSTs a message to one replica; `None` when it was not accepted (not 202).
pub async fn try_post(client: &reqwest::Client, base: &str, conv: &str, text: &str) -> Option<u16> {
    let body = json!({"conversation": conv, "user": "local", "text": text});
    match client.post(format!("{base}/api/v1/messages")).json(&body).send().await {
        Ok(r) => Some(r.status().as_u16()),
        Err(_) => None,
    }
}

pub async fn wait_for(what: &str, secs: u64, logs: impl Fn() -> String, mut f: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !f().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}\n{}", logs());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The value of a metric line `name <v>` in a replica's /metrics.
pub async fn metric(base: &str, name: &str) -> f64 {
    let text = reqwest::get(format!("{base}/metrics")).await.unwrap().text().await.unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("{name} missing from /metrics"))
}

/// The replicas holding a lease whose name starts with `prefix`.
async fn holders(set: &Replicas, prefix: &str) -> Vec<(String, Option<usize>)> {
    let mut c = set.redis.conn().await;
    let keys: Vec<String> =
        redis::cmd("KEYS").arg(format!("butler:lease:{prefix}*")).query_async(&mut c).await.unwrap();
    let mut out = Vec::new();
    for k in keys {
        let name = k.trim_start_matches("butler:lease:").to_string();
        out.push((name.clone(), set.holder(&name).await));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_owner_cannot_commit_and_the_new_owner_answers_exactly_once() {
    let llm = FakeLlm::start().await;
    let mut set = Replicas::new(3, 1000, &llm_section(&llm.openai_url())).await;
    set.start_all().await;
    let words = |n: usize| (0..n).map(|i| format!("w{i} ")).collect::<Vec<_>>();
    // The first run streams slowly (the owner is paused in the middle of it); the re-run by
    // the new owner answers at once.
    llm.on("pause me", Reply::chunks(words(20)).chunk_delay(Duration::from_millis(150)));
    llm.on("pause me", Reply::text("answered by the new owner"));
    let base0 = set.nodes[0].base();
    super::post(&base0, "p1", "pause me").await;
    let logs = || set.logs();
    wait_for("the first model call", 20, logs, async || llm.request_count() >= 1).await;
    let owner = holders(&set, "session:").await.into_iter().find_map(|(_, h)| h).expect("a session lease holder");
    set.pause(owner);
    let other = (owner + 1) % 3;
    let base = set.nodes[other].base();
    wait_for(
        "the answer of the new owner",
        30,
        || set.logs(),
        async || answers(&base, "p1").await.iter().any(|t| t == "answered by the new owner"),
    )
    .await;
    let new_owner = holders(&set, "session:").await.into_iter().find_map(|(_, h)| h);
    assert!(new_owner.is_some_and(|n| n != owner), "the session moved: {new_owner:?} (was {owner})");
    set.resume(owner);
    // The paused replica finishes its stream and tries to commit: refused.
    let old = set.nodes[owner].base();
    wait_for(
        "the fencing refusal",
        30,
        || set.logs(),
        async || metric(&old, "butler_fencing_refusals_total").await >= 1.0,
    )
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let all = answers(&base, "p1").await;
    assert_eq!(all, ["answered by the new owner"], "exactly one reply, the new owner's\n{}", set.logs());
    // The event came back through the reaper of a live replica, counted as a takeover.
    let mut takeovers = 0.0;
    for (i, n) in set.nodes.iter().enumerate() {
        if i != owner {
            takeovers += metric(&n.base(), "butler_takeovers_total").await;
        }
    }
    assert!(takeovers >= 1.0, "takeovers counted: {takeovers}");
    assert_eq!(llm.request_count(), 2, "the turn ran once more, on the new owner, and only once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_posted_to_any_replica_are_answered_once_in_order_by_the_owner() {
    let llm = FakeLlm::start().await;
    let mut set = Replicas::new(3, 2000, &llm_section(&llm.openai_url())).await;
    set.start_all().await;
    let client = reqwest::Client::new();
    for round in 0..2 {
        for i in 0..6 {
            let base = set.nodes[i % 3].base();
            assert_eq!(try_post(&client, &base, "order", &format!("m{round}-{i}")).await, Some(202));
        }
    }
    let base = set.nodes[0].base();
    wait_for("12 answers", 30, || set.logs(), async || answers(&base, "order").await.len() >= 12).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let got = answers(&base, "order").await;
    let want: Vec<String> = (0..2).flat_map(|r| (0..6).map(move |i| format!("echo: m{r}-{i}"))).collect();
    assert_eq!(got, want, "each once, in the order posted");
    let sessions = holders(&set, "session:").await;
    assert_eq!(sessions.len(), 1, "one session lease: {sessions:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_web_page_on_one_replica_sees_replies_made_on_another() {
    let llm = FakeLlm::start().await;
    let mut set = Replicas::new(2, 2000, &llm_section(&llm.openai_url())).await;
    // The session starts on replica 1 (the only one running) and stays there.
    set.start(1).await;
    let b1 = set.nodes[1].base();
    super::post(&b1, "sse", "hello").await;
    wait_for("the first answer", 20, || set.logs(), async || answers(&b1, "sse").await.len() == 1).await;
    set.start(0).await;
    let b0 = set.nodes[0].base();
    let resp = reqwest::Client::new().get(format!("{b0}/api/v1/conversations/sse/stream")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    llm.on("stream me", Reply::chunks(["part one, ", "part two."]).chunk_delay(Duration::from_millis(200)));
    // Posted to replica 0, run by replica 1 (the owner), seen on replica 0's stream.
    super::post(&b0, "sse", "stream me").await;
    let mut body = resp.bytes_stream();
    let mut buf = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let mut seen: Vec<(String, Value)> = Vec::new();
    while !seen.iter().any(|(k, v)| k == "updated" && v["text"] == "part one, part two." && v.get("draft").is_none()) {
        let chunk = tokio::time::timeout_at(deadline, body.next())
            .await
            .unwrap_or_else(|_| panic!("events in time: {seen:?}\n{}", set.logs()))
            .unwrap()
            .unwrap();
        buf.push_str(&String::from_utf8_lossy(&chunk));
        seen.extend(crate::support::sse::drain_events(&mut buf));
    }
    assert_eq!(set.holder(&holders(&set, "session:").await[0].0).await, Some(1), "the owner did not change");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ops_show_the_cluster_readyz_metrics_doctor_and_the_leader_log() {
    let llm = FakeLlm::start().await;
    let mut set = Replicas::new(2, 1000, &llm_section(&llm.openai_url())).await;
    set.start_all().await;
    let b0 = set.nodes[0].base();
    let ready: Value = reqwest::get(format!("{b0}/readyz")).await.unwrap().json().await.unwrap();
    assert_eq!(ready, json!({"status": "ready", "database": "ok", "redis": "ok"}));
    super::post(&b0, "ops", "hi").await;
    wait_for("the answer", 20, || set.logs(), async || answers(&b0, "ops").await.len() == 1).await;
    let mut held = 0.0;
    for n in &set.nodes {
        held += metric(&n.base(), "butler_leases_held").await;
    }
    // Two heartbeats, the reaper, the session.
    assert!(held >= 4.0, "leases held over both replicas: {held}");
    let reaper = set.holder("reaper").await.expect("a reaper");
    let log = std::fs::read_to_string(set.dir.path().join(format!("replica-{reaper}-0.log"))).unwrap();
    let log = crate::support::proc::without_ansi(&log);
    assert!(log.contains("leader lease held") && log.contains("lease=reaper"), "{log}");

    let mut doctor = crate::support::proc::clean_command(set.dir.path());
    doctor.arg("doctor").arg("--config").arg(&set.nodes[0].config);
    let out = doctor.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("[ ok ] redis:") && text.contains("2 replica(s) alive"), "{text}");

    // Redis away: still ready (events are stored), but degraded, and doctor says what to do.
    set.redis.stop();
    let r = reqwest::get(format!("{b0}/readyz")).await.unwrap();
    assert_eq!(r.status(), 200);
    let ready: Value = r.json().await.unwrap();
    assert_eq!(ready, json!({"status": "degraded", "database": "ok", "redis": "unavailable"}));
    let out = doctor.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success() && text.contains("start Redis or fix [redis] url"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_replica_polls_telegram_and_another_takes_over_when_it_dies() {
    use crate::support::fake_telegram::{updates::dm, FakeTelegram};
    const TOKEN: &str = "4242:replica-test-token";
    const OWNER: i64 = 4242;
    let tg = FakeTelegram::start(TOKEN).await;
    tg.refuse_concurrent_polls();
    let llm = FakeLlm::start().await;
    let extra = format!(
        "{}\n[channels.telegram]\ntoken = \"{TOKEN}\"\napi_url = \"{}\"\npoll_timeout_secs = 2\n\n[access]\nowners = [\"telegram:{OWNER}\"]\n",
        llm_section(&llm.openai_url()),
        tg.api_url()
    );
    let mut set = Replicas::new(3, 1000, &extra).await;
    set.start_all().await;
    // Steady state: one poller, so Telegram never answers 409.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(tg.conflicts(), 0, "a second getUpdates while one was waiting\n{}", set.logs());
    let leader = set.holder("receiver:telegram").await.expect("a telegram leader");
    tg.push(dm(OWNER, 1, "before the kill"));
    tg.wait_chat(OWNER, 20, "the first answer", |m| m.iter().any(|s| s.text == "echo: before the kill")).await;

    // The leader dies; another replica polls within the lease time and nothing is lost.
    set.kill(leader);
    let killed = Instant::now();
    tg.push(dm(OWNER, 2, "after the kill"));
    tg.wait_chat(OWNER, 20, "the answer after the takeover", |m| m.iter().any(|s| s.text == "echo: after the kill"))
        .await;
    eprintln!("telegram takeover answered in {:?}", killed.elapsed());
    let new_leader = set.holder("receiver:telegram").await.expect("a new leader");
    assert_ne!(new_leader, leader);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let shown = tg.chat(OWNER);
    for text in ["echo: before the kill", "echo: after the kill"] {
        assert_eq!(shown.iter().filter(|s| s.text == text).count(), 1, "{text} once: {shown:?}");
    }
    assert_eq!(tg.conflicts(), 0, "no 409 after the takeover either\n{}", set.logs());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_and_approvals_reach_the_turn_on_whichever_replica_runs_it() {
    let llm = FakeLlm::start().await;
    let extra = format!("{}\n[tools]\nworkspace_dir = \"workspaces\"\n", llm_section(&llm.openai_url()));
    let mut set = Replicas::new(2, 2000, &extra).await;
    // The session lives on replica 1; every request below goes to replica 0.
    set.start(1).await;
    let (b0, b1) = (set.nodes[0].base(), set.nodes[1].base());
    super::post(&b1, "st", "hello").await;
    wait_for("the first answer", 20, || set.logs(), async || answers(&b1, "st").await.len() == 1).await;
    set.start(0).await;

    // The Stop button clicked on replica 0 stops the turn streaming on replica 1.
    let words: Vec<String> = (0..60).map(|i| format!("word{i} ")).collect();
    llm.on("long story", Reply::chunks(words).chunk_delay(Duration::from_millis(100)));
    super::post(&b0, "st", "tell me a long story").await;
    let msgs = super::wait_messages(&b0, "st", "the streaming draft", |m| {
        m.iter().any(|x| x["role"] == "assistant" && x["buttons"][0]["label"] == "Stop")
    })
    .await;
    let draft = msgs.iter().find(|x| x["buttons"][0]["label"] == "Stop").unwrap();
    let action = draft["buttons"][0]["action"].as_str().unwrap().to_string();
    super::click(&b0, "st", &action).await;
    let msgs = super::wait_messages(&b0, "st", "the stopped reply", |m| {
        m.iter().any(|x| x["text"].as_str().is_some_and(|t| t.ends_with("⏹ Stopped.")))
    })
    .await;
    let stopped = msgs.iter().find_map(|x| x["text"].as_str().filter(|t| t.ends_with("⏹ Stopped."))).unwrap();
    assert!(!stopped.contains("word59"), "cut off mid-stream: {stopped}");

    // An approval asked on replica 1, clicked on replica 0, resumes the turn once.
    llm.on("write it down", Reply::tool_call("file_write", json!({"path": "notes/todo.md", "content": "milk"})));
    llm.on("write it down", Reply::text("Written."));
    super::post(&b0, "st", "write it down please").await;
    let msgs = super::wait_messages(&b0, "st", "the approval request", |m| super::approve_action(m).is_some()).await;
    super::click(&b0, "st", &super::approve_action(&msgs).unwrap()).await;
    wait_for(
        "the resumed answer",
        20,
        || set.logs(),
        async || answers(&b0, "st").await.iter().any(|t| t == "Written."),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(answers(&b0, "st").await.iter().filter(|t| *t == "Written.").count(), 1);
    assert_eq!(std::fs::read_to_string(set.dir.path().join("workspaces/local/notes/todo.md")).unwrap(), "milk");
    let owner = holders(&set, "session:").await.into_iter().find_map(|(_, h)| h);
    assert_eq!(owner, Some(1), "the session never moved");
}

#[tokio::test]
async fn serve_refuses_replicas_on_sqlite_and_an_unreachable_redis_naming_the_fix() {
    // (redis section, what the error must say)
    let port = crate::support::proc::free_port();
    let cases = [
        ("[redis]\nurl = \"redis://127.0.0.1:6379\"\n".to_string(), "several replicas need one shared database"),
        (format!("[redis]\nurl = \"redis://127.0.0.1:{port}\"\n"), "start Redis or fix [redis] url"),
    ];
    for (section, want) in cases {
        let dep = crate::support::proc::Deployment::new(&section);
        let mut cmd = dep.command(&["serve"]);
        if want.starts_with("start") {
            // A reachable database, an unreachable Redis.
            let db = crate::support::db::PgTestDb::create().await;
            let text = std::fs::read_to_string(&dep.config).unwrap();
            let text = text.replace(&dep.db_url(), &db.url);
            std::fs::write(&dep.config, text).unwrap();
            let out = cmd.output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success() && err.contains(want), "{section}: {err}");
            continue;
        }
        let out = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(want), "{section}: {err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarting_replica_takes_nothing_from_a_live_one() {
    let llm = FakeLlm::start().await;
    let mut set = Replicas::new(2, 1000, &llm_section(&llm.openai_url())).await;
    set.start_all().await;
    let words: Vec<String> = (0..30).map(|i| format!("w{i} ")).collect();
    llm.on("slow one", Reply::chunks(words).chunk_delay(Duration::from_millis(100)));
    let b0 = set.nodes[0].base();
    super::post(&b0, "live", "slow one").await;
    wait_for("the model call", 20, || set.logs(), async || llm.request_count() >= 1).await;
    let owner = holders(&set, "session:").await.into_iter().find_map(|(_, h)| h).expect("an owner");
    // The other replica dies and starts again while the owner is mid-turn: a single process
    // would reset every `processing` event at start; a replica must not.
    let other = 1 - owner;
    set.kill(other);
    set.start(other).await;
    let base = set.nodes[owner].base();
    wait_for("the answer", 30, || set.logs(), async || answers(&base, "live").await.len() == 1).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(answers(&base, "live").await.len(), 1);
    assert_eq!(llm.request_count(), 1, "the live owner's turn was not run again\n{}", set.logs());
}
