//! Poison-event contract: text made storable at ingress round-trips identically on every
//! backend (event, transcript), and dead letters are listed, counted, re-queued and released
//! as documented.

use crate::fixtures::{event, session, strings};
use butler::channel::{storable_text, EventBody};
use butler::store::{InboxStatus, NewMessage, Store};
use serde_json::json;
use std::sync::Arc;

pub async fn nul_text_is_stored_sanitized(store: Arc<dyn Store>) {
    // (inbound text, what every backend stores and reads back)
    let cases = [
        ("a\0b", "a\u{FFFD}b"),
        ("\0", "\u{FFFD}"),
        ("\0\0end", "\u{FFFD}\u{FFFD}end"),
        ("no nul here\t\n", "no nul here\t\n"),
        ("emoji 🦀\0", "emoji 🦀\u{FFFD}"),
    ];
    let s = store.session_open(&session("s1", "web:alice")).await.unwrap();
    for (i, (text, want)) in cases.iter().enumerate() {
        let id = format!("tg:{i}");
        let mut ev = event(&id, "telegram", "c1");
        ev.actor.display_name = Some(format!("Al{text}ice"));
        ev.body = EventBody::Trigger {
            source: "gh".into(),
            text: text.to_string(),
            payload: json!({"headers": {"x-note": text}, "body": {text.to_string(): [text]}}),
        };
        let changed = ev.make_storable();
        assert_eq!(changed, text.contains('\0'), "{text:?}");
        assert!(store.inbox_insert(&ev).await.unwrap(), "{text:?} is stored");
        let row = store.inbox_get(&id).await.unwrap().expect("stored");
        assert_eq!(row.event, ev, "{text:?} round-trips");
        assert_eq!(row.event.text(), Some(*want));
        assert_eq!(row.event.actor.display_name, Some(format!("Al{want}ice")));
        let EventBody::Trigger { payload, .. } = &row.event.body else { panic!("a trigger") };
        assert_eq!(payload, &json!({"headers": {"x-note": want}, "body": {want.to_string(): [want]}}));
        // The turn stores the same text in the transcript.
        let msg = NewMessage::user(storable_text(text), None, Some(id.clone()));
        store.messages_append(&s.id, std::slice::from_ref(&msg)).await.unwrap();
        let back = store.messages_recent(&s.id, 1).await.unwrap();
        assert_eq!(back[0].msg.content, *want);
    }
}

pub async fn dead_letters_list_count_requeue_release(store: Arc<dyn Store>) {
    for id in ["a", "b", "c"] {
        store.inbox_insert(&event(id, "web", "c1")).await.unwrap();
    }
    let web = strings(&["web"]);
    assert_eq!(store.inbox_claim(&web, "w1", 10).await.unwrap().len(), 3);
    store.inbox_finish("a", InboxStatus::Failed, Some("gave up after 1 tries: boom")).await.unwrap();
    store.inbox_finish("b", InboxStatus::Done, None).await.unwrap();
    // A busy session's event goes back without counting the try.
    store.inbox_release("c", 0).await.unwrap();
    let c = store.inbox_get("c").await.unwrap().unwrap();
    assert_eq!((c.status, c.attempts), (InboxStatus::Pending, 0));
    store.inbox_release("c", 0).await.unwrap();
    assert_eq!(store.inbox_get("c").await.unwrap().unwrap().attempts, 0, "never below 0; only claimed rows");

    // (status filter, ids newest first)
    let lists: [(Option<InboxStatus>, &[&str]); 4] = [
        (Some(InboxStatus::Failed), &["a"]),
        (Some(InboxStatus::Done), &["b"]),
        (Some(InboxStatus::Pending), &["c"]),
        (None, &["c", "b", "a"]),
    ];
    for (status, want) in lists {
        let got: Vec<String> = store.inbox_list(status, 10).await.unwrap().into_iter().map(|r| r.event.id.0).collect();
        assert_eq!(got, want, "{status:?}");
    }
    assert_eq!(store.inbox_list(None, 1).await.unwrap().len(), 1, "limit");
    assert_eq!(store.inbox_count(InboxStatus::Failed).await.unwrap(), 1);
    assert_eq!(store.inbox_count(InboxStatus::Processing).await.unwrap(), 0);

    // Only a failed event is re-queued, once; it is due at once with its tries reset.
    assert!(!store.inbox_requeue("b").await.unwrap(), "done stays done");
    assert!(!store.inbox_requeue("nope").await.unwrap());
    assert!(store.inbox_requeue("a").await.unwrap());
    assert!(!store.inbox_requeue("a").await.unwrap(), "already pending");
    let a = store.inbox_get("a").await.unwrap().unwrap();
    assert_eq!((a.status, a.attempts), (InboxStatus::Pending, 0));
    assert_eq!(store.inbox_count(InboxStatus::Failed).await.unwrap(), 0);
    let again = store.inbox_claim(&web, "w2", 10).await.unwrap();
    assert_eq!(again.iter().map(|r| (r.event.id.0.as_str(), r.attempts)).collect::<Vec<_>>(), [("a", 1), ("c", 1)]);
}
