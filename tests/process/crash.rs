//! Crash recovery with the real binary, on SQLite and on Postgres: 200 messages over 10
//! conversations (a third of them answered slowly, some after a tool round) and 10 SIGKILLs at
//! 1.5-5 s intervals, restarted after each. The kills land on running turns, on streaming
//! drafts, on recorded tool rounds and on events that only wait in a session's queue. Every
//! message is answered exactly once, none is set aside, no draft is left, a death is charged
//! only to the turns it cut off, and the model never sees a tool call without its result.
//! Then a poison event (its process dies every time it runs) is set aside after
//! `max_event_attempts` deaths in a row, alone: the events queued behind it are answered.

use super::{llm_section, messages, post, query};
use crate::support::db::PgTestDb;
use crate::support::fake_llm::{FakeLlm, Reply};
use crate::support::proc::Deployment;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const CONVERSATIONS: usize = 10;
const PER_CONVERSATION: usize = 20;
/// Milliseconds from a (re)start being ready to its SIGKILL. No two shorter than a slow answer
/// (about 2 s) in a row: a slow turn cut off at five deaths in a row would rightly be poison.
const KILL_AFTER_MS: [u64; 10] = [1500, 4500, 2000, 3000, 5000, 1500, 4000, 2500, 5000, 3500];

/// The text of message `i` of conversation `c`; its kind (`slow`, `tool`, `plain`) picks the
/// fake model's answer.
fn message(c: usize, i: usize) -> String {
    let kind = match (c + i) % 6 {
        0 | 3 => "slow",
        1 => "tool",
        _ => "plain",
    };
    format!("c{c} m{i:02} {kind} alpha beta gamma delta")
}

/// The assistant messages of a web conversation.
async fn replies(base: &str, conv: &str) -> Vec<Value> {
    messages(base, conv).await.into_iter().filter(|m| m["role"] == "assistant").collect()
}

/// Nothing is left to do: every event ended and every reply ended (sent, failed or a draft
/// nobody finishes), so what the conversations show now is final.
async fn settled(db: &str) -> bool {
    let open = query(db, "SELECT COUNT(*) FROM inbox WHERE status IN ('pending', 'processing')").await;
    let unsent = query(db, "SELECT COUNT(*) FROM outbox WHERE status = 'pending'").await;
    open[0][0] == "0" && unsent[0][0] == "0"
}

/// A deployment on SQLite (`None`) or on the given Postgres database, with `extra` config.
fn deployment(pg: Option<&str>, extra: &str) -> Deployment {
    let dep = Deployment::new(extra);
    if let Some(url) = pg {
        let text = std::fs::read_to_string(&dep.config).unwrap();
        let sqlite = format!("url = \"{}\"", dep.db_url());
        assert!(text.contains(&sqlite));
        std::fs::write(&dep.config, text.replace(&sqlite, &format!("url = \"{url}\""))).unwrap();
    }
    dep
}

async fn two_hundred_messages_ten_kills(pg: Option<&str>) {
    let started = Instant::now();
    let llm = FakeLlm::start().await;
    // Per message first (a tool call, once), then the kinds: rules are tried in order.
    for c in 0..CONVERSATIONS {
        for i in 0..PER_CONVERSATION {
            let text = message(c, i);
            if text.contains(" tool ") {
                llm.on(&text, Reply::tool_call("now", json!({})).first_byte_delay(Duration::from_millis(100)));
            }
        }
    }
    let plain = Reply::echo().chunk_delay(Duration::from_millis(120));
    llm.on_every(" tool ", plain.clone());
    // About two seconds of streaming: a draft shows, and most kills find one running.
    llm.on_every(" slow ", Reply::echo().chunk_delay(Duration::from_millis(250)));
    llm.set_default(plain);
    let dep = deployment(pg, &llm_section(&llm.openai_url()));
    let db = pg.map_or_else(|| dep.db_url(), str::to_string);
    let base = dep.base();
    let mut server = dep.serve().await;
    for i in 0..PER_CONVERSATION {
        for c in 0..CONVERSATIONS {
            post(&base, &format!("k{c}"), &message(c, i)).await;
        }
    }
    for after in KILL_AFTER_MS {
        tokio::time::sleep(Duration::from_millis(after)).await;
        server.kill();
        server = dep.serve().await;
    }
    let deadline = Instant::now() + Duration::from_secs(180);
    while !settled(&db).await {
        assert!(Instant::now() < deadline, "events still open; log:\n{}", server.log_text());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for c in 0..CONVERSATIONS {
        let conv = format!("k{c}");
        let msgs = messages(&base, &conv).await;
        let users = msgs.iter().filter(|m| m["role"] == "user").count();
        assert_eq!(users, PER_CONVERSATION, "{conv}: {msgs:#?}");
        let texts: Vec<String> =
            replies(&base, &conv).await.iter().map(|m| m["text"].as_str().unwrap().into()).collect();
        let want: Vec<String> = (0..PER_CONVERSATION).map(|i| format!("echo: {}", message(c, i))).collect();
        assert_eq!(texts, want, "{conv}: every message answered exactly once, in order");
    }
    server.terminate(Duration::from_secs(20)).await;
    let inbox = query(&db, "SELECT status, COUNT(*) FROM inbox GROUP BY status").await;
    assert_eq!(inbox, [["done".to_string(), "200".to_string()]], "every event done, none set aside");
    let outbox = query(&db, "SELECT status, COUNT(*) FROM outbox GROUP BY status").await;
    assert_eq!(outbox, [["sent".to_string(), "200".to_string()]], "every reply sent once, no draft left");
    let dup = query(
        &db,
        "SELECT event_id, COUNT(*) FROM messages WHERE event_id IS NOT NULL GROUP BY event_id HAVING COUNT(*) > 1",
    )
    .await;
    assert!(dup.is_empty(), "a user message was recorded twice: {dup:?}");
    // Each death charged at most the turn running in each conversation, and it did cut some off.
    let charged: i64 = query(&db, "SELECT SUM(attempts) - COUNT(*) FROM inbox").await[0][0].parse().unwrap();
    let most = (KILL_AFTER_MS.len() * CONVERSATIONS) as i64;
    assert!((1..=most).contains(&charged), "tries charged by deaths: {charged} (at most {most})");
    for req in llm.requests() {
        let msgs = req.messages();
        for (k, m) in msgs.iter().enumerate() {
            for call in m["tool_calls"].as_array().into_iter().flatten() {
                let id = &call["id"];
                assert!(
                    msgs[k + 1..].iter().any(|r| r["role"] == "tool" && r["tool_call_id"] == *id),
                    "unanswered call {id}"
                );
            }
        }
    }
    let streak = &query(&db, "SELECT MAX(crashes) FROM inbox").await[0][0];
    let backend = if pg.is_some() { "postgres" } else { "sqlite" };
    let secs = started.elapsed().as_secs_f64();
    eprintln!("crash run on {backend}: {charged} tries charged by 10 kills, longest streak {streak}, {secs:.1} s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_messages_ten_sigkills_sqlite_every_message_answered_once() {
    two_hundred_messages_ten_kills(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_messages_ten_sigkills_postgres_every_message_answered_once() {
    let db = PgTestDb::create().await;
    two_hundred_messages_ten_kills(Some(&db.url)).await;
}

/// How many model requests were about `text`.
fn asked(llm: &FakeLlm, text: &str) -> usize {
    llm.requests().iter().filter(|r| r.last_user_text() == text).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poison_event_is_set_aside_alone_after_deaths_in_a_row() {
    let llm = FakeLlm::start().await;
    llm.on_every("poison", Reply::echo().chunk_delay(Duration::from_millis(200)));
    let dep = deployment(None, &format!("{}\n[limits]\nmax_event_attempts = 3\n", llm_section(&llm.openai_url())));
    let base = dep.base();
    let mut server = dep.serve().await;
    let pill = "a poison pill";
    // Queued behind it in its conversation: they wait through every death it causes.
    for text in [pill, "after one", "after two"] {
        post(&base, "p", text).await;
    }
    for death in 1..=3 {
        let deadline = Instant::now() + Duration::from_secs(30);
        while asked(&llm, pill) < death {
            assert!(Instant::now() < deadline, "run {death} of the pill never began");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        if death == 1 {
            // Its reply shows as a draft before the first death.
            while !replies(&base, "p").await.iter().any(|m| m["buttons"].as_array().is_some_and(|b| !b.is_empty())) {
                assert!(Instant::now() < deadline, "no draft shown");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
        server.kill();
        server = dep.serve().await;
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    let texts = loop {
        let got = replies(&base, "p").await;
        let texts: Vec<String> = got.iter().map(|m| m["text"].as_str().unwrap_or_default().to_string()).collect();
        if texts.len() >= 4 && got.iter().all(|m| m["buttons"].as_array().is_none_or(|b| b.is_empty())) {
            break texts;
        }
        assert!(Instant::now() < deadline, "not settled: {texts:?}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    // (what the conversation shows, how many times)
    let want: [(&str, usize); 4] = [
        (butler::outbox::CUT_OFF, 1),
        ("could not process this message (tried 3 times)", 1),
        ("echo: after one", 1),
        ("echo: after two", 1),
    ];
    assert_eq!(texts.len(), 4, "{texts:?}");
    for (text, n) in want {
        assert_eq!(texts.iter().filter(|t| t.contains(text)).count(), n, "`{text}` in {texts:?}");
    }
    assert_eq!(asked(&llm, pill), 3, "never run once more after three deaths in a row");
    server.terminate(Duration::from_secs(20)).await;
    // (event text, status, tries)
    let rows = query(&dep.db_url(), "SELECT status, attempts, error FROM inbox ORDER BY seq").await;
    assert_eq!(rows[0][..2], ["failed".to_string(), "3".to_string()], "{rows:?}");
    assert!(rows[0][2].contains("interrupted 3 times in a row"), "{rows:?}");
    for row in &rows[1..] {
        assert_eq!(row[..2], ["done".to_string(), "1".to_string()], "waiting was never charged: {rows:?}");
    }
    let drafts = query(&dep.db_url(), "SELECT COUNT(*) FROM outbox WHERE status = 'draft'").await;
    assert_eq!(drafts, [["0".to_string()]]);
}
