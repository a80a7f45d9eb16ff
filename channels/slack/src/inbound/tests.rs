//! The recorded Events API payloads (tests/fixtures/slack) and the policies around them.

use super::*;
use butler_channel::MediaKind;
use serde_json::{json, Value};

const DOCS: &str = include_str!("../../../../tests/fixtures/slack/events_docs_examples.json");
const BOLT: &str = include_str!("../../../../tests/fixtures/slack/events_bolt_python_fixtures.json");

fn fixture(file: &str, name: &str) -> Value {
    let all: Value = serde_json::from_str(file).unwrap();
    all[name]["payload"].clone()
}

fn me(id: &str) -> Me {
    Me { user_id: id.into(), bot_id: Some("BBUTLER".into()) }
}

fn map(payload: &Value, me: &Me, threads: &Threads) -> Inbound {
    events_api(payload.to_string().as_bytes(), me, threads).unwrap()
}

fn event(i: Inbound) -> InboundEvent {
    match i {
        Inbound::Event(e) => *e,
        other => panic!("expected an event, got {other:?}"),
    }
}

#[test]
fn documented_payloads() {
    let threads = Threads::new(10);
    let e = event(map(&fixture(DOCS, "app_mention_invite_envelope"), &me("U0LAN0Z89"), &threads));
    assert_eq!(e.id.0, "slack:event:Ev0MDYHUEL");
    assert_eq!(e.conversation.to_string(), "slack:C0LAN2Q65/1515449483.000108");
    assert_eq!((e.kind, e.addressed), (ConversationKind::Group, true));
    assert_eq!(e.actor.identity.to_string(), "slack:W021FGA1Z");
    assert_eq!(e.text(), Some("You can count on for an honorable mention."));
    assert_eq!(e.message_id.as_deref(), Some("1515449483.000108"));
    assert_eq!(e.at_ms, 1_515_449_483_000);
    assert!(threads.contains("C0LAN2Q65", "1515449483.000108"), "a mention makes the thread Butler's");

    let e = event(map(&fixture(DOCS, "message_im_envelope"), &me("U0LAN0Z89"), &threads));
    assert_eq!(e.id.0, "slack:event:Ev0PV52K21");
    assert_eq!(e.conversation.to_string(), "slack:D024BE91L");
    assert_eq!((e.kind, e.addressed), (ConversationKind::Direct, true));
    assert_eq!(e.text(), Some("Hello hello can you hear me?"));

    assert_eq!(
        map(&fixture(DOCS, "url_verification"), &me("U1"), &threads),
        Inbound::Challenge("3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P".into())
    );
    // An event type Butler has no use for.
    assert!(matches!(map(&fixture(DOCS, "event_wrapper_with_authorizations"), &me("U1"), &threads), Inbound::Skip(_)));
}

#[test]
fn bolt_payloads() {
    let threads = Threads::new(10);
    let e = event(map(&fixture(BOLT, "app_mention_event_callback"), &me("W111"), &threads));
    assert_eq!(e.text(), Some("Hi there!"), "Butler's own mention is removed");
    assert_eq!(e.conversation.to_string(), "slack:C111/1595926230.009600");

    // W111 is the bot user here: its own message is skipped.
    let own = fixture(BOLT, "message_channel_event_callback");
    assert_eq!(map(&own, &me("W111"), &threads), Inbound::Skip("Butler's own message"));
    // From someone else, a top-level channel message without a mention is not addressed.
    let e = event(map(&own, &me("W999"), &threads));
    assert_eq!((e.kind, e.addressed), (ConversationKind::Group, false));
    assert_eq!(e.conversation.to_string(), "slack:C111/1596183880.004200");

    let e = event(map(&fixture(BOLT, "message_im_thread_reply_event_callback"), &me("W111"), &threads));
    assert_eq!(e.conversation.to_string(), "slack:D111/1726133698.626339", "a DM thread is its own session");
    assert_eq!((e.kind, e.addressed), (ConversationKind::Direct, true));
    assert_eq!(e.reply_to.as_deref(), Some("1726133698.626339"));
}

fn channel_message(extra: Value) -> Value {
    let mut event = json!({"type": "message", "channel": "C9", "channel_type": "channel", "user": "U7",
                           "text": "hello", "ts": "1700000002.000200"});
    for (k, v) in extra.as_object().unwrap() {
        event[k] = v.clone();
    }
    json!({"type": "event_callback", "event_id": "EvX", "event_time": 1700000002, "event": event})
}

#[test]
fn policies_table() {
    let me = me("UBUTLER");
    let threads = Threads::new(10);
    threads.add("C9", "1700000000.000100");
    type Case = (&'static str, Value, Result<(bool, &'static str), &'static str>);
    let cases: Vec<Case> = vec![
        (
            "reply in Butler's thread",
            json!({"thread_ts": "1700000000.000100"}),
            Ok((true, "slack:C9/1700000000.000100")),
        ),
        (
            "reply in another thread",
            json!({"thread_ts": "1600000000.000100"}),
            Ok((false, "slack:C9/1600000000.000100")),
        ),
        ("top level", json!({}), Ok((false, "slack:C9/1700000002.000200"))),
        (
            "message with a mention",
            json!({"text": "<@UBUTLER> hi"}),
            Err("a mention (answered through its app_mention event)"),
        ),
        ("Butler's own message", json!({"user": "UBUTLER"}), Err("Butler's own message")),
        ("Butler's own bot id", json!({"user": null, "bot_id": "BBUTLER"}), Err("Butler's own message")),
        ("an edit", json!({"subtype": "message_changed"}), Err("an edit (edits are not answered)")),
        ("a deletion", json!({"subtype": "message_deleted"}), Err("a message subtype Butler does not answer")),
        ("a join", json!({"subtype": "channel_join"}), Err("a message subtype Butler does not answer")),
        ("hidden", json!({"hidden": true}), Err("a hidden message")),
        ("empty", json!({"text": ""}), Err("no text")),
    ];
    for (name, extra, want) in cases {
        let got = map(&channel_message(extra), &me, &threads);
        match (got, want) {
            (Inbound::Event(e), Ok((addressed, conv))) => {
                assert_eq!(e.addressed, addressed, "{name}");
                assert_eq!(e.conversation.to_string(), conv, "{name}");
                assert!(!e.actor.is_bot, "{name}");
            }
            (Inbound::Skip(why), Err(want)) => assert_eq!(why, want, "{name}"),
            (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
        }
    }
    // Other bots are passed on marked as bots (triage drops them).
    let e = event(map(
        &channel_message(json!({"user": null, "bot_id": "B0THER", "subtype": "bot_message"})),
        &me,
        &threads,
    ));
    assert!(e.actor.is_bot);
    assert_eq!(e.actor.identity.to_string(), "slack:B0THER");
    let e = event(map(&channel_message(json!({"bot_id": "B0THER"})), &me, &threads));
    assert!(e.actor.is_bot);
}

#[test]
fn bad_payloads_are_errors() {
    let threads = Threads::new(1);
    assert!(events_api(b"not json", &me("U1"), &threads).is_err());
    let no_id = json!({"type": "event_callback", "event": {"type": "message"}});
    assert!(events_api(no_id.to_string().as_bytes(), &me("U1"), &threads).is_err());
}

#[test]
fn threads_are_bounded() {
    let t = Threads::new(2);
    t.add("C", "1");
    t.add("C", "2");
    t.add("C", "3");
    assert!(!t.contains("C", "1"), "the oldest is forgotten");
    assert!(t.contains("C", "2") && t.contains("C", "3"));
}

#[test]
fn slack_markup_as_plain_text() {
    let cases = [
        ("<@UBUTLER> what is 2 &lt; 3?", "what is 2 < 3?"),
        ("ask <@U2|bob> in <#C1|general>", "ask @bob in #general"),
        ("see <https://e.com|the site> or <https://x.org>", "see the site (https://e.com) or https://x.org"),
        ("<!here> ping", "@here ping"),
        ("a &amp;&amp; b", "a && b"),
        ("unclosed < bracket", "unclosed < bracket"),
    ];
    for (slack, want) in cases {
        assert_eq!(plain_text(slack, "UBUTLER"), want, "{slack}");
    }
    assert_eq!(ts_ms("1355517523.000005"), 1_355_517_523_000);
}

/// A Slack file object as the Events API sends it (the shape of Slack's file type).
fn file(id: &str, name: &str, mimetype: &str, filetype: &str, size: u64, extra: Value) -> Value {
    let mut f = json!({
        "id": id, "created": 1700000001, "timestamp": 1700000001, "name": name, "title": name,
        "mimetype": mimetype, "filetype": filetype, "pretty_type": filetype.to_uppercase(), "user": "U7",
        "user_team": "T1", "editable": false, "size": size, "mode": "hosted", "is_external": false,
        "external_type": "", "is_public": false, "public_url_shared": false, "display_as_bot": false,
        "username": "",
        "url_private": format!("https://files.slack.com/files-pri/T1-{id}/{name}"),
        "url_private_download": format!("https://files.slack.com/files-pri/T1-{id}/download/{name}"),
        "permalink": format!("https://team.slack.com/files/U7/{id}/{name}"),
        "has_rich_preview": false, "file_access": "visible"
    });
    for (k, v) in extra.as_object().unwrap() {
        f[k] = v.clone();
    }
    f
}

#[test]
fn shared_files_become_attachments() {
    let me = me("UBUTLER");
    let threads = Threads::new(10);
    threads.add("C9", "1700000000.000100");
    let photo =
        file("F1PHOTO", "IMG_0001.png", "image/png", "png", 2048, json!({"original_w": 640, "original_h": 480}));
    let clip = file(
        "F2CLIP",
        "audio_message.webm",
        "audio/webm",
        "webm",
        30_000,
        json!({"subtype": "slack_audio", "media_display_type": "audio", "duration_ms": 4200}),
    );
    let song = file("F3SONG", "song.mp3", "audio/mpeg", "mp3", 4_000_000, json!({}));
    let video = file("F4VID", "clip.mov", "video/quicktime", "mov", 9_000_000, json!({}));
    let pdf = file("F5PDF", "report.pdf", "application/pdf", "pdf", 123_456, json!({}));
    let gone = json!({"id": "F6GONE", "mode": "tombstone"});
    type Case = (&'static str, Value, &'static str, &'static str, Vec<(&'static str, MediaKind, &'static str, u64)>);
    let cases: Vec<Case> = vec![
        (
            "a photo with a caption in a channel thread",
            channel_message(json!({"subtype": "file_share", "text": "look at this", "thread_ts": "1700000000.000100",
                                   "files": [photo.clone()], "upload": false})),
            "slack:C9/1700000000.000100",
            "look at this",
            vec![("F1PHOTO", MediaKind::Image, "image/png", 2048)],
        ),
        (
            "a voice clip in a DM, no text",
            channel_message(json!({"channel": "D5", "channel_type": "im", "subtype": "file_share", "text": "",
                                   "files": [clip.clone()]})),
            "slack:D5",
            "",
            vec![("F2CLIP", MediaKind::Voice, "audio/webm", 30_000)],
        ),
        (
            "several files without the file_share subtype, in a DM thread",
            channel_message(json!({"channel": "D5", "channel_type": "im", "text": "three files",
                                   "thread_ts": "1700000000.000900", "files": [song, video, pdf, gone]})),
            "slack:D5/1700000000.000900",
            "three files",
            vec![
                ("F3SONG", MediaKind::Audio, "audio/mpeg", 4_000_000),
                ("F4VID", MediaKind::Video, "video/quicktime", 9_000_000),
                ("F5PDF", MediaKind::Document, "application/pdf", 123_456),
            ],
        ),
    ];
    for (what, payload, conv, text, want) in cases {
        let e = event(map(&payload, &me, &threads));
        assert_eq!(e.conversation.to_string(), conv, "{what}");
        assert_eq!(e.text(), Some(text), "{what}: the text stays the message's");
        let got: Vec<_> = e
            .attachments
            .iter()
            .map(|a| (a.file_id.as_str(), a.kind, a.mime.as_deref().unwrap_or(""), a.size.unwrap_or(0)))
            .collect();
        assert_eq!(got, want, "{what}");
        for a in &e.attachments {
            let name = a.name.as_deref().unwrap();
            assert_eq!(
                a.url.as_deref(),
                Some(format!("https://files.slack.com/files-pri/T1-{}/download/{name}", a.file_id).as_str()),
                "{what}: url_private_download"
            );
        }
    }
    // A mention with a file: the app_mention carries the files too.
    let mention = json!({"type": "event_callback", "event_id": "EvM", "event": {
        "type": "app_mention", "channel": "C9", "user": "U7", "text": "<@UBUTLER> what is this?",
        "ts": "1700000003.000300", "files": [photo]}});
    let e = event(map(&mention, &me, &threads));
    assert_eq!((e.text(), e.attachments.len()), (Some("what is this?"), 1));
    assert_eq!(e.attachments[0].name.as_deref(), Some("IMG_0001.png"));
    let e = event(map(
        &channel_message(json!({"channel": "D5", "channel_type": "im", "text": "", "files": [clip]})),
        &me,
        &threads,
    ));
    assert_eq!(e.attachments[0].duration_secs, Some(5));
    // Only files with nothing to fetch and no text: nothing to answer.
    let only_gone = channel_message(json!({"text": "", "files": [{"id": "F6GONE", "mode": "tombstone"}]}));
    assert_eq!(map(&only_gone, &me, &threads), Inbound::Skip("no text"));
}
