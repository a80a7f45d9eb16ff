//! Matrix with real `butler serve` processes and a real Synapse: a process SIGKILLed while it
//! answers an encrypted message answers it once after the restart (the sync position and the
//! outbox survive, the transaction id makes a resent answer the same event), and what was sent
//! while it was down is answered once, nothing before it again; and with two
//! replicas on Postgres and Redis, one reads the sync at a time (a leader lease) and the other
//! takes over when it is killed, catching up on what arrived in between, each message answered
//! once.

use super::llm_section;
use super::replicas::wait_for;
use crate::matrix_person::Person;
use crate::support::cluster::Replicas;
use crate::support::fake_llm::{FakeLlm, Reply};
use crate::support::proc::Deployment;
use crate::support::synapse::Synapse;
use serde_json::json;
use std::time::{Duration, Instant};

const PASSWORD: &str = "butler-proc-pw";

/// `[channels.matrix]` (its store in `store`) and `[access]` with Alice the owner.
fn section(hs: &Synapse, alice: &str, store: &str) -> String {
    format!(
        "[channels.matrix]\nhomeserver = \"{}\"\nuser_id = \"@butler:hs.test\"\npassword = \"{PASSWORD}\"\n\
         store_path = \"{store}\"\nallowed = [\"{alice}\"]\n\n[access]\nowners = [\"matrix:{alice}\"]\n",
        hs.url()
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
        section(&hs, &alice.user_id, &store.path().display().to_string())
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
    let extra = format!("{}\n{}", llm_section(&llm.openai_url()), section(&hs, &alice.user_id, "@STORE@"));
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
