//! Points 1 and 6: the gateway. Butler takes the URL from GET /api/v10/gateway, identifies with
//! the intents it needs and heartbeats with the last sequence number. DMs are answered; in a
//! guild Butler answers when mentioned or replied to, and in threads it is part of; a thread
//! is a session of its own. A socket dropped mid-conversation is resumed and Discord's replay
//! fills the gap; when Discord refuses the Resume, Butler identifies afresh. Nothing delivered
//! is lost and nothing is answered twice.

use crate::support::fake_discord::payloads::{thread, user};
use crate::support::fake_discord::{FakeDiscord, BOT_ID, TOKEN};
use crate::{alice, bob, Rig, DM, GENERAL, THREAD};
use std::time::Duration;

/// Butler's answers in `channel`, waiting for `n`.
async fn answers(rig: &Rig, channel: &str, n: usize) -> Vec<String> {
    rig.discord.wait_messages(channel, n).await.into_iter().map(|m| m.content).collect()
}

#[tokio::test]
async fn identifies_with_the_intents_butler_needs_and_heartbeats() {
    let discord = FakeDiscord::start().await;
    discord.heartbeat_interval(250);
    let rig = Rig::start_on(discord, vec![], |_| {}).await;
    let log = rig.discord.gateway_log();
    assert_eq!(log.identifies.len(), 1);
    let identify = &log.identifies[0];
    assert_eq!(identify["token"], TOKEN);
    // GUILDS (1) | GUILD_MESSAGES (512) | DIRECT_MESSAGES (4096) | MESSAGE_CONTENT (32768).
    assert_eq!(identify["intents"], 1 + 512 + 4096 + 32768);
    assert_eq!(identify["properties"]["browser"], "butler");
    let calls = rig.discord.calls();
    assert!(calls.iter().any(|c| c.method == "GET" && c.path == "/api/v10/gateway"), "{calls:?}");
    // Heartbeats carry the last sequence number (Ready = 1, GUILD_CREATE = 2) and are acknowledged:
    // after several intervals Butler is still on its first connection.
    let beats = rig.discord.wait_for(10, "three heartbeats", |f| {
        let beats = f.gateway_log().heartbeats;
        (beats.len() >= 3).then_some(beats)
    });
    let beats = beats.await;
    assert_eq!(beats.last().unwrap(), 2, "{beats:?}");
    assert_eq!(rig.discord.gateway_log().connections, 1);
    rig.stop().await;
}

#[tokio::test]
async fn dms_mentions_replies_and_threads() {
    let rig = Rig::start().await;

    // A DM is always addressed.
    rig.dm(&alice(), "hello there");
    let dm = answers(&rig, DM, 1).await;
    assert!(dm[0].contains("hello there"), "{dm:?}");

    // In a guild channel: quiet unless mentioned.
    rig.say(GENERAL, &alice(), "just chatting", |m| m);
    rig.discord.assert_quiet(GENERAL, 0).await;
    let asked = rig.say(GENERAL, &alice(), "what's up", |m| m.mentioning_bot());
    let general = answers(&rig, GENERAL, 1).await;
    assert!(general[0].contains("what's up") && !general[0].contains(BOT_ID), "mention stripped: {general:?}");
    let first = rig.discord.bot_messages(GENERAL)[0].clone();
    assert_eq!(first.reply_to.as_deref(), asked["id"].as_str(), "the answer replies to the question");

    // A reply to Butler is addressed; Butler speaking in a channel does not make it a thread.
    rig.say(GENERAL, &bob(), "and you?", |m| m.replying_to(&first.json));
    let general = answers(&rig, GENERAL, 2).await;
    assert!(general[1].contains("and you?"), "{general:?}");
    rig.say(GENERAL, &bob(), "no mention again", |m| m);
    rig.discord.assert_quiet(GENERAL, 2).await;
    // Other bots are never answered, even when they mention Butler.
    let other_bot = {
        let mut u = user("2000000000000000099", "otherbot");
        u["bot"] = serde_json::json!(true);
        u
    };
    rig.say(GENERAL, &other_bot, "ping", |m| m.mentioning_bot());
    rig.discord.assert_quiet(GENERAL, 2).await;

    // A thread: quiet until Butler is brought in, then part of it.
    rig.discord.dispatch("THREAD_CREATE", thread(THREAD, GENERAL));
    rig.say(THREAD, &alice(), "thread chatter", |m| m);
    rig.discord.assert_quiet(THREAD, 0).await;
    rig.say(THREAD, &alice(), "remember the word kiwi", |m| m.mentioning_bot());
    answers(&rig, THREAD, 1).await;
    rig.say(THREAD, &bob(), "what was the word?", |m| m);
    let in_thread = answers(&rig, THREAD, 2).await;
    assert!(in_thread[1].contains("what was the word?"), "{in_thread:?}");

    // The thread is its own session: its history has the thread's words, not the channel's.
    let last = rig.llm.last_request().unwrap();
    let history = serde_json::to_string(last.messages()).unwrap();
    assert!(history.contains("kiwi"), "{history}");
    assert!(!history.contains("what's up") && !history.contains("hello there"), "{history}");

    // What was not addressed is on record as such.
    let drops: Vec<String> = rig
        .app
        .app
        .store
        .decisions_recent(50)
        .await
        .unwrap()
        .into_iter()
        .filter(|d| d.decision == "drop")
        .map(|d| d.reason)
        .collect();
    assert!(drops.iter().filter(|r| r.contains("not addressed")).count() >= 3, "{drops:?}");
    assert!(drops.iter().any(|r| r.contains("bot")), "{drops:?}");
    rig.stop().await;
}

#[tokio::test]
async fn threads_are_known_from_channel_type_and_from_butlers_own_messages() {
    let rig = Rig::start().await;
    // A thread Discord names only through MESSAGE_CREATE's `channel_type` (11, public thread).
    let t2 = "3000000000000000004";
    rig.say(t2, &alice(), "first in t2", |m| m.mentioning_bot().channel_type(11));
    answers(&rig, t2, 1).await;
    rig.say(t2, &bob(), "second in t2", |m| m.channel_type(11));
    assert!(answers(&rig, t2, 2).await[1].contains("second in t2"));

    // A thread started from one of Butler's messages (its id is that message's id).
    rig.say(GENERAL, &alice(), "start here", |m| m.mentioning_bot());
    let root = rig.discord.wait_messages(GENERAL, 1).await[0].id.clone();
    rig.discord.dispatch("THREAD_CREATE", thread(&root, GENERAL));
    rig.say(&root, &bob(), "following up in the thread", |m| m);
    assert!(answers(&rig, &root, 1).await[0].contains("following up in the thread"));

    // A thread Butler never spoke in stays quiet without a mention.
    let t3 = "3000000000000000005";
    rig.discord.dispatch("THREAD_CREATE", thread(t3, GENERAL));
    rig.say(t3, &alice(), "nothing for Butler", |m| m.channel_type(11));
    rig.discord.assert_quiet(t3, 0).await;
    rig.stop().await;
}

/// Butler's answers in the DM, waiting until exactly `words` each appear once.
async fn each_answered_once(rig: &Rig, words: &[&str]) {
    let msgs = rig.discord.wait_messages(DM, words.len()).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let texts: Vec<String> = rig.discord.bot_messages(DM).into_iter().map(|m| m.content).collect();
    assert_eq!(texts.len(), words.len(), "{texts:?} (first wait saw {})", msgs.len());
    for w in words {
        assert_eq!(texts.iter().filter(|t| t.ends_with(&format!(" {w}"))).count(), 1, "{w} in {texts:?}");
    }
}

#[tokio::test]
async fn a_dropped_socket_is_resumed_and_loses_nothing() {
    let rig = Rig::start().await;
    rig.dm(&alice(), "one");
    answers(&rig, DM, 1).await;

    // "two" is on the wire when the socket drops; "three" is sent while Butler is away.
    rig.dm(&alice(), "two");
    rig.discord.drop_connection();
    let at_drop = rig.discord.seq();
    rig.dm(&alice(), "three");
    let log = rig.discord.wait_for(20, "a Resume", |f| {
        let log = f.gateway_log();
        (!log.resumes.is_empty()).then_some(log)
    });
    let log = log.await;
    assert_eq!(log.identifies.len(), 1, "resumed, not identified again");
    assert!(log.resumes[0] <= at_drop, "Butler resumes from the last event it processed: {log:?}");
    rig.discord.wait_connected().await;
    each_answered_once(&rig, &["one", "two", "three"]).await;

    // Twice more, with messages racing the drop: still each exactly once.
    for round in 0..2 {
        let (a, b) = (format!("four{round}"), format!("five{round}"));
        rig.dm(&alice(), &a);
        rig.dm(&alice(), &b);
        rig.discord.drop_connection();
        rig.discord.wait_for(20, "another Resume", |f| (f.gateway_log().resumes.len() > round + 1).then_some(())).await;
        rig.discord.wait_connected().await;
    }
    each_answered_once(&rig, &["one", "two", "three", "four0", "five0", "four1", "five1"]).await;
    assert_eq!(rig.discord.gateway_log().identifies.len(), 1);
    rig.stop().await;
}

#[tokio::test]
async fn a_refused_resume_identifies_afresh() {
    let rig = Rig::start().await;
    rig.discord.refuse_resume(true);
    rig.dm(&alice(), "one");
    answers(&rig, DM, 1).await;
    // Delivered just before the drop: accepted before its number counted, so not lost.
    rig.dm(&alice(), "two");
    rig.discord.drop_connection();
    let log = rig.discord.wait_for(30, "a fresh Identify", |f| {
        let log = f.gateway_log();
        (log.identifies.len() >= 2).then_some(log)
    });
    let log = log.await;
    assert!(!log.resumes.is_empty(), "a Resume was tried first: {log:?}");
    rig.discord.wait_connected().await;
    rig.dm(&alice(), "three");
    each_answered_once(&rig, &["one", "two", "three"]).await;
    rig.stop().await;
}
