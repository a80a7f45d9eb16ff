//! Matrix with real `butler serve` processes and a real Synapse: a process SIGKILLed while it
//! answers an encrypted message answers it once after the restart (the sync position and the
//! outbox survive, the transaction id makes a resent answer the same event), and what was sent
//! while it was down is answered once, nothing before it again; and with two
//! replicas on Postgres and Redis, one reads the sync at a time (a leader lease) and the other
//! takes over when it is killed, catching up on what arrived in between, each message answered
//! once. And faults on the wire (issue 36, point 3): with Butler's every connection to the
//! homeserver through a fault proxy, a held connection (nothing arrives, nothing closes), every
//! connection reset and new ones refused while answers are being made (a homeserver restart),
//! and latency on every chunk lose and double nothing.

use super::llm_section;
use super::replicas::wait_for;
use crate::matrix_person::Person;
use crate::support::cluster::Replicas;
use crate::support::fake_llm::{FakeLlm, Reply};
use crate::support::fault_proxy::{Fault, FaultProxy};
use crate::support::proc::Deployment;
use crate::support::synapse::Synapse;
use serde_json::json;
use std::time::{Duration, Instant};

const PASSWORD: &str = "butler-proc-pw";

/// `[channels.matrix]` (its store in `store`) and `[access]` with Alice the owner.
fn section(homeserver: &str, alice: &str, store: &str) -> String {
    format!(
        "[channels.matrix]\nhomeserver = \"{homeserver}\"\nuser_id = \"@butler:hs.test\"\npassword = \"{PASSWORD}\"\n\
         store_path = \"{store}\"\nallowed = [\"{alice}\"]\n\n[access]\nowners = [\"matrix:{alice}\"]\n"
    )
}

/// Butler's answers with `body` in `room`, as Alice saw them (edits not counted).
fn answers(alice: &Person, room: &matrix_sdk::ruma::OwnedRoomId, butler: &str, body: &str) -> usize {
    alice.messages_from(room, butler).iter().filter(|e| e.body() == body).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_killed_while_answering_answers_once_after_the_restart() {
    let hs = Synapse::start().await;
    let butler = hs.register("butler", PASSWORD).await;
    let alice = Person::register(&hs, "alice").await;
    let llm = FakeLlm::start().await;
    // Slow enough that the kill lands while the answer is being made.
    llm.on_every("slow", Reply::text("slow answer").first_byte_delay(Duration::from_millis(1500)));
    let store = tempfile::tempdir().unwrap();
    let extra = format!(
        "{}\n{}",
        llm_section(&llm.openai_url()),
        section(&hs.url(), &alice.user_id, &store.path().display().to_string())
    );
    let dep = Deployment::new(&extra);
    let server = dep.serve().await;
    let room = alice.create_room(&[&butler], true, true).await;
    alice.wait_member(&room, &butler, true, 60).await;
    alice.say(&room, "slow question", json!({})).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    while llm.request_count() == 0 {
        assert!(Instant::now() < deadline, "the turn never began\n{}", server.log_text());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.kill();
    let server = dep.serve().await;
    alice
        .wait(&room, 90, "the answer after the restart", |_| answers(&alice, &room, &butler, "slow answer") >= 1)
        .await;

    // Down again: what Alice writes meanwhile is answered once when Butler is back, and
    // nothing before it again (the sync position is in Butler's database).
    server.kill();
    alice.say(&room, "note two", json!({})).await;
    alice.say(&room, "note three", json!({})).await;
    let server = dep.serve().await;
    let both =
        || answers(&alice, &room, &butler, "echo: note two") + answers(&alice, &room, &butler, "echo: note three");
    let deadline = Instant::now() + Duration::from_secs(90);
    while both() < 2 {
        assert!(Instant::now() < deadline, "not both answered after the restart\n{}", server.log_text());
        alice.sync().await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    alice.sync().await;
    for text in ["slow answer", "echo: note two", "echo: note three"] {
        assert_eq!(answers(&alice, &room, &butler, text), 1, "{text} once\n{}", server.log_text());
    }
    let stored = super::query(&dep.db_url(), "SELECT COUNT(*) FROM inbox").await;
    assert_eq!(stored[0][0], "3", "each message is one event");
    server.kill();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_replica_syncs_and_another_takes_over_when_it_is_killed() {
    let hs = Synapse::start().await;
    let butler = hs.register("butler", PASSWORD).await;
    let alice = Person::register(&hs, "alice").await;
    let llm = FakeLlm::start().await;
    let stores = tempfile::tempdir().unwrap();
    let extra = format!("{}\n{}", llm_section(&llm.openai_url()), section(&hs.url(), &alice.user_id, "@STORE@"));
    let mut set = Replicas::new(2, 1000, &extra).await;
    // Each replica its own device and store.
    for (i, node) in set.nodes.iter().enumerate() {
        let text = std::fs::read_to_string(&node.config).unwrap();
        let store = stores.path().join(format!("replica-{i}"));
        std::fs::write(&node.config, text.replace("@STORE@", &store.display().to_string())).unwrap();
    }
    set.start_all().await;
    wait_for("a reader", 30, || set.logs(), async || set.holder("receiver:matrix").await.is_some()).await;
    let leader = set.holder("receiver:matrix").await.unwrap();
    let room = alice.create_room(&[&butler], true, true).await;
    alice.wait_member(&room, &butler, true, 60).await;
    alice.say(&room, "before the kill", json!({})).await;
    alice.wait(&room, 60, "the first answer", |_| answers(&alice, &room, &butler, "echo: before the kill") == 1).await;

    // The reader dies; Alice writes at once; the other replica reads within the lease time.
    set.kill(leader);
    alice.say(&room, "after the kill", json!({})).await;
    alice
        .wait(&room, 90, "the answer after the takeover", |_| {
            answers(&alice, &room, &butler, "echo: after the kill") == 1
        })
        .await;
    let new_leader = set.holder("receiver:matrix").await.expect("a new leader");
    assert_ne!(new_leader, leader);
    tokio::time::sleep(Duration::from_secs(3)).await;
    alice.sync().await;
    for text in ["echo: before the kill", "echo: after the kill"] {
        assert_eq!(answers(&alice, &room, &butler, text), 1, "{text} once\n{}", set.logs());
    }
}

/// Alice's messages `{phase} 0..3` in `room`, said one after the other; their texts.
async fn say_three(alice: &Person, room: &matrix_sdk::ruma::OwnedRoomId, phase: &str) -> Vec<String> {
    let mut texts = Vec::new();
    for i in 0..3 {
        let text = format!("{phase} {i}");
        alice.say(room, &text, json!({})).await;
        texts.push(text);
    }
    texts
}

/// How many of `texts` Butler has answered in `room`, as Alice saw them.
fn answered(alice: &Person, room: &matrix_sdk::ruma::OwnedRoomId, butler: &str, texts: &[String]) -> usize {
    texts.iter().filter(|t| answers(alice, room, butler, &format!("echo: {t}")) > 0).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_reset_and_slow_homeserver_connections_lose_and_double_nothing() {
    const HOLD: Duration = Duration::from_secs(3);
    const REFUSE: Duration = Duration::from_secs(2);
    let hs = Synapse::start().await;
    let butler = hs.register("butler", PASSWORD).await;
    let alice = Person::register(&hs, "alice").await;
    let llm = FakeLlm::start().await;
    llm.set_default(Reply::echo());
    // The answers of the restart phase take a while, so the restart lands while they are made.
    llm.on_every("restart", Reply::echo().first_byte_delay(Duration::from_millis(800)));
    let authority = hs.url().trim_start_matches("http://").trim_end_matches('/').to_string();
    let proxy = FaultProxy::start(authority.parse().expect("host:port")).await;
    let store = tempfile::tempdir().unwrap();
    let homeserver = format!("http://{}", proxy.host_port());
    let extra = format!(
        "{}\n{}",
        llm_section(&llm.openai_url()),
        section(&homeserver, &alice.user_id, &store.path().display().to_string())
    );
    let dep = Deployment::new(&extra);
    let server = dep.serve().await;
    let room = alice.create_room(&[&butler], true, true).await;
    alice.wait_member(&room, &butler, true, 60).await;
    let mut said = Vec::new();
    let all_answered = async |texts: &[String], what: &str| {
        let deadline = Instant::now() + Duration::from_secs(90);
        while answered(&alice, &room, &butler, texts) < texts.len() {
            assert!(Instant::now() < deadline, "{what}: not all answered {texts:?}\n{}", server.log_text());
            alice.sync().await;
        }
    };

    // What came in during a fault: nothing of it answered while the fault lasts, all of it once
    // it heals.
    let through_fault = async |texts: &[String], lasts: Duration, what: &str| {
        tokio::time::sleep(lasts).await;
        alice.sync().await;
        assert_eq!(answered(&alice, &room, &butler, texts), 0, "nothing gets through {what}");
        proxy.heal();
        all_answered(texts, what).await;
    };

    // 1. Half-open: every byte held.
    proxy.set(Fault::Hold);
    let held = say_three(&alice, &room, "held").await;
    through_fault(&held, HOLD, "a held connection").await;
    said.extend(held);

    // 2. A restart while the answers are being made: every connection reset, new ones refused.
    let restart = say_three(&alice, &room, "restart").await;
    let deadline = Instant::now() + Duration::from_secs(60);
    while !llm.requests().iter().any(|r| r.last_user_text().contains("restart")) {
        assert!(Instant::now() < deadline, "the model was never asked\n{}", server.log_text());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    proxy.set(Fault::Refuse);
    proxy.reset_all();
    through_fault(&restart, REFUSE, "a restarting homeserver").await;
    said.extend(restart);

    // 3. Latency on every chunk.
    proxy.set(Fault::Latency(Duration::from_millis(30)));
    let slow = say_three(&alice, &room, "slow").await;
    all_answered(&slow, "under latency").await;
    proxy.heal();
    said.extend(slow);

    // A late double would show by now: each message answered once, nothing else said.
    tokio::time::sleep(Duration::from_secs(3)).await;
    alice.sync().await;
    for text in &said {
        let answer = format!("echo: {text}");
        assert_eq!(answers(&alice, &room, &butler, &answer), 1, "{answer} once\n{}", server.log_text());
    }
    let from_butler: Vec<String> = alice.messages_from(&room, &butler).iter().map(|m| m.body().to_string()).collect();
    assert_eq!(from_butler.len(), said.len(), "one message per message, no apology: {from_butler:#?}");
    super::assert_nothing_stuck(&dep.base()).await;
    server.kill();
}
