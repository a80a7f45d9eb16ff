//! Normalization of real captured updates (tests/fixtures/telegram, from teloxide's own tests)
//! and of constructed ones for the cases the fixtures lack: mentions, `/cmd@bot`, replies to
//! Butler, forum topics, files as attachments with their captions, other media described,
//! clicks, edits.

use super::*;
use butler_channel::{Attachment, MediaKind as Kind};
use serde_json::{json, Value};

const UPDATES: &str = include_str!("../../../../tests/fixtures/telegram/updates_teloxide.jsonl");
const MESSAGES: &str = include_str!("../../../../tests/fixtures/telegram/message_objects_teloxide.jsonl");

fn me() -> BotIdentity {
    BotIdentity { id: 999, username: "butler_bot".into() }
}

fn parse(v: Value) -> Update {
    // As Telegram sends it: text (teloxide's Update does not deserialize from a `Value`).
    serde_json::from_str(&v.to_string()).expect("a valid update")
}

fn fixture(lines: &str, key: &str) -> Vec<(String, Value)> {
    lines
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|v| (v["id"].as_str().unwrap().to_string(), v[key].clone()))
        .collect()
}

fn text_of(e: &InboundEvent) -> &str {
    e.text().unwrap_or("")
}

#[test]
fn captured_updates() {
    let mut seen = 0;
    for (id, update) in fixture(UPDATES, "update") {
        let ev = event(&parse(update.clone()), &me());
        let uid = update["update_id"].as_u64().unwrap();
        match id.as_str() {
            "teloxide-update-message-0" | "teloxide-update-de_private_chat_text_message-0" => {
                let ev = ev.expect(&id);
                assert_eq!(ev.id.0, format!("telegram:update:{uid}"));
                assert_eq!(ev.kind, ConversationKind::Direct);
                assert!(ev.addressed, "a DM is always addressed");
                let user = update["message"]["from"]["id"].as_i64().unwrap();
                assert_eq!(ev.actor.identity.to_string(), format!("telegram:{user}"));
                assert_eq!(ev.conversation.to_string(), format!("telegram:{user}"));
                assert_eq!(text_of(&ev), update["message"]["text"].as_str().unwrap());
            }
            "teloxide-update-issue_1107-0" => {
                let ev = ev.expect(&id);
                assert_eq!((ev.kind, ev.addressed), (ConversationKind::Group, false));
                assert_eq!(text_of(&ev), "[a forwarded story]");
            }
            "teloxide-update-issue_1107-1" => {
                let ev = ev.expect(&id);
                assert!(ev.addressed, "/report is a command");
                assert_eq!(text_of(&ev), "/report");
                // A reply thread in a supergroup that is not a forum is the same conversation.
                assert_eq!(ev.conversation.to_string(), "telegram:-1001293752024");
                assert_eq!(ev.reply_to.as_deref(), Some("134545"));
                assert_eq!(ev.actor.display_name.as_deref(), Some("the Cable Guy"));
            }
            "teloxide-update-dice_works-0" => {
                let ev = ev.expect(&id);
                assert_eq!(text_of(&ev), "[dice 🎲 rolled 2]");
                assert!(!ev.addressed);
            }
            "teloxide-update-pinned_message_works-0" | "teloxide-update-issue_523-0" => {
                assert_eq!(ev, None, "{id}: service messages and member updates are not events");
            }
            other => panic!("a fixture without an expectation: {other}"),
        }
        seen += 1;
    }
    assert_eq!(seen, 7);
}

#[test]
fn captured_messages() {
    for (n, (id, message)) in fixture(MESSAGES, "message").into_iter().enumerate() {
        let ev = event(&parse(json!({"update_id": n, "message": message})), &me());
        let text = ev.as_ref().map(|e| text_of(e).to_string());
        match id.as_str() {
            "teloxide-message-de_text-0" => assert_eq!(text.as_deref(), Some("Лол кек 😂")),
            "teloxide-message-de_image-0" => {
                // The largest of the three sizes; the text is the (missing) caption.
                assert_eq!(text.as_deref(), Some(""));
                let want = Attachment {
                    mime: Some("image/jpeg".into()),
                    size: Some(75245),
                    ..Attachment::new(Kind::Image, "AgADAgAD36sxG-PX0UvQSXIn9rccdw-ACA4ABAEAAwIAA3kAAyTcBAABFgQ")
                };
                assert_eq!(ev.unwrap().attachments, vec![want]);
            }
            "teloxide-message-de_sticker-0" => {
                assert_eq!(text.as_deref(), Some("[animated sticker 😡 from the set \"AdvenTimeAnim\"]"))
            }
            "teloxide-message-issue_419-0" => {
                assert!(ev.unwrap().actor.is_bot, "an anonymous admin speaks through GroupAnonymousBot")
            }
            "teloxide-message-issue_427-0" | "teloxide-message-issue_427-1" | "teloxide-message-issue_475-0" => {
                assert_eq!(ev, None, "{id}: a service message")
            }
            other => panic!("a fixture without an expectation: {other}"),
        }
    }
}

fn user(id: u64, name: &str) -> Value {
    json!({"id": id, "is_bot": false, "first_name": name})
}

fn supergroup(forum: bool) -> Value {
    json!({"id": -1001234567890i64, "title": "Team", "type": "supergroup", "is_forum": forum})
}

fn group_message(extra: Value) -> Update {
    let mut m = json!({"message_id": 10, "date": 1700000000, "chat": supergroup(false), "from": user(42, "Alice")});
    for (k, v) in extra.as_object().unwrap() {
        m[k] = v.clone();
    }
    parse(json!({"update_id": 5, "message": m}))
}

fn addressed(extra: Value) -> (bool, String) {
    let ev = event(&group_message(extra), &me()).expect("an event");
    (ev.addressed, text_of(&ev).to_string())
}

#[test]
fn when_a_group_message_is_for_butler() {
    let mention = |text: &str, offset: usize, len: usize| json!({"text": text, "entities": [{"type": "mention", "offset": offset, "length": len}]});
    let cases: Vec<(&str, Value, bool, &str)> = vec![
        ("plain talk", json!({"text": "lunch?"}), false, "lunch?"),
        ("mention", mention("hey @butler_bot hi", 4, 11), true, "hey @butler_bot hi"),
        ("mention, other case", mention("@Butler_Bot hi", 0, 11), true, "@Butler_Bot hi"),
        ("mention after emoji (UTF-16 offsets)", mention("😀 @butler_bot", 3, 11), true, "😀 @butler_bot"),
        ("someone else", mention("@alice_bot hi", 0, 10), false, "@alice_bot hi"),
        (
            "text mention",
            json!({"text": "Butler hi", "entities": [{"type": "text_mention", "offset": 0, "length": 6, "user": {"id": 999, "is_bot": true, "first_name": "Butler"}}]}),
            true,
            "Butler hi",
        ),
        ("command", json!({"text": "/status"}), true, "/status"),
        ("command for Butler", json!({"text": "/help@butler_bot now"}), true, "/help now"),
        ("command for another bot", json!({"text": "/help@other_bot"}), false, "/help@other_bot"),
        ("not a command", json!({"text": "/ no"}), false, "/ no"),
        (
            "reply to Butler",
            json!({"text": "and then?", "reply_to_message": {"message_id": 9, "date": 1700000000, "chat": supergroup(false), "from": {"id": 999, "is_bot": true, "first_name": "Butler", "username": "butler_bot"}, "text": "earlier"}}),
            true,
            "and then?",
        ),
        (
            "reply to someone else",
            json!({"text": "and then?", "reply_to_message": {"message_id": 9, "date": 1700000000, "chat": supergroup(false), "from": user(43, "Bob"), "text": "earlier"}}),
            false,
            "and then?",
        ),
        (
            "caption mention",
            json!({"photo": [{"file_id": "p", "file_unique_id": "u", "width": 10, "height": 20, "file_size": 2048}], "caption": "@butler_bot what is this?", "caption_entities": [{"type": "mention", "offset": 0, "length": 11}]}),
            true,
            "@butler_bot what is this?",
        ),
    ];
    for (name, extra, want, text) in cases {
        assert_eq!(addressed(extra), (want, text.to_string()), "{name}");
    }
}

/// (what, message fields, the text the agent reads, the attachment).
type MediaCase = (&'static str, Value, &'static str, Option<Attachment>);

fn media_cases() -> Vec<MediaCase> {
    let file =
        |kind, id: &str, mime: Option<&str>, size: Option<u64>, name: Option<&str>, secs: Option<u32>| Attachment {
            mime: mime.map(str::to_string),
            size,
            name: name.map(str::to_string),
            duration_secs: secs,
            ..Attachment::new(kind, id)
        };
    vec![
        (
            "photo: the largest size, served as JPEG",
            json!({"photo": [{"file_id": "p-small", "file_unique_id": "u1", "width": 90, "height": 60, "file_size": 1000},
                             {"file_id": "p-big", "file_unique_id": "u2", "width": 1280, "height": 853, "file_size": 204800},
                             {"file_id": "p-mid", "file_unique_id": "u3", "width": 320, "height": 213, "file_size": 20480}],
                   "caption": "what bird is this?"}),
            "what bird is this?",
            Some(file(Kind::Image, "p-big", Some("image/jpeg"), Some(204800), None, None)),
        ),
        (
            "voice note without caption",
            json!({"voice": {"file_id": "v", "file_unique_id": "u", "duration": 7, "mime_type": "audio/ogg", "file_size": 23456}}),
            "",
            Some(file(Kind::Voice, "v", Some("audio/ogg"), Some(23456), None, Some(7))),
        ),
        (
            "audio file with name",
            json!({"audio": {"file_id": "a", "file_unique_id": "u", "duration": 185, "performer": "Band", "title": "Song",
                             "file_name": "song.mp3", "mime_type": "audio/mpeg", "file_size": 4404019}, "caption": "listen"}),
            "listen",
            Some(file(Kind::Audio, "a", Some("audio/mpeg"), Some(4404019), Some("song.mp3"), Some(185))),
        ),
        (
            "document with caption",
            json!({"document": {"file_id": "d", "file_unique_id": "u", "file_name": "report.pdf", "mime_type": "application/pdf", "file_size": 3145728}, "caption": "Q3"}),
            "Q3",
            Some(file(Kind::Document, "d", Some("application/pdf"), Some(3145728), Some("report.pdf"), None)),
        ),
        (
            "document without size, name or type",
            json!({"document": {"file_id": "d2", "file_unique_id": "u"}, "caption": "   "}),
            "",
            Some(file(Kind::Document, "d2", None, None, None, None)),
        ),
        (
            "video",
            json!({"video": {"file_id": "vid", "file_unique_id": "u", "width": 640, "height": 480, "duration": 3, "mime_type": "video/mp4", "file_size": 800000, "file_name": "clip.mp4"}}),
            "",
            Some(file(Kind::Video, "vid", Some("video/mp4"), Some(800000), Some("clip.mp4"), Some(3))),
        ),
        (
            "video note: round, always MP4",
            json!({"video_note": {"file_id": "vn", "file_unique_id": "u", "length": 240, "duration": 12, "file_size": 512000}}),
            "",
            Some(file(Kind::VideoNote, "vn", Some("video/mp4"), Some(512000), None, Some(12))),
        ),
        (
            "animation (a GIF) as a video",
            json!({"animation": {"file_id": "gif", "file_unique_id": "u", "width": 320, "height": 240, "duration": 2, "file_name": "dance.gif.mp4", "mime_type": "video/mp4", "file_size": 90000},
                   "document": {"file_id": "gif", "file_unique_id": "u", "file_name": "dance.gif.mp4", "mime_type": "video/mp4", "file_size": 90000},
                   "caption": "lol"}),
            "lol",
            Some(file(Kind::Video, "gif", Some("video/mp4"), Some(90000), Some("dance.gif.mp4"), Some(2))),
        ),
        (
            "sticker: described, not downloaded",
            json!({"sticker": {"file_id": "s", "file_unique_id": "u", "type": "regular", "width": 512, "height": 512, "is_animated": false, "is_video": false, "emoji": "👍"}}),
            "[sticker 👍]",
            None,
        ),
        (
            "location",
            json!({"location": {"latitude": 52.52, "longitude": 13.405}}),
            "[location 52.52000, 13.40500]",
            None,
        ),
        (
            "contact",
            json!({"contact": {"phone_number": "+4930123456", "first_name": "Ann", "last_name": "Lee"}}),
            "[contact Ann Lee, +4930123456]",
            None,
        ),
        ("plain text", json!({"text": "hello"}), "hello", None),
    ]
}

#[test]
fn files_become_attachments_and_the_caption_is_the_text() {
    for (what, extra, text, want) in media_cases() {
        let ev = event(&group_message(extra), &me()).expect(what);
        assert_eq!(text_of(&ev), text, "{what}");
        assert_eq!(ev.attachments, want.into_iter().collect::<Vec<_>>(), "{what}");
    }
}

#[test]
fn dice_and_service_messages_carry_no_attachments() {
    let dice = json!({"dice": {"emoji": "🎯", "value": 6}});
    let ev = event(&group_message(dice), &me()).unwrap();
    assert_eq!((text_of(&ev), ev.attachments.len()), ("[dice 🎯 rolled 6]", 0));
    let pin = json!({"pinned_message": {"message_id": 1, "date": 1700000000, "chat": supergroup(false), "text": "x"}});
    assert_eq!(event(&group_message(pin), &me()), None);
}

#[test]
fn forum_topics_are_their_own_conversation() {
    let m = json!({"message_id": 11, "date": 1700000000, "chat": supergroup(true), "from": user(42, "Alice"), "message_thread_id": 42, "is_topic_message": true, "text": "@butler_bot hi", "entities": [{"type": "mention", "offset": 0, "length": 11}]});
    let ev = event(&parse(json!({"update_id": 6, "message": m})), &me()).unwrap();
    assert_eq!(ev.conversation.to_string(), "telegram:-1001234567890/42");
    assert_eq!(ev.kind, ConversationKind::Group);
}

#[test]
fn clicks_carry_the_action_the_message_and_the_query() {
    let msg = json!({"message_id": 77, "date": 1700000000, "chat": supergroup(true), "from": {"id": 999, "is_bot": true, "first_name": "Butler"}, "message_thread_id": 42, "is_topic_message": true, "text": "Approve?"});
    let q = json!({"id": "4382bfdwdsb323b2d9", "from": user(42, "Alice"), "message": msg, "chat_instance": "1", "data": "ap:0123456789abcdef0123456789abcdef:once"});
    let ev = event(&parse(json!({"update_id": 7, "callback_query": q})), &me()).unwrap();
    assert_eq!(ev.id.0, "telegram:update:7");
    assert_eq!(ev.actor.identity.to_string(), "telegram:42");
    assert_eq!(ev.conversation.to_string(), "telegram:-1001234567890/42");
    assert_eq!(
        ev.body,
        EventBody::Action {
            action: "ap:0123456789abcdef0123456789abcdef:once".into(),
            message: Some("77".into()),
            interaction: Some("4382bfdwdsb323b2d9".into()),
        }
    );
    // A click on a message too old to be shown still names its chat and id.
    let old = json!({"id": "q2", "from": user(42, "Alice"), "message": {"chat": {"id": 42, "type": "private", "first_name": "A"}, "message_id": 5, "date": 0}, "chat_instance": "1", "data": "stop:t1"});
    let ev = event(&parse(json!({"update_id": 8, "callback_query": old})), &me()).unwrap();
    assert_eq!((ev.kind, ev.conversation.to_string()), (ConversationKind::Direct, "telegram:42".into()));
}

#[test]
fn edits_and_other_updates_are_not_events() {
    let m = json!({"message_id": 10, "date": 1700000000, "edit_date": 1700000100, "chat": {"id": 42, "type": "private", "first_name": "A"}, "from": user(42, "A"), "text": "fixed typo"});
    assert_eq!(event(&parse(json!({"update_id": 9, "edited_message": m})), &me()), None);
    let post = json!({"message_id": 1, "date": 1700000000, "chat": {"id": -100555, "type": "channel", "title": "News"}, "text": "news"});
    assert_eq!(event(&parse(json!({"update_id": 10, "channel_post": post})), &me()), None);
}

/// Updates teloxide cannot read: (what, raw update, Some(text of the event) when repaired).
#[test]
fn unreadable_updates_are_repaired_when_the_cause_is_known() {
    let private = json!({"id": 42, "type": "private", "first_name": "Ann"});
    let cases: Vec<(&str, Value, Option<&str>)> = vec![
        (
            "message from without is_bot (Telegram's documented example)",
            json!({"update_id": 1, "message": {"message_id": 1, "date": 1700000000, "chat": private,
                "from": {"id": 42, "first_name": "Ann"}, "text": "hello"}}),
            Some("hello"),
        ),
        (
            "reply_to_message from without is_bot too",
            json!({"update_id": 2, "message": {"message_id": 2, "date": 1700000000, "chat": private,
                "from": {"id": 42, "first_name": "Ann"}, "text": "and this",
                "reply_to_message": {"message_id": 1, "date": 1700000000, "chat": private,
                    "from": {"id": 42, "first_name": "Ann"}, "text": "hello"}}}),
            Some("and this"),
        ),
        (
            "callback query from without is_bot",
            json!({"update_id": 3, "callback_query": {"id": "q1", "chat_instance": "c", "data": "ap:1:once",
                "from": {"id": 42, "first_name": "Ann"},
                "message": {"message_id": 1, "date": 1700000000, "chat": private,
                    "from": {"id": 999, "is_bot": true, "first_name": "Butler"}, "text": "Approve?"}}}),
            Some(""),
        ),
        ("a message without chat or date", json!({"update_id": 4, "message": {"message_id": 1, "text": "x"}}), None),
        ("an update kind nobody knows", json!({"update_id": 5, "future_kind": {"a": 1}}), None),
    ];
    for (what, raw, want) in cases {
        let parsed: Update = serde_json::from_str(&raw.to_string()).expect(what);
        assert!(matches!(parsed.kind, UpdateKind::Error(_)), "{what}: teloxide alone cannot read it");
        let repaired = repair(&raw);
        match want {
            None => assert!(repaired.is_none(), "{what}"),
            Some(text) => {
                let ev = event(&repaired.expect(what), &me()).expect(what);
                assert_eq!(ev.text().unwrap_or(""), text, "{what}");
                assert!(!ev.actor.is_bot, "{what}");
            }
        }
    }
}
