//! Session contract: one open session per key even under races, closing keeps the transcript,
//! and the transcript keeps order, tool calls and seqs exactly.

use crate::fixtures::session;
use butler::llm::ToolCall;
use butler::store::{NewMessage, Role, Store, StoreError};
use std::collections::BTreeSet;
use std::sync::Arc;

pub async fn open_race_returns_one_session(store: Arc<dyn Store>) {
    let mut tasks = Vec::new();
    for i in 0..8 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move { store.session_open(&session(&format!("s{i}"), "web:alice")).await }));
    }
    let mut ids = BTreeSet::new();
    for t in tasks {
        ids.insert(t.await.unwrap().unwrap().id);
    }
    assert_eq!(ids.len(), 1, "every racer got the same session: {ids:?}");
    let active = store.session_active("web:alice").await.unwrap().expect("open");
    assert!(ids.contains(&active.id));
    assert_eq!(active.system_prompt, "You are Butler.\nBe brief.", "stored byte for byte");
    assert_eq!((active.version, active.user_id.as_str(), active.conversation.as_str()), (0, "alice", "web:c1"));
    assert!(store.session_active("web:bob").await.unwrap().is_none());
}

pub async fn close_then_open_keeps_transcript(store: Arc<dyn Store>) {
    let old = store.session_open(&session("s1", "k")).await.unwrap();
    store.messages_append(&old.id, &[NewMessage::user("hi", None, Some("e1".into()))]).await.unwrap();
    store.session_close(&old.id).await.unwrap();
    store.session_close(&old.id).await.unwrap();
    assert!(store.session_active("k").await.unwrap().is_none());

    let new = store.session_open(&session("s2", "k")).await.unwrap();
    assert_eq!(new.id, "s2", "a closed session does not block its key");
    assert_eq!(store.session_active("k").await.unwrap().unwrap().id, "s2");
    assert_eq!(store.messages_recent("s1", 10).await.unwrap().len(), 1, "the old transcript stays");
    assert!(store.messages_recent("s2", 10).await.unwrap().is_empty());

    // Re-using a closed session's id for another open session is refused.
    let err = store.session_open(&session("s1", "other")).await.unwrap_err();
    assert!(matches!(err, StoreError::Conflict(_)), "{err:?}");
}

fn transcript() -> Vec<NewMessage> {
    let calls = vec![
        ToolCall { id: "call_1".into(), name: "web_search".into(), arguments: r#"{"q":"weather \"Berlin\""}"#.into() },
        ToolCall { id: "call_2".into(), name: "clock".into(), arguments: "{}".into() },
    ];
    vec![
        NewMessage::user("[Alice] what's the weather? ünïcödé 🌦", Some("Alice".into()), Some("ev-1".into())),
        NewMessage::assistant("", calls),
        NewMessage {
            images: vec![butler::llm::Image { mime: "image/png".into(), data: "iVBORw0KGgo=".into() }],
            ..NewMessage::tool("call_1", "sunny, 21°C", false)
        },
        NewMessage::tool("call_2", "timeout", true),
        NewMessage::assistant("It is sunny.", vec![]),
    ]
}

pub async fn transcript_round_trip(store: Arc<dyn Store>) {
    let s = store.session_open(&session("s1", "k")).await.unwrap();
    let msgs = transcript();
    assert_eq!(store.messages_append(&s.id, &msgs[..2]).await.unwrap(), 2);
    assert_eq!(store.messages_append(&s.id, &msgs[2..]).await.unwrap(), 5);
    assert_eq!(store.messages_append(&s.id, &[]).await.unwrap(), 5, "empty append returns the last seq");

    let all = store.messages_recent(&s.id, 100).await.unwrap();
    assert_eq!(all.iter().map(|m| m.seq).collect::<Vec<_>>(), [1, 2, 3, 4, 5]);
    let got: Vec<NewMessage> = all.into_iter().map(|m| m.msg).collect();
    assert_eq!(got, msgs, "every field round-trips, roles included");
    assert!(got.iter().all(|m| m.role.is_some()));
    assert_eq!(got[1].role(), Role::Assistant);

    let tail = store.messages_recent(&s.id, 2).await.unwrap();
    assert_eq!(tail.iter().map(|m| m.seq).collect::<Vec<_>>(), [4, 5], "last two, oldest first");

    let row = store.session_active("k").await.unwrap().unwrap();
    assert_eq!(row.version, 2, "one version bump per append");
    assert!(row.updated_ms >= row.created_ms);

    // (session, event, seq)
    let lookups: &[(&str, &str, Option<i64>)] =
        &[("s1", "ev-1", Some(1)), ("s1", "ev-2", None), ("nope", "ev-1", None)];
    for (sid, eid, want) in lookups {
        assert_eq!(store.message_seq_for_event(sid, eid).await.unwrap(), *want, "{sid}/{eid}");
    }

    let err = store.messages_append("nope", &msgs[..1]).await.unwrap_err();
    assert!(matches!(err, StoreError::Conflict(_)), "{err:?}");
}

pub async fn concurrent_appends(store: Arc<dyn Store>) {
    let s = store.session_open(&session("s1", "k")).await.unwrap();
    let mut tasks = Vec::new();
    for w in 0..4 {
        let (store, sid) = (store.clone(), s.id.clone());
        tasks.push(tokio::spawn(async move {
            for i in 0..5 {
                let batch = [
                    NewMessage::user(format!("w{w} m{i}a"), None, None),
                    NewMessage::assistant(format!("w{w} m{i}b"), vec![]),
                ];
                store.messages_append(&sid, &batch).await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let all = store.messages_recent(&s.id, 1000).await.unwrap();
    assert_eq!(all.iter().map(|m| m.seq).collect::<Vec<_>>(), (1..=40).collect::<Vec<_>>());
    for pair in all.chunks(2) {
        // Each batch stays contiguous: its second message directly follows its first.
        assert_eq!(pair[0].msg.content.trim_end_matches('a'), pair[1].msg.content.trim_end_matches('b'));
    }
    assert_eq!(store.session_active("k").await.unwrap().unwrap().version, 20);
}
