//! Embedding contract: the store queues what it writes only while tracking is on, a claim
//! stores a vector only while it still holds (a text changed meanwhile is queued again), failed
//! tries wait, backfills run once per model, vectors are read per owner, scope and model, and
//! forgetting a memory takes its vector and its queue entry with it.

use crate::fixtures::session;
use butler::store::{EmbedRef, MemoryScope, NewMessage, Store};
use std::sync::Arc;

fn refs(items: &[butler::store::EmbedItem]) -> Vec<EmbedRef> {
    let mut r: Vec<EmbedRef> = items.iter().map(|i| i.item.clone()).collect();
    r.sort_by_key(|r| r.key());
    r
}

/// Claims everything due under `claim` and stores a one-byte vector for each.
async fn embed_all(store: &Arc<dyn Store>, claim: &str, model: &str) -> u64 {
    let items = store.embed_claim(claim, 100, 60_000).await.unwrap();
    let done: Vec<(EmbedRef, Vec<u8>)> = items.iter().map(|i| (i.item.clone(), vec![1u8, 2])).collect();
    store.embed_done(claim, model, &done).await.unwrap()
}

pub async fn queue_follows_tracking(store: Arc<dyn Store>) {
    let alice = MemoryScope::personal("alice");
    store.embed_track(None).await.unwrap();
    store.memory_add(&alice, "written while off", None).await.unwrap();
    assert!(store.embed_claim("c0", 10, 60_000).await.unwrap().is_empty(), "nothing queued while off");

    store.embed_track(Some("m1")).await.unwrap();
    let on = store.memory_add(&alice, "my sister Anna turns 30 on May 4", None).await.unwrap();
    // A conversation's transcript is queued: user and assistant text, not tools, not empty.
    let dm = store.session_open(&session("s-dm", "dm:web:c1:alice")).await.unwrap();
    store
        .messages_append(
            &dm.id,
            &[
                NewMessage::user("when is the party", None, Some("e1".into())),
                NewMessage::tool("call-1", "tool output", false),
                NewMessage::assistant("  ", Vec::new()),
                NewMessage::assistant("On Saturday.", Vec::new()),
            ],
        )
        .await
        .unwrap();
    // A helper's session is not a conversation: not queued.
    let helper = store.session_open(&session("s-helper", "task:t1")).await.unwrap();
    store.messages_append(&helper.id, &[NewMessage::user("helper text", None, None)]).await.unwrap();

    let items = store.embed_claim("c1", 10, 60_000).await.unwrap();
    let want = vec![
        EmbedRef::Memory(on.id),
        EmbedRef::Message { session_id: "s-dm".into(), seq: 1 },
        EmbedRef::Message { session_id: "s-dm".into(), seq: 4 },
    ];
    let mut want_sorted = want.clone();
    want_sorted.sort_by_key(|r| r.key());
    assert_eq!(refs(&items), want_sorted);
    let text = |r: &EmbedRef| items.iter().find(|i| &i.item == r).map(|i| i.text.as_str());
    let cases =
        [(&want[0], "my sister Anna turns 30 on May 4"), (&want[1], "when is the party"), (&want[2], "On Saturday.")];
    for (r, t) in cases {
        assert_eq!(text(r), Some(t), "{r:?}");
    }
    assert!(items.iter().all(|i| i.attempts == 1));
    // Claimed: not handed out again while the lease runs.
    assert!(store.embed_claim("c2", 10, 60_000).await.unwrap().is_empty());
}

pub async fn a_claim_stores_only_what_it_holds(store: Arc<dyn Store>) {
    let alice = MemoryScope::personal("alice");
    store.embed_track(Some("m1")).await.unwrap();
    let m = store.memory_add(&alice, "old text", None).await.unwrap();
    let first = store.embed_claim("c1", 10, 60_000).await.unwrap();
    assert_eq!(refs(&first), vec![EmbedRef::Memory(m.id)]);
    // The text changes while the batch is out: the old text's vector must not be stored.
    assert!(store.memory_update(&alice, m.id, "new text").await.unwrap());
    let stored = store.embed_done("c1", "m1", &[(EmbedRef::Memory(m.id), vec![9u8])]).await.unwrap();
    assert_eq!(stored, 0);
    assert!(store.memory_vectors(&alice, "m1").await.unwrap().is_empty());
    // Queued again, with the new text.
    let second = store.embed_claim("c2", 10, 60_000).await.unwrap();
    assert_eq!(second.iter().map(|i| i.text.as_str()).collect::<Vec<_>>(), ["new text"]);
    assert_eq!(store.embed_done("c2", "m1", &[(EmbedRef::Memory(m.id), vec![3u8, 4])]).await.unwrap(), 1);

    // Read per owner, scope and model only.
    let cases = [
        (MemoryScope::personal("alice"), "m1", vec![(m.id, vec![3u8, 4])]),
        (MemoryScope::personal("alice"), "m2", vec![]),
        (MemoryScope::personal("bob"), "m1", vec![]),
        (MemoryScope::group("alice", "telegram:-1"), "m1", vec![]),
    ];
    for (owner, model, want) in cases {
        assert_eq!(store.memory_vectors(&owner, model).await.unwrap(), want, "{owner:?} {model}");
    }
    assert_eq!(store.memories_by_ids(&alice, &[m.id, 999]).await.unwrap().len(), 1);
    assert!(store.memories_by_ids(&MemoryScope::personal("bob"), &[m.id]).await.unwrap().is_empty());

    // Forgetting takes the vector and any queue entry along.
    assert!(store.memory_update(&alice, m.id, "newer text").await.unwrap());
    assert!(store.memory_vectors(&alice, "m1").await.unwrap().is_empty(), "a changed text loses its vector");
    assert!(store.memory_forget(&alice, m.id).await.unwrap());
    assert!(store.embed_claim("c3", 10, 60_000).await.unwrap().is_empty());
    assert_eq!(store.embed_progress("m1").await.unwrap().queued, 0);
}

pub async fn failed_tries_wait_and_are_counted(store: Arc<dyn Store>) {
    let alice = MemoryScope::personal("alice");
    store.embed_track(Some("m1")).await.unwrap();
    let a = store.memory_add(&alice, "one", None).await.unwrap();
    let b = store.memory_add(&alice, "two", None).await.unwrap();
    let items = store.embed_claim("c1", 1, 60_000).await.unwrap();
    assert_eq!(items.len(), 1, "batches are bounded");
    let later = butler::store::now_ms() + 3_600_000;
    store.embed_retry("c1", &[items[0].item.clone()], later, "HTTP 500: boom").await.unwrap();
    // Another claim's give-back changes nothing.
    store.embed_retry("other", &[EmbedRef::Memory(b.id)], later, "x").await.unwrap();
    let p = store.embed_progress("m1").await.unwrap();
    assert_eq!((p.memories, p.memories_embedded, p.queued, p.failing), (2, 0, 2, 1));
    let next = store.embed_claim("c2", 10, 60_000).await.unwrap();
    assert_eq!(next.len(), 1, "the failed one waits: {next:?}");
    assert_ne!(next[0].item, items[0].item);
    assert_eq!(store.embed_done("c2", "m1", &[(next[0].item.clone(), vec![1])]).await.unwrap(), 1);
    let p = store.embed_progress("m1").await.unwrap();
    assert_eq!((p.memories_embedded, p.queued, p.failing), (1, 1, 1));
    let _ = a;
}

pub async fn backfills_run_once_per_model(store: Arc<dyn Store>) {
    let alice = MemoryScope::personal("alice");
    store.embed_track(None).await.unwrap();
    for text in ["a", "b", "c"] {
        store.memory_add(&alice, text, None).await.unwrap();
    }
    let dm = store.session_open(&session("s-dm", "dm:web:c1:alice")).await.unwrap();
    store.messages_append(&dm.id, &[NewMessage::user("hello there", None, None)]).await.unwrap();
    // (model, force, queued)
    let cases = [("m1", false, 4), ("m1", false, 0), ("m1", true, 0)];
    for (model, force, want) in cases {
        assert_eq!(store.embed_backfill(model, force).await.unwrap(), want, "{model} {force}");
    }
    assert_eq!(embed_all(&store, "c1", "m1").await, 4);
    let p = store.embed_progress("m1").await.unwrap();
    assert_eq!((p.memories_embedded, p.messages_embedded, p.queued), (3, 1, 0));
    // A new model: everything again (the old model's vectors do not count).
    assert_eq!(store.embed_backfill("m2", false).await.unwrap(), 4);
    assert_eq!(embed_all(&store, "c2", "m2").await, 4);
    assert_eq!(store.memory_vectors(&alice, "m2").await.unwrap().len(), 3);
    // Back to m1 after a run with embeddings off: what was written meanwhile is found.
    store.embed_track(None).await.unwrap();
    store.memory_add(&alice, "written while off", None).await.unwrap();
    store.embed_track(Some("m1")).await.unwrap();
    assert_eq!(store.embed_backfill("m1", false).await.unwrap(), 5, "the new memory and the 4 texts m2 re-embedded");
}

pub async fn transcript_vectors_stay_in_their_scope(store: Arc<dyn Store>) {
    use butler::store::{NewSession, TranscriptScope};
    store.embed_track(Some("m1")).await.unwrap();
    // (session id, key, user)
    let sessions = [
        ("s-a1", "dm:web:c1:alice", "alice"),
        ("s-a2", "dm:telegram:9:9", "alice"),
        ("s-b", "dm:web:c2:bob", "bob"),
        ("s-g", "group:telegram:-5", "alice"),
        ("s-g2", "group:telegram:-6", "bob"),
    ];
    for (id, key, user) in sessions {
        let new = NewSession { user_id: user.into(), ..session(id, key) };
        store.session_open(&new).await.unwrap();
        store.messages_append(id, &[NewMessage::user(format!("said in {id}"), None, None)]).await.unwrap();
    }
    assert_eq!(embed_all(&store, "c1", "m1").await, 5);
    let seen = |rows: Vec<(String, i64, Vec<u8>)>| {
        let mut ids: Vec<String> = rows.into_iter().map(|r| r.0).collect();
        ids.sort();
        ids
    };
    let group = TranscriptScope::Group("group:telegram:-5".into());
    // (user, scope, left out, model, sessions seen)
    type Case<'a> = (&'a str, TranscriptScope, Option<&'a str>, &'a str, Vec<&'a str>);
    let cases: Vec<Case> = vec![
        ("alice", TranscriptScope::Private, None, "m1", vec!["s-a1", "s-a2"]),
        ("alice", TranscriptScope::Private, Some("s-a2"), "m1", vec!["s-a1"]),
        ("alice", TranscriptScope::Private, None, "m2", vec![]),
        ("bob", TranscriptScope::Private, None, "m1", vec!["s-b"]),
        ("carol", group.clone(), None, "m1", vec!["s-g"]),
        ("alice", TranscriptScope::Group("dm:web:c2:bob".into()), None, "m1", vec![]),
    ];
    for (user, scope, except, model, want) in cases {
        let got = seen(store.transcript_vectors(user, &scope, model, except).await.unwrap());
        assert_eq!(got, want, "{user} {scope:?} {except:?} {model}");
    }
    let refs: Vec<(String, i64)> = ["s-a1", "s-b", "s-g"].iter().map(|s| (s.to_string(), 1)).collect();
    let hits = |user: &'static str, scope: TranscriptScope| {
        let (store, refs) = (store.clone(), refs.clone());
        async move {
            let mut ids: Vec<String> =
                store.transcript_hits(user, &scope, &refs).await.unwrap().into_iter().map(|h| h.session_id).collect();
            ids.sort();
            ids
        }
    };
    assert_eq!(hits("alice", TranscriptScope::Private).await, ["s-a1"]);
    assert_eq!(hits("bob", TranscriptScope::Private).await, ["s-b"]);
    assert_eq!(hits("bob", group).await, ["s-g"]);
}
