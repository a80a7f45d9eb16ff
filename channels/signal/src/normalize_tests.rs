//! Envelopes as signal-cli prints them -> events (or why none), as a table.

use super::*;
use serde_json::json;

const BOT: &str = "+15550000001";
const BOT_UUID: &str = "0b6f7f4a-1c1e-4c1e-9f4a-000000000001";
const ALICE: &str = "+15550000222";
const ALICE_UUID: &str = "a11ce000-0000-4000-8000-000000000222";
const GROUP_ID: &str = "kC1z+aB/9xQ=";

fn me() -> Me {
    Me { number: BOT.into(), uuid: Some(BOT_UUID.into()) }
}

fn from_alice(data: serde_json::Value) -> serde_json::Value {
    json!({"envelope": {"source": ALICE, "sourceNumber": ALICE, "sourceUuid": ALICE_UUID, "sourceName": "Alice",
        "sourceDevice": 1, "timestamp": 1700000000000i64, "dataMessage": data}, "account": BOT})
}

#[test]
fn envelopes_become_events() {
    let ts = 1700000000000i64;
    let group = json!({"groupId": GROUP_ID, "type": "DELIVER"});
    // (envelope, conversation, kind, addressed, text or action, reply_to)
    type Want = (&'static str, ConversationKind, bool, &'static str, Option<&'static str>);
    let cases: Vec<(serde_json::Value, Want)> = vec![
        (
            from_alice(json!({"timestamp": ts, "message": "hello"})),
            (ALICE, ConversationKind::Direct, true, "hello", None),
        ),
        (
            from_alice(json!({"timestamp": ts, "message": "lunch?", "groupInfo": group})),
            ("group:kC1z-aB_9xQ=", ConversationKind::Group, false, "lunch?", None),
        ),
        (
            from_alice(json!({"timestamp": ts, "message": "\u{FFFC} what time is it?", "groupInfo": group,
                "mentions": [{"number": BOT, "uuid": BOT_UUID, "start": 0, "length": 1}]})),
            ("group:kC1z-aB_9xQ=", ConversationKind::Group, true, "what time is it?", None),
        ),
        (
            from_alice(json!({"timestamp": ts, "message": "ask \u{FFFC} too", "groupInfo": group,
                "mentions": [{"name": "Bob", "number": "+15550000333", "uuid": "b0b", "start": 4, "length": 1}]})),
            ("group:kC1z-aB_9xQ=", ConversationKind::Group, false, "ask @Bob too", None),
        ),
        (
            from_alice(json!({"timestamp": ts, "message": "2", "groupInfo": group,
                "quote": {"id": 1699999999999i64, "author": BOT, "authorNumber": BOT, "authorUuid": BOT_UUID, "text": "Approve?"}})),
            ("group:kC1z-aB_9xQ=", ConversationKind::Group, true, "2", Some("1699999999999:+15550000001")),
        ),
        (
            from_alice(json!({"timestamp": ts, "message": "/help", "groupInfo": group})),
            ("group:kC1z-aB_9xQ=", ConversationKind::Group, true, "/help", None),
        ),
        (
            from_alice(
                json!({"timestamp": ts, "reaction": {"emoji": "👍", "targetAuthor": BOT, "targetAuthorNumber": BOT,
                "targetAuthorUuid": BOT_UUID, "targetSentTimestamp": 1699999999999i64, "isRemove": false}}),
            ),
            (ALICE, ConversationKind::Direct, true, "#yes", Some("1699999999999:+15550000001")),
        ),
    ];
    for (envelope, (conversation, kind, addressed, text, reply)) in cases {
        let ev = event(&envelope, &me()).unwrap_or_else(|why| panic!("{why}: {envelope}"));
        assert_eq!(ev.conversation.id, conversation, "{envelope}");
        assert_eq!(ev.actor.identity.to_string(), format!("signal:{ALICE}"));
        assert_eq!((ev.kind, ev.addressed), (kind, addressed), "{envelope}");
        match &ev.body {
            EventBody::Message { text: t } => {
                assert_eq!(t, text, "{envelope}");
                assert_eq!(ev.reply_to.as_deref(), reply, "{envelope}");
                assert_eq!(ev.id.0, format!("signal:msg:{ALICE}:{ts}"));
            }
            EventBody::Action { action, message, .. } => {
                assert_eq!((action.as_str(), message.as_deref()), (text, reply), "{envelope}");
                assert_eq!(ev.id.0, format!("signal:react:{ALICE}:{ts}"));
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn what_is_not_an_event() {
    let ts = 1700000000000i64;
    let cases: Vec<(serde_json::Value, &str)> = vec![
        (
            json!({"envelope": {"sourceNumber": ALICE, "timestamp": ts, "receiptMessage": {"when": ts, "isRead": true,
            "timestamps": [ts]}}}),
            "receipt",
        ),
        (
            json!({"envelope": {"sourceNumber": ALICE, "timestamp": ts, "typingMessage": {"action": "STARTED",
            "timestamp": ts}}}),
            "typing",
        ),
        (
            json!({"envelope": {"sourceNumber": BOT, "timestamp": ts, "syncMessage": {"sentMessage": {"message": "x"}}}}),
            "the bot's own message",
        ),
        (
            json!({"envelope": {"sourceNumber": ALICE, "timestamp": ts, "dataMessage": {"timestamp": ts, "message": "x"}},
            "account": "+15559999999"}),
            "for another account",
        ),
        (
            from_alice(json!({"timestamp": ts, "reaction": {"emoji": "❤️", "targetAuthorNumber": BOT,
            "targetSentTimestamp": 1, "isRemove": false}})),
            "a reaction",
        ),
        (
            from_alice(json!({"timestamp": ts, "reaction": {"emoji": "👍", "targetAuthorNumber": BOT,
            "targetSentTimestamp": 1, "isRemove": true}})),
            "a reaction removed",
        ),
        (from_alice(json!({"timestamp": ts, "message": null})), "no text and no file"),
    ];
    for (envelope, why) in cases {
        assert_eq!(event(&envelope, &me()).err(), Some(why), "{envelope}");
    }
}

#[test]
fn attachments_say_whose_they_are() {
    let envelope = from_alice(json!({"timestamp": 5, "message": "look", "attachments": [
        {"contentType": "image/jpeg", "filename": "cat.jpg", "id": "Xk2p.jpg", "size": 2048},
        {"contentType": "audio/aac", "id": "v0ice.aac", "size": 900},
        {"contentType": "application/pdf", "filename": "a.pdf", "id": "doc.pdf"}]}));
    let ev = event(&envelope, &me()).unwrap();
    let got: Vec<_> = ev.attachments.iter().map(|a| (a.kind, a.file_id.as_str(), a.url.as_deref())).collect();
    let whose = Some("recipient:+15550000222");
    assert_eq!(
        got,
        [
            (MediaKind::Image, "Xk2p.jpg", whose),
            (MediaKind::Voice, "v0ice.aac", whose),
            (MediaKind::Document, "doc.pdf", whose)
        ]
    );
    assert_eq!(ev.attachments[0].size, Some(2048));
}

#[test]
fn conversation_ids() {
    assert_eq!(group_id(&group_conversation(GROUP_ID)).as_deref(), Some(GROUP_ID));
    assert_eq!(group_id(ALICE), None);
    for (id, ok) in [
        (ALICE, true),
        ("group:kC1z-aB_9xQ=", true),
        (ALICE_UUID, true),
        ("15550000222", false),
        ("group:", false),
        ("+1", false),
    ] {
        assert_eq!(valid_conversation(id), ok, "{id}");
    }
}
