//! The phone channels with real `butler serve` processes on one Postgres database and one
//! Redis (point 8 of step 20): Signal's event stream is read by one replica at a time (a leader
//! lease, as Telegram polling) and moves to another when its reader is SIGKILLed, every message
//! answered once; a WhatsApp delivery acknowledged by a replica that is SIGKILLed at once (and
//! redelivered by Meta to another) is answered once, by a replica still alive.

use super::llm_section;
use super::replicas::wait_for;
use crate::support::cluster::Replicas;
use crate::support::fake_llm::FakeLlm;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_replica_reads_the_signal_stream_and_another_takes_over_when_it_is_killed() {
    use crate::support::fake_signal::envelopes::{direct, uuid_for, ACCOUNT};
    use crate::support::fake_signal::FakeSignal;
    const OWNER: &str = "+15550000111";
    let fake = FakeSignal::start().await;
    let llm = FakeLlm::start().await;
    let extra = format!(
        "{}\n[channels.signal]\nurl = \"{}\"\naccount = \"{ACCOUNT}\"\n\n[access]\nowners = [\"signal:{OWNER}\"]\n",
        llm_section(&llm.openai_url()),
        fake.url()
    );
    let mut set = Replicas::new(3, 1000, &extra).await;
    set.start_all().await;
    wait_for("a reader", 20, || set.logs(), async || fake.streams_open() == 1).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(fake.streams_open(), 1, "one replica reads the stream\n{}", set.logs());
    let leader = set.holder("receiver:signal").await.expect("a signal leader");
    fake.push(direct(OWNER, &uuid_for(OWNER), 1_000, "before the kill"));
    fake.wait_sent(20, "the first answer", |s| s.iter().any(|m| m.text == "echo: before the kill")).await;

    // The reader dies; another replica reads within the lease time and nothing is lost.
    let opened = fake.streams_opened();
    set.kill(leader);
    let killed = Instant::now();
    // What the daemon hands to a connection it has not yet seen close is gone with it, as with
    // the real signal-cli: the message goes in once the dead reader's stream is closed (it is
    // then held until a reader connects) or a new reader is the newest.
    wait_for(
        "the dead reader's stream closed",
        20,
        || set.logs(),
        async || fake.streams_open() == 0 || fake.streams_opened() > opened,
    )
    .await;
    fake.push(direct(OWNER, &uuid_for(OWNER), 2_000, "after the kill"));
    fake.wait_sent(20, "the answer after the takeover", |s| s.iter().any(|m| m.text == "echo: after the kill")).await;
    eprintln!("signal takeover answered in {:?}", killed.elapsed());
    let new_leader = set.holder("receiver:signal").await.expect("a new leader");
    assert_ne!(new_leader, leader);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let sent = fake.sent();
    for text in ["echo: before the kill", "echo: after the kill"] {
        assert_eq!(sent.iter().filter(|s| s.text == text).count(), 1, "{text} once: {sent:#?}");
    }
    assert_eq!(fake.streams_open(), 1, "still one reader\n{}", set.logs());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whatsapp_delivery_acknowledged_by_a_killed_replica_is_answered_once() {
    use crate::support::fake_whatsapp::{text, FakeWhatsApp, APP_SECRET, PHONE_NUMBER_ID, TOKEN, VERIFY_TOKEN};
    const OWNER: &str = "16505550111";
    let fake = FakeWhatsApp::start().await;
    let llm = FakeLlm::start().await;
    // The model answers slowly: the kill lands while the turn runs on the replica that took it.
    llm.set_default(crate::support::fake_llm::Reply::echo().first_byte_delay(Duration::from_millis(1500)));
    let extra = format!(
        "{}\n[channels.whatsapp]\naccess_token = \"{TOKEN}\"\nphone_number_id = \"{PHONE_NUMBER_ID}\"\napp_secret = \
         \"{APP_SECRET}\"\nverify_token = \"{VERIFY_TOKEN}\"\napi_url = \"{}\"\n\n[access]\nowners = [\"whatsapp:{OWNER}\"]\n",
        llm_section(&llm.openai_url()),
        fake.api_url()
    );
    let mut set = Replicas::new(2, 1000, &extra).await;
    set.start_all().await;
    let (b0, b1) = (set.nodes[0].base(), set.nodes[1].base());
    let payload = text(OWNER, "wamid.kill-1", "answer me once");
    assert_eq!(fake.deliver(&b0, &payload).await, 200, "durable before the 200");
    set.kill(0);
    // Meta did not see the 200 in time (say) and delivers again, to the replica still up.
    assert_eq!(fake.deliver(&b1, &payload).await, 200);
    fake.wait_sent(OWNER, 30, "the answer", |s| s.iter().any(|m| m.text() == "echo: answer me once")).await;
    assert_eq!(fake.deliver(&b1, &text(OWNER, "wamid.kill-2", "and me")).await, 200);
    fake.wait_sent(OWNER, 30, "the second answer", |s| s.iter().any(|m| m.text() == "echo: and me")).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let sent = fake.sent_to(OWNER);
    for want in ["echo: answer me once", "echo: and me"] {
        assert_eq!(sent.iter().filter(|m| m.text() == want).count(), 1, "{want} once: {sent:#?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_replica_reads_the_mailbox_and_another_takes_over_when_it_is_killed() {
    use crate::support::dovecot::Dovecot;
    use crate::support::smtp_sink::SmtpSink;
    const BUTLER: &str = "butler@example.test";
    const ALICE: &str = "alice@example.com";
    let imap = Dovecot::start(&[(BUTLER, "pw-1")]).await;
    let smtp = SmtpSink::start().await;
    let llm = FakeLlm::start().await;
    let extra = format!(
        "{}\n[channels.email]\naddress = \"{BUTLER}\"\nallowed = [{{ address = \"{ALICE}\", proof = \"none\" }}]\n\
         imap = {{ host = \"127.0.0.1\", port = {}, tls = \"none\", user = \"{BUTLER}\", password = \"pw-1\" }}\n\
         smtp = {{ host = \"127.0.0.1\", port = {}, tls = \"none\" }}\n\n[access]\nowners = [\"email:{ALICE}\"]\n",
        llm_section(&llm.openai_url()),
        imap.port,
        smtp.port
    );
    let mut set = Replicas::new(3, 1000, &extra).await;
    set.start_all().await;
    let mail = |id: &str, body: &str| {
        format!("From: <{ALICE}>\r\nTo: {BUTLER}\r\nSubject: {body}\r\nMessage-ID: <{id}>\r\n\r\n{body}\r\n")
            .into_bytes()
    };
    wait_for("a reader", 20, || set.logs(), async || set.holder("receiver:email").await.is_some()).await;
    let leader = set.holder("receiver:email").await.unwrap();
    imap.deliver(BUTLER, "pw-1", &mail("k1@example.com", "before the kill")).await;
    smtp.wait(20, "the first answer", |m| m.iter().any(|m| m.data.contains("echo: before the kill"))).await;

    // The reader dies; another replica reads within the lease time and nothing is lost.
    set.kill(leader);
    imap.deliver(BUTLER, "pw-1", &mail("k2@example.com", "after the kill")).await;
    smtp.wait(30, "the answer after the takeover", |m| m.iter().any(|m| m.data.contains("echo: after the kill"))).await;
    let new_leader = set.holder("receiver:email").await.expect("a new leader");
    assert_ne!(new_leader, leader);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mails = smtp.mails();
    for text in ["echo: before the kill", "echo: after the kill"] {
        assert_eq!(mails.iter().filter(|m| m.data.contains(text)).count(), 1, "{text} once: {mails:#?}");
    }
}
