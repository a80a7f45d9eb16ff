//! Points 4 and 5: what reaches Discord. Discord Markdown, chunks of at most 2,000 characters
//! that never split a code block, a typing indicator while a turn runs, streaming by editing
//! at most once per second with the final text always delivered, and 429s waited out
//! (`retry_after` honoured) with nothing dropped or sent twice.

use crate::support::fake_discord::Msg;
use crate::support::fake_llm::Reply;
use crate::{alice, Rig, DM, GENERAL};
use std::time::Duration;

fn fences_balanced(text: &str) -> bool {
    text.lines().filter(|l| l.trim_start().starts_with("```")).count() % 2 == 0
}

/// The shortest time between two writes (create or edit) of one message.
fn min_spacing(m: &Msg) -> Option<Duration> {
    m.writes.windows(2).map(|w| w[1].duration_since(w[0])).min()
}

#[tokio::test]
async fn long_replies_are_rendered_and_chunked_without_splitting_code() {
    let rig = Rig::start().await;
    let mut long = String::from("#### Plan\nSome __important__ notes.\n\n```rust\n");
    for i in 0..120 {
        long.push_str(&format!("let value_{i} = compute(__x__, {i}); // keep __this__\n"));
    }
    long.push_str("```\n\n| k | v |\n|---|---|\n| a | 1 |\n\n");
    for i in 0..40 {
        long.push_str(&format!("Paragraph {i} with ünïcödé and 🦀 to count carefully.\n\n"));
    }
    long.push_str("The end.");
    rig.llm.on("report", Reply::text(&long));
    let question = rig.say(GENERAL, &alice(), "the report please", |m| m.mentioning_bot());

    let msgs = rig
        .discord
        .wait_for(30, "the whole report", |f| {
            let msgs = f.bot_messages(GENERAL);
            msgs.last().is_some_and(|m| m.content.ends_with("The end.")).then_some(msgs)
        })
        .await;
    assert!(msgs.len() >= 3, "{} messages", msgs.len());
    for (i, m) in msgs.iter().enumerate() {
        assert!(m.content.chars().count() <= 2000, "message {i} has {} characters", m.content.chars().count());
        assert!(fences_balanced(&m.content), "message {i} leaves a code block open:\n{}", m.content);
    }
    let all: String = msgs.iter().map(|m| m.content.as_str()).collect::<Vec<_>>().join("\n");
    assert!(all.starts_with("**Plan**\nSome **important** notes."), "{}", &all[..80]);
    assert!(all.contains("let value_119 = compute(__x__, 119); // keep __this__"), "code untouched");
    assert!(all.contains("```\n| k | v |\n|---|---|\n| a | 1 |\n```"), "the table in a code block");
    assert!(all.contains("Paragraph 39 with ünïcödé and 🦀"));
    assert_eq!(msgs[0].reply_to.as_deref(), question["id"].as_str(), "the first chunk answers the question");
    assert!(msgs[1..].iter().all(|m| m.reply_to.is_none()));
    // Every send carried a distinct nonce with enforce_nonce.
    let creates: Vec<_> =
        rig.discord.calls().into_iter().filter(|c| c.method == "POST" && c.path.ends_with("/messages")).collect();
    let nonces: std::collections::HashSet<_> =
        creates.iter().map(|c| c.body["nonce"].as_str().unwrap().to_string()).collect();
    assert_eq!(nonces.len(), creates.len());
    assert!(creates
        .iter()
        .all(|c| c.body["enforce_nonce"] == true && c.body["allowed_mentions"]["parse"] == serde_json::json!([])));
    rig.stop().await;
}

#[tokio::test]
async fn typing_then_streaming_edits_at_most_once_a_second_and_the_final_text() {
    let rig = Rig::start().await;
    let words: Vec<String> = (0..24).map(|i| format!("word{i} ")).collect();
    let full: String = words.concat();
    rig.llm.on(
        "stream",
        Reply::chunks(words.clone())
            .first_byte_delay(Duration::from_millis(600))
            .chunk_delay(Duration::from_millis(180)),
    );
    // One edit while streaming is refused with a 429: waited out, nothing lost.
    rig.discord.rate_limit("PATCH", "/messages/", 0.8);
    rig.dm(&alice(), "stream please");

    let reply = rig
        .discord
        .wait_for(30, "the streamed reply, final", |f| {
            f.bot_messages(DM).into_iter().find(|m| m.content.trim_end() == full.trim_end() && m.buttons().is_empty())
        })
        .await;
    let calls = rig.discord.calls();
    let typing = calls.iter().position(|c| c.path == format!("/api/v10/channels/{DM}/typing")).expect("a typing call");
    let first_create = calls.iter().position(|c| c.method == "POST" && c.path.ends_with("/messages")).unwrap();
    assert!(typing < first_create, "typing shown before the first message");
    assert!(reply.writes.len() >= 3, "streamed as a draft and edited: {} writes", reply.writes.len());
    let spacing = min_spacing(&reply).unwrap();
    assert!(spacing >= Duration::from_millis(950), "two writes {spacing:?} apart");
    assert!(calls.iter().any(|c| c.method == "PATCH" && c.status == 429), "the 429 happened");
    assert_eq!(rig.discord.bot_messages(DM).len(), 1, "one message, edited in place");
    rig.stop().await;
}

#[tokio::test]
async fn rate_limits_are_honoured_and_nothing_is_dropped() {
    let rig = Rig::start().await;
    // Two refusals in a row for the first send, then one for the second chunk of a long reply.
    rig.discord.rate_limit("POST", "/messages", 1.5);
    rig.discord.rate_limit("POST", "/messages", 0.5);
    rig.dm(&alice(), "first");
    let first = rig.discord.wait_messages(DM, 1).await;
    assert!(first[0].content.ends_with("first"));
    let creates: Vec<_> =
        rig.discord.calls().into_iter().filter(|c| c.method == "POST" && c.path.ends_with("/messages")).collect();
    assert_eq!(creates.iter().map(|c| c.status).collect::<Vec<_>>(), vec![429, 429, 200], "{creates:?}");
    let waited = creates[1].at.duration_since(creates[0].at);
    assert!(waited >= Duration::from_millis(1500), "retry_after 1.5 s honoured: {waited:?}");
    assert!(creates[2].at.duration_since(creates[1].at) >= Duration::from_millis(500));

    let long: String = (0..180).map(|i| format!("line {i} of a long answer\n")).collect();
    rig.llm.on("long", Reply::text(&long));
    let before = rig.discord.bot_messages(DM).len();
    // The second chunk is refused once.
    rig.discord.rate_limit_after("POST", "/messages", 1, 1.0);
    rig.dm(&alice(), "long please");
    let msgs = rig
        .discord
        .wait_for(30, "every chunk", |f| {
            let msgs = f.bot_messages(DM);
            msgs.last().is_some_and(|m| m.content.contains("line 179 of a long answer")).then_some(msgs)
        })
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let texts: Vec<String> = rig.discord.bot_messages(DM)[before..].iter().map(|m| m.content.clone()).collect();
    assert!(texts.len() >= 3, "{} chunks", texts.len());
    assert_eq!(texts.len(), msgs.len() - before, "nothing sent twice");
    assert!(texts.iter().all(|t| t.chars().count() <= 2000));
    let joined = texts.join("\n");
    for i in 0..180 {
        assert_eq!(joined.matches(&format!("line {i} of a long answer")).count(), 1, "line {i} exactly once");
    }
    let statuses: Vec<u16> = rig
        .discord
        .calls()
        .into_iter()
        .filter(|c| c.method == "POST" && c.path.ends_with("/messages"))
        .map(|c| c.status)
        .collect();
    assert_eq!(statuses.iter().filter(|s| **s == 429).count(), 3, "{statuses:?}");
    rig.stop().await;
}
