//! Points 1 and 3: one reply however often Slack delivers an event; a fast acknowledgement
//! after the event is durable; DMs, mentions and threads (a thread is a session, answers go in
//! the thread); bots and Butler itself ignored; edits not answered (the documented policy).

use crate::support::fake_llm::Reply;
use crate::support::fake_slack::{payloads as p, BOT_ID, BOT_USER};
use crate::{start, Setup, ALICE, BOB};
use std::time::{Duration, Instant};

#[tokio::test]
async fn retries_and_repeated_event_ids_produce_one_reply() {
    let rig = start(Setup::default()).await;
    let (id, ts) = (p::event_id(), p::ts());
    let event = p::callback(&id, p::mention(ALICE, "CRETRY", "count me once", &ts, None));
    assert_eq!(rig.send.event(&event, None).await.status, 200);
    // Slack's redeliveries (X-Slack-Retry-Num, freshly signed) and a plain repeat.
    assert_eq!(rig.send.event(&event, Some(1)).await.status, 200);
    assert_eq!(rig.send.event(&event, Some(2)).await.status, 200);
    assert_eq!(rig.send.event(&event, None).await.status, 200);
    let reply = rig.slack.wait_text("CRETRY", "count me once").await;
    assert_eq!(reply.thread_ts.as_deref(), Some(ts.as_str()), "answered in the mention's thread");
    rig.slack.assert_quiet(800).await;
    assert_eq!(rig.slack.messages("CRETRY").len(), 1, "one reply");
    assert_eq!(rig.llm.request_count(), 1, "one turn");
    rig.app.stop().await;
}

#[tokio::test]
async fn acknowledged_within_three_seconds_after_the_event_is_durable() {
    let rig = start(Setup::default()).await;
    rig.llm.on("slow question", Reply::text("slow answer").first_byte_delay(Duration::from_secs(4)));
    let (id, ts) = (p::event_id(), p::ts());
    let event = p::callback(&id, p::message(ALICE, "DALICE", "im", "slow question", &ts, None));
    let started = Instant::now();
    let a = rig.send.event(&event, None).await;
    let took = started.elapsed();
    assert_eq!(a.status, 200);
    assert!(took < Duration::from_secs(3), "acknowledged after {took:?}");
    assert!(rig.stored(&id).await, "the event was durable before the acknowledgement");
    assert!(rig.slack.messages("DALICE").is_empty(), "the work happens after the acknowledgement");
    let reply = rig.slack.wait_text("DALICE", "slow answer").await;
    assert_eq!(reply.thread_ts, None, "a top-level DM is answered at the top level");
    // The working reaction marked the message meanwhile and is gone with the answer.
    rig.slack.wait(5, "the working reaction removed", |f| f.reactions().is_empty()).await;
    let added = rig.slack.calls_of("reactions.add");
    assert_eq!(added.len(), 1);
    assert_eq!(added[0].params["timestamp"], ts.as_str());
    assert_eq!(rig.slack.calls_of("reactions.remove").len(), 1);
    rig.app.stop().await;
}

#[tokio::test]
async fn dms_and_dm_threads() {
    let rig = start(Setup::default()).await;
    let fixtures = std::fs::read_to_string(format!(
        "{}/tests/fixtures/slack/events_docs_examples.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let fixtures: serde_json::Value = serde_json::from_str(&fixtures).unwrap();
    // The documented message.im payload, from a user Butler lets in.
    let mut im = fixtures["message_im_envelope"]["payload"].clone();
    im["event"]["user"] = ALICE.into();
    assert_eq!(rig.send.event(&im, None).await.status, 200);
    let reply = rig.slack.wait_text("D024BE91L", "echo: Hello hello can you hear me?").await;
    assert_eq!(reply.thread_ts, None);
    // Asked inside a DM thread, Butler answers in that thread.
    let (root, ts) = (p::ts(), p::ts());
    let event = p::callback(&p::event_id(), p::message(ALICE, "D024BE91L", "im", "in a thread", &ts, Some(&root)));
    rig.send.event(&event, None).await;
    let reply = rig.slack.wait_text("D024BE91L", "echo: in a thread").await;
    assert_eq!(reply.thread_ts.as_deref(), Some(root.as_str()));
    rig.app.stop().await;
}

#[tokio::test]
async fn a_mention_starts_a_thread_session_that_butler_follows() {
    let rig = start(Setup::default()).await;
    let (m, thread) = (p::event_id(), p::ts());
    rig.send.event(&p::callback(&m, p::mention(ALICE, "CTEAM", "what is the plan?", &thread, None)), None).await;
    let first = rig.slack.wait_text("CTEAM", "what is the plan?").await;
    assert_eq!(first.thread_ts.as_deref(), Some(thread.as_str()));
    // Bob replies in that thread without a mention: Butler has spoken there, so it answers,
    // in the thread, with the thread's history (one session).
    let reply =
        p::callback(&p::event_id(), p::message(BOB, "CTEAM", "channel", "and the budget?", &p::ts(), Some(&thread)));
    rig.send.event(&reply, None).await;
    let second = rig.slack.wait_text("CTEAM", "and the budget?").await;
    assert_eq!(second.thread_ts.as_deref(), Some(thread.as_str()));
    let req = rig.llm.last_request().unwrap();
    let history: String = req.messages().iter().map(|m| m.to_string()).collect();
    assert!(history.contains("what is the plan?"), "the thread is one session: {history}");
    // Not answered: a top-level message without a mention, a reply in someone else's thread.
    let top = p::callback(&p::event_id(), p::message(BOB, "CTEAM", "channel", "lunch anyone?", &p::ts(), None));
    let other_root = p::ts();
    let other = p::callback(&p::event_id(), p::message(BOB, "CTEAM", "channel", "me!", &p::ts(), Some(&other_root)));
    assert_eq!(rig.send.event(&top, None).await.status, 200);
    assert_eq!(rig.send.event(&other, None).await.status, 200);
    // A message that mentions Butler arrives twice (message.channels and app_mention): one answer.
    let ts = p::ts();
    let mut twin = p::message(ALICE, "CTEAM", "channel", "<@UBUTLER> once please", &ts, None);
    twin["text"] = "<@UBUTLER> once please".into();
    rig.send.event(&p::callback(&p::event_id(), twin), None).await;
    rig.send.event(&p::callback(&p::event_id(), p::mention(ALICE, "CTEAM", "once please", &ts, None)), None).await;
    rig.slack.wait_text("CTEAM", "once please").await;
    rig.slack.assert_quiet(800).await;
    let texts: Vec<String> = rig.slack.messages("CTEAM").iter().map(|m| m.shown()).collect();
    assert_eq!(texts.len(), 3, "{texts:?}");
    assert_eq!(rig.llm.request_count(), 3);
    rig.app.stop().await;
}

#[tokio::test]
async fn bots_butlers_own_messages_and_edits_are_not_answered() {
    let rig = start(Setup::default()).await;
    let thread = p::ts();
    rig.send.event(&p::callback(&p::event_id(), p::mention(ALICE, "CBOTS", "hi", &thread, None)), None).await;
    rig.slack.wait_text("CBOTS", "hi").await;
    let llm_calls = rig.llm.request_count();

    // Butler's own message in its thread (as Slack echoes it back): skipped, nothing stored.
    let own_id = p::event_id();
    let own = p::message(BOT_USER, "CBOTS", "channel", "echo: hi", &p::ts(), Some(&thread));
    assert_eq!(rig.send.event(&p::callback(&own_id, own), None).await.status, 200);
    let mut own_bot = p::message("UOTHERAPPUSER", "CBOTS", "channel", "from my bot id", &p::ts(), Some(&thread));
    own_bot["bot_id"] = BOT_ID.into();
    let own_bot_id = p::event_id();
    rig.send.event(&p::callback(&own_bot_id, own_bot), None).await;
    // Another bot in Butler's thread: stored as a bot's message, then dropped by triage.
    let bot_id = p::event_id();
    let mut bot = p::message("UOTHERBOT", "CBOTS", "channel", "I am a bot", &p::ts(), Some(&thread));
    bot["bot_id"] = "B0THER".into();
    bot["subtype"] = "bot_message".into();
    rig.send.event(&p::callback(&bot_id, bot), None).await;
    // An edit (message_changed) of a message in Butler's thread: not answered, not stored.
    let edit_id = p::event_id();
    let edit = serde_json::json!({
        "type": "message", "subtype": "message_changed", "hidden": true, "channel": "CBOTS",
        "channel_type": "channel", "ts": p::ts(), "event_ts": p::ts(),
        "message": {"type": "message", "user": ALICE, "text": "hi (edited)", "ts": thread,
                    "edited": {"user": ALICE, "ts": p::ts()}},
        "previous_message": {"type": "message", "user": ALICE, "text": "hi", "ts": thread}
    });
    assert_eq!(rig.send.event(&p::callback(&edit_id, edit), None).await.status, 200);

    rig.slack.assert_quiet(1200).await;
    assert!(!rig.stored(&own_id).await && !rig.stored(&own_bot_id).await, "Butler's own messages are not stored");
    assert!(!rig.stored(&edit_id).await, "edits are not stored");
    let row = rig.app.app.store.inbox_get(&format!("slack:event:{bot_id}")).await.unwrap().expect("stored");
    assert!(row.event.actor.is_bot);
    assert_eq!(rig.llm.request_count(), llm_calls, "no turn for any of them");
    assert_eq!(rig.slack.messages("CBOTS").len(), 1);
    rig.app.stop().await;
}
