//! Crash recovery with the real binary: SIGKILL the server in the middle of a turn (the model is
//! slow), restart it, and the reply arrives exactly once. Twenty times, killing at different
//! points: right after the event was accepted, while the model streams, while the draft shows,
//! and while a tool round is recorded. Nothing is lost, nothing is doubled.

use super::{llm_section, messages, post, query};
use crate::support::fake_llm::{FakeLlm, Reply};
use crate::support::proc::Deployment;
use serde_json::json;
use std::time::{Duration, Instant};

fn slow(words: usize) -> Reply {
    Reply::chunks((0..words).map(|i| format!("w{i} "))).chunk_delay(Duration::from_millis(40))
}

async fn wait_until<F: std::future::Future<Output = bool>>(what: &str, mut f: impl FnMut() -> F) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !f().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_turn_then_restart_replies_exactly_once_20_times() {
    let llm = FakeLlm::start().await;
    let dep = Deployment::new(&llm_section(&llm.openai_url()));
    let base = dep.base();
    let mut server = dep.serve().await;
    const ROUNDS: usize = 20;
    for i in 0..ROUNDS {
        let needle = format!("crash-{i}");
        let expected = (0..30).map(|k| format!("w{k} ")).collect::<String>();
        let expected = expected.trim_end().to_string();
        // The first attempt is killed; the run after the restart answers.
        if i % 4 == 3 {
            // Killed during a tool round: the calls are recorded, the restart must not re-run
            // them blindly and the model must never see a call without a result.
            llm.on(&needle, Reply::tool_call("now", json!({})).first_byte_delay(Duration::from_millis(10)));
            llm.on(&needle, slow(30).first_byte_delay(Duration::from_secs(5)));
            llm.on(&needle, slow(30));
        } else {
            llm.on(&needle, slow(30));
            llm.on(&needle, slow(30));
        }
        let before = llm.request_count();
        post(&base, &format!("k{i}"), &needle).await;
        match i % 4 {
            0 => {}
            1 => wait_until("the model call", || async { llm.request_count() > before }).await,
            2 => {
                wait_until("a draft", || async {
                    messages(&base, &format!("k{i}")).await.iter().any(|m| m["role"] == "assistant")
                })
                .await
            }
            _ => wait_until("the tool round", || async { llm.request_count() > before + 1 }).await,
        }
        server.kill();
        server = dep.serve().await;
        wait_until("the reply", || async {
            messages(&base, &format!("k{i}")).await.iter().any(|m| {
                m["role"] == "assistant" && m["text"] == expected && m["buttons"].as_array().unwrap().is_empty()
            })
        })
        .await;
    }
    // Let any stray duplicate surface before counting.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let expected = (0..30).map(|k| format!("w{k} ")).collect::<String>().trim_end().to_string();
    for i in 0..ROUNDS {
        let msgs = messages(&base, &format!("k{i}")).await;
        let users = msgs.iter().filter(|m| m["role"] == "user").count();
        let replies: Vec<_> = msgs.iter().filter(|m| m["role"] == "assistant").collect();
        assert_eq!(users, 1, "round {i}: {msgs:?}");
        assert_eq!(replies.len(), 1, "round {i}: exactly one reply: {msgs:?}");
        assert_eq!(replies[0]["text"], expected.as_str(), "round {i}");
    }
    server.terminate(Duration::from_secs(20)).await;
    let db = dep.db_url();
    let inbox = query(&db, "SELECT status, COUNT(*) FROM inbox GROUP BY status").await;
    assert_eq!(inbox, vec![vec!["done".to_string(), ROUNDS.to_string()]], "every event done once");
    let outbox = query(&db, "SELECT status, COUNT(*) FROM outbox GROUP BY status").await;
    assert_eq!(outbox, vec![vec!["sent".to_string(), ROUNDS.to_string()]], "every reply sent once");
    let dup_users = query(
        &db,
        "SELECT event_id, COUNT(*) FROM messages WHERE event_id IS NOT NULL GROUP BY event_id HAVING COUNT(*) > 1",
    )
    .await;
    assert!(dup_users.is_empty(), "a user message was recorded twice: {dup_users:?}");
    // The model never saw a tool call without its result.
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
}
