//! Points 6 and 8 for the event stream, files and doctor: a redelivered envelope is one event;
//! the stream reconnects when the daemon drops it; messages sent while Butler is down are
//! handled once when it is back (the daemon holds them in manual receive mode), none twice;
//! files people send reach the model through `getAttachment`; Butler's files go out as
//! attachments; `butler doctor` checks the daemon and the account and says what to fix.

use crate::support::fake_llm::Reply;
use crate::support::fake_signal::envelopes::{direct, uuid_for, with_attachment, ACCOUNT};
use crate::support::fake_signal::FakeSignal;
use crate::support::payloads::{out_file, pdf, png};
use crate::{listening, settle, signal, Sg, OWNER};
use butler::channel::{Channel, ConversationRef, Outbound};
use butler::channels::SignalConfig;
use butler_signal::{Settings, SignalChannel};

const T: i64 = 1_761_000_000_000;

#[tokio::test]
async fn a_redelivered_envelope_is_one_event_and_a_dropped_stream_reconnects() {
    let sg = Sg::start().await;
    listening(&sg.fake).await;
    sg.llm.on_every("ping", Reply::text("pong"));
    sg.fake.push(direct(OWNER, &uuid_for(OWNER), T, "ping 1"));
    sg.fake.wait_sent(20, "the first answer", |s| s.len() == 1).await;
    sg.fake.redeliver_last();
    settle().await;
    assert_eq!(sg.app.inbox_count().await, 1, "the same envelope is one event");
    assert_eq!(sg.fake.sent().len(), 1, "answered once");

    let opened = sg.fake.streams_opened();
    sg.fake.drop_streams();
    sg.fake.push(direct(OWNER, &uuid_for(OWNER), T + 1, "ping 2"));
    sg.fake.wait_sent(20, "the answer after the reconnect", |s| s.len() == 2).await;
    assert!(sg.fake.streams_opened() > opened, "Butler connected again");
    sg.stop().await;
}

#[tokio::test]
async fn messages_sent_while_butler_is_down_are_handled_once_when_it_is_back() {
    let sg = Sg::start().await;
    listening(&sg.fake).await;
    sg.llm.on_every("note", Reply::text("noted"));
    sg.fake.push(direct(OWNER, &uuid_for(OWNER), T, "note one"));
    sg.fake.wait_sent(20, "the first answer", |s| s.len() == 1).await;
    let Sg { mut app, fake, llm } = sg;
    let dir = app._dir.take();
    app.stop().await;
    // While Butler is away: two new messages, and the first one again.
    fake.push(direct(OWNER, &uuid_for(OWNER), T + 1, "note two"));
    fake.push(direct(OWNER, &uuid_for(OWNER), T + 2, "note three"));
    fake.push(direct(OWNER, &uuid_for(OWNER), T, "note one"));
    let app = Sg::app(&fake, &llm, dir, vec![]).await;
    fake.wait_sent(20, "both new answers", |s| s.len() >= 3).await;
    settle().await;
    assert_eq!(fake.sent().len(), 3, "each message answered once: {:#?}", fake.sent());
    assert_eq!(app.inbox_count().await, 3);
    assert_eq!(fake.pending(), 0, "nothing left waiting at the daemon");
    app.stop().await;
}

#[tokio::test]
async fn a_photo_people_send_reaches_the_model() {
    let sg = Sg::start().await;
    listening(&sg.fake).await;
    sg.fake.add_attachment("Xk2pAbC.png", png(64, 48));
    sg.llm.on("picture", Reply::text("a gradient"));
    let envelope = with_attachment(
        direct(OWNER, &uuid_for(OWNER), T, "what is in this picture"),
        "Xk2pAbC.png",
        "image/png",
        "x.png",
        0,
    );
    sg.fake.push(envelope);
    sg.fake.wait_sent(20, "the answer", |s| s.iter().any(|m| m.text == "a gradient")).await;
    assert_eq!(sg.llm.last_request().unwrap().images().len(), 1, "the photo was given to the model");
    let fetch = &sg.fake.calls_of("getAttachment")[0];
    assert_eq!((fetch.params["id"].as_str(), fetch.params["recipient"].as_str()), (Some("Xk2pAbC.png"), Some(OWNER)));
    sg.stop().await;
}

#[tokio::test]
async fn butlers_files_are_sent_as_attachments_with_their_caption() {
    let fake = FakeSignal::start().await;
    let channel = SignalChannel::new(Settings { url: fake.url(), account: ACCOUNT.into() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let report = pdf("Q3");
    let file = out_file(dir.path(), "report.pdf", "application/pdf", &report, false);
    let to = ConversationRef::new("signal", OWNER);
    let msg =
        Outbound { file: Some(file), reply_to: Some(format!("{T}:{OWNER}")), ..Outbound::text(to, "**The** report") };
    let sent = channel.send(&msg).await.unwrap();
    let m = fake.sent().into_iter().next().unwrap();
    assert_eq!(sent.id, format!("{}:{ACCOUNT}", m.timestamp), "the id reactions and quotes name it by");
    assert_eq!((m.text.as_str(), m.styles.clone(), m.quote), ("The report", vec!["0:3:BOLD".to_string()], Some(T)));
    assert_eq!(m.attachments, [("application/pdf".to_string(), "report.pdf".to_string(), report)]);
}

async fn check(cfg: &SignalConfig) -> Result<String, (String, String)> {
    crate::support::app::doctor_channel("signal", cfg.to_table()).await
}

#[tokio::test]
async fn doctor_checks_the_daemon_and_the_account() {
    let fake = FakeSignal::start().await;
    let ok = check(&signal(&fake)).await.unwrap();
    assert!(ok.contains(ACCOUNT) && ok.contains(&fake.url()), "{ok}");
    let (problem, fix) = check(&SignalConfig { account: "+15559999999".into(), ..signal(&fake) }).await.unwrap_err();
    assert!(problem.contains("+15559999999") && fix.contains("register or link"), "{problem} / {fix}");
    let gone = SignalConfig { url: "http://127.0.0.1:9".into(), ..signal(&fake) };
    let (problem, fix) = check(&gone).await.unwrap_err();
    assert!(problem.contains("cannot reach") && fix.contains("daemon --http"), "{problem} / {fix}");
}
