use super::*;
use butler_channel::{EventBody, MediaKind};
use serde_json::json;

const BOT: &str = "@butler:hs.test";
const ALICE: &str = "@alice:hs.test";

fn me() -> Me {
    Me { user_id: BOT.into(), display_name: Some("Butler".into()) }
}

fn room(direct: bool) -> RoomInfo {
    RoomInfo { id: "!r1:hs.test".into(), direct }
}

fn msg(content: serde_json::Value) -> serde_json::Value {
    json!({"type": "m.room.message", "sender": ALICE, "event_id": "$e1", "origin_server_ts": 1_700_000_000_000_i64,
           "content": content})
}

/// (what, event, direct room, expected: Err(reason) or Ok((text, addressed, reply_to, thread)))
type Want = Result<(&'static str, bool, Option<&'static str>, Option<&'static str>), &'static str>;

#[test]
fn room_events_become_events_or_are_skipped() {
    let cases: Vec<(&str, serde_json::Value, bool, Want)> = vec![
        ("a DM", msg(json!({"msgtype": "m.text", "body": "hello"})), true, Ok(("hello", true, None, None))),
        (
            "a group message",
            msg(json!({"msgtype": "m.text", "body": "hello all"})),
            false,
            Ok(("hello all", false, None, None)),
        ),
        (
            "a group mention by m.mentions",
            msg(json!({"msgtype": "m.text", "body": "hey you", "m.mentions": {"user_ids": [BOT]}})),
            false,
            Ok(("hey you", true, None, None)),
        ),
        (
            "a group mention by name",
            msg(json!({"msgtype": "m.text", "body": "butler: what time"})),
            false,
            Ok(("butler: what time", true, None, None)),
        ),
        ("a group command", msg(json!({"msgtype": "m.text", "body": "/help"})), false, Ok(("/help", true, None, None))),
        (
            "a reply with its fallback",
            msg(json!({"msgtype": "m.text", "body": "> <@butler:hs.test> Pick one\n> 1 A\n\n2",
                       "m.relates_to": {"m.in_reply_to": {"event_id": "$q"}}})),
            true,
            Ok(("2", true, Some("$q"), None)),
        ),
        (
            "a thread message",
            msg(
                json!({"msgtype": "m.text", "body": "more", "m.relates_to": {"rel_type": "m.thread", "event_id": "$root",
                       "is_falling_back": true, "m.in_reply_to": {"event_id": "$last"}}}),
            ),
            true,
            Ok(("more", true, None, Some("$root"))),
        ),
        (
            "a group reply quoting Butler",
            msg(json!({"msgtype": "m.text", "body": "> <@butler:hs.test> Pick one\n\n3",
                       "m.relates_to": {"m.in_reply_to": {"event_id": "$q"}}})),
            false,
            Ok(("3", true, Some("$q"), None)),
        ),
        ("an emote", msg(json!({"msgtype": "m.emote", "body": "waves"})), true, Ok(("* waves", true, None, None))),
        (
            "an edit",
            msg(
                json!({"msgtype": "m.text", "body": "* x", "m.relates_to": {"rel_type": "m.replace", "event_id": "$a"}}),
            ),
            true,
            Err("an edit"),
        ),
        ("an empty message", msg(json!({"msgtype": "m.text", "body": "  "})), true, Err("an empty message")),
        (
            "Butler's own",
            json!({"type": "m.room.message", "sender": BOT, "event_id": "$x", "content": {"msgtype": "m.text", "body": "hi"}}),
            true,
            Err("Butler's own event"),
        ),
        (
            "a state event",
            json!({"type": "m.room.member", "sender": ALICE, "event_id": "$m", "state_key": ALICE, "content": {}}),
            true,
            Err("a state event"),
        ),
        (
            "undecryptable",
            json!({"type": "m.room.encrypted", "sender": ALICE, "event_id": "$c", "content": {}}),
            true,
            Err("a message Butler could not decrypt"),
        ),
        (
            "a heart",
            json!({"type": "m.reaction", "sender": ALICE, "event_id": "$h", "content": {"m.relates_to": {"rel_type": "m.annotation", "event_id": "$q", "key": "❤️"}}}),
            true,
            Err("another reaction"),
        ),
    ];
    for (what, raw, direct, want) in cases {
        let got = event(&raw, &room(direct), &me());
        match (got, want) {
            (Ok(e), Ok((text, addressed, reply_to, thread))) => {
                assert_eq!(e.text(), Some(text), "{what}");
                assert_eq!(e.addressed, addressed, "{what}");
                assert_eq!(e.reply_to.as_deref(), reply_to, "{what}");
                assert_eq!(e.conversation.thread.as_deref(), thread, "{what}");
                assert_eq!(e.conversation.id, "!r1:hs.test", "{what}");
                assert_eq!(e.actor.identity.to_string(), format!("matrix:{ALICE}"), "{what}");
            }
            (Err(why), Err(want)) => assert_eq!(why, want, "{what}"),
            (got, want) => panic!("{what}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn reactions_answer_the_reacted_event() {
    let cases = [("✅", "#yes"), ("🔁", "#always"), ("❌", "#no"), ("👍", "#yes")];
    for (key, action) in cases {
        let raw = json!({"type": "m.reaction", "sender": ALICE, "event_id": "$r",
                         "content": {"m.relates_to": {"rel_type": "m.annotation", "event_id": "$req", "key": key}}});
        let e = event(&raw, &room(false), &me()).unwrap();
        assert_eq!(e.id.0, "matrix:$r");
        assert!(e.addressed);
        assert_eq!(e.message_id, None);
        match e.body {
            EventBody::Action { action: a, message, .. } => {
                assert_eq!(a, action, "{key}");
                assert_eq!(message.as_deref(), Some("$req"));
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn media_messages_carry_their_source() {
    let plain =
        msg(json!({"msgtype": "m.image", "body": "look at this", "filename": "cat.png", "url": "mxc://hs.test/abc",
                           "info": {"mimetype": "image/png", "size": 1234}}));
    let e = event(&plain, &room(true), &me()).unwrap();
    assert_eq!(e.text(), Some("look at this"));
    let a = &e.attachments[0];
    assert_eq!(
        (a.kind, a.mime.as_deref(), a.size, a.name.as_deref()),
        (MediaKind::Image, Some("image/png"), Some(1234), Some("cat.png"))
    );
    assert_eq!(a.file_id, r#"{"url":"mxc://hs.test/abc"}"#);

    let file = json!({"url": "mxc://hs.test/enc", "key": {"k": "x"}, "iv": "y", "hashes": {"sha256": "z"}, "v": "v2"});
    let voice =
        msg(json!({"msgtype": "m.audio", "body": "Voice message", "file": file, "org.matrix.msc3245.voice": {},
                           "info": {"mimetype": "audio/ogg", "duration": 2500}}));
    let e = event(&voice, &room(true), &me()).unwrap();
    assert_eq!(e.text(), Some(""));
    let a = &e.attachments[0];
    assert_eq!((a.kind, a.duration_secs), (MediaKind::Voice, Some(3)));
    assert_eq!(serde_json::from_str::<serde_json::Value>(&a.file_id).unwrap(), json!({"file": file}));

    let none = msg(json!({"msgtype": "m.file", "body": "x.pdf", "url": "https://evil.example/x"}));
    assert_eq!(event(&none, &room(true), &me()).unwrap_err(), "media without a source");
}

#[test]
fn ids_are_checked() {
    let rooms = [
        ("!abc:hs.test", true),
        ("!abc:hs.test:8448", true),
        ("abc:hs.test", false),
        ("!abc", false),
        ("!a/b:hs", false),
    ];
    for (id, ok) in rooms {
        assert_eq!(valid_room(id), ok, "{id}");
    }
    let users = [("@alice:hs.test", true), ("@Alice:hs.test", false), ("alice:hs.test", false), ("@:hs", false)];
    for (id, ok) in users {
        assert_eq!(valid_user(id), ok, "{id}");
    }
    assert_eq!(strip_reply_fallback("> <@a:b> x\n\nanswer"), "answer");
    assert_eq!(strip_reply_fallback("> just a quote"), "> just a quote");
    assert_eq!(strip_reply_fallback("plain"), "plain");
}
