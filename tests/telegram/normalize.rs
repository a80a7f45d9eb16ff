//! Point 2 through the whole path: the captured updates of tests/fixtures/telegram replayed
//! through the fake (DMs answered, group chatter and service messages not, a `/command` in a
//! supergroup answered), forum topics answered in their topic, `/cmd@bot` understood, a photo's
//! caption reaching the agent, edits not answered again.

use crate::support::fake_telegram::files::FakeFile;
use crate::support::fake_telegram::updates::{dm, edited, group, topic, user};
use crate::support::fake_telegram::BOT_USERNAME;
use crate::{settle, Tg, ALICE, GROUP, OWNER};
use butler::config::AccessPolicy;
use serde_json::{json, Value};

const UPDATES: &str = include_str!("../fixtures/telegram/updates_teloxide.jsonl");

#[tokio::test]
async fn captured_updates_replayed_through_the_fake() {
    let tg = Tg::start_with(|cfg| cfg.access.policy = AccessPolicy::Open, vec![]).await;
    tg.polling().await;
    for line in UPDATES.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        tg.fake.push(v["update"].clone());
    }
    // The two private chats get an answer each, replying to their message.
    for (chat, text) in [(218485655, "echo: hello there"), (408258968, "echo: 4")] {
        let shown = tg.fake.wait_chat(chat, 20, "the DM answer", |m| !m.is_empty()).await;
        assert_eq!(shown[0].text, text);
    }
    // `/report` in the supergroup is a command for the bot: answered (in the chat, not a thread:
    // the group is no forum).
    let group = tg.fake.wait_chat(-1001293752024, 20, "the /report answer", |m| !m.is_empty()).await;
    assert!(group[0].text.starts_with("echo: ") && group[0].text.ends_with("/report"), "{}", group[0].text);
    assert_eq!(group[0].thread, None);
    assert_eq!(group[0].reply_to, Some(134546), "in a group the answer quotes the question");
    settle().await;
    // The story, the dice (nobody addressed Butler), the pin and the member update: nothing.
    assert_eq!(tg.fake.calls("sendMessage").len(), 3, "{:#?}", tg.fake.summary());
    assert_eq!(tg.llm.request_count(), 3);
    assert_eq!(tg.fake.pending(), 0, "every update confirmed");
    tg.stop().await;
}

#[tokio::test]
async fn groups_topics_commands_media_and_edits() {
    let tg = Tg::start().await;
    tg.polling().await;
    let alice = user(ALICE, "Alice");

    // Not addressed: ignored. Mentioned: answered.
    tg.fake.push(group(GROUP, 10, alice.clone(), "lunch anyone?", None));
    tg.fake.push(group(GROUP, 11, alice.clone(), "what time is it?", Some(BOT_USERNAME)));
    let shown = tg.fake.wait_chat(GROUP, 20, "the mention answer", |m| !m.is_empty()).await;
    assert!(shown[0].text.ends_with(&format!("@{BOT_USERNAME} what time is it?")), "{}", shown[0].text);

    // `/help@butler_test_bot` is triage's command, answered without the model.
    let before = tg.llm.request_count();
    let mut help = group(GROUP, 12, alice.clone(), &format!("/help@{BOT_USERNAME}"), None);
    help["message"]["entities"] = json!([{"type": "bot_command", "offset": 0, "length": 5 + BOT_USERNAME.len() + 1}]);
    tg.fake.push(help);
    let shown = tg.fake.wait_chat(GROUP, 20, "the help answer", |m| m.len() >= 2).await;
    assert!(shown[1].text.starts_with("Commands:"), "{:?}", shown[1].text);
    assert_eq!(tg.llm.request_count(), before);
    // A command for another bot is not for Butler.
    tg.fake.push(group(GROUP, 13, alice.clone(), "/help@other_bot", None));

    // A forum topic is its own conversation, answered in the topic.
    let mut in_topic = topic(GROUP, 42, 14, alice.clone(), &format!("@{BOT_USERNAME} in the topic"));
    in_topic["message"]["entities"] = json!([{"type": "mention", "offset": 0, "length": BOT_USERNAME.len() + 1}]);
    tg.fake.push(in_topic);
    let shown = tg.fake.wait_chat(GROUP, 20, "the topic answer", |m| m.len() >= 3).await;
    assert_eq!(shown[2].thread, Some(42));
    assert!(shown[2].text.ends_with("in the topic"));

    // A photo with a caption in a DM: the caption is the text, the photo goes to the model as
    // an image (see media.rs and attachments.rs), never as a bracket description.
    tg.fake.add_file("b", FakeFile::bytes("photos/file_b.png", crate::support::payloads::png(1280, 853)));
    let photo = json!({"message": {"message_id": 20, "date": 1700000000, "from": user(OWNER, "Owner"),
        "chat": {"id": OWNER, "type": "private", "first_name": "Owner"},
        "photo": [{"file_id": "a", "file_unique_id": "a", "width": 90, "height": 60, "file_size": 1000},
                  {"file_id": "b", "file_unique_id": "b", "width": 1280, "height": 853, "file_size": 204800}],
        "caption": "what bird is this?"}});
    tg.fake.push(photo);
    tg.texts(OWNER, 1).await;
    let asked = tg.llm.last_request().unwrap().last_user_text();
    // The old description (`[photo 1280×853, 200 KB]`) is gone; the media block says the image
    // is attached.
    assert!(asked.contains("what bird is this?") && !asked.contains("[photo 1280×853"), "{asked}");
    assert!(asked.contains("the image is attached"), "{asked}");
    assert_eq!(tg.llm.last_request().unwrap().images().len(), 1, "the photo itself reaches the model");

    // An edit of a message already answered is not answered again (documented policy).
    let n = tg.llm.request_count();
    tg.fake.push(edited(OWNER, 20, user(OWNER, "Owner"), "what bird is that?"));
    tg.fake.push(dm(OWNER, 21, "next"));
    tg.texts(OWNER, 2).await;
    settle().await;
    assert_eq!(tg.llm.request_count(), n + 1, "only the new message reached the model");
    assert_eq!(tg.fake.chat(GROUP).len(), 3, "group chatter and other bots' commands were not answered");
    tg.stop().await;
}
