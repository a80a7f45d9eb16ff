//! The recorded Events API payloads (tests/fixtures/slack) and the policies around them.

use super::*;
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
