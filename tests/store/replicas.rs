//! What several replicas need from the store, on both backends: fencing tokens only grow and a
//! commit with an old one is refused whole; an event handed to a replica is claimable by it
//! (and by others only after the grace); a dead replica's events come back, a live one's never;
//! yielding and claiming an outbox row work for one holder only.

use crate::fixtures::{event, reply, session};
use crate::turn::started_turn;
use butler::store::{Fence, InboxStatus, Store, StoreError};
use std::sync::Arc;

pub async fn fences_grow_and_old_tokens_are_refused(store: Arc<dyn Store>) {
    // (key, tokens taken one after the other)
    for (key, n) in [("dm:web:c1:alice", 3), ("group:telegram:-100", 1)] {
        let tokens: Vec<i64> = {
            let mut out = Vec::new();
            for _ in 0..n {
                out.push(store.fence_take(key).await.unwrap().token);
            }
            out
        };
        assert_eq!(tokens, (1..=n).collect::<Vec<i64>>(), "{key}");
    }
    // Concurrent takers each get a distinct token.
    let mut handles = Vec::new();
    for _ in 0..8 {
        let s = store.clone();
        handles.push(tokio::spawn(async move { s.fence_take("race").await.unwrap().token }));
    }
    let mut got: Vec<i64> = Vec::new();
    for h in handles {
        got.push(h.await.unwrap());
    }
    got.sort();
    assert_eq!(got, (1..=8).collect::<Vec<i64>>());

    // A commit with the newest token goes through; with an older one nothing is written.
    let s = store.session_open(&session("s-f", "dm:web:f:alice")).await.unwrap();
    let old = store.fence_take("dm:web:f:alice").await.unwrap();
    let new = store.fence_take("dm:web:f:alice").await.unwrap();
    let mut stale = started_turn(&store, "ev-stale").await;
    stale.session_id = Some(s.id.clone());
    stale.fence = Some(old.clone());
    match store.finish_event(&stale).await {
        Err(StoreError::Fenced { key }) => assert_eq!(key, "dm:web:f:alice"),
        other => panic!("a stale commit must be refused, got {other:?}"),
    }
    assert_eq!(store.inbox_get("ev-stale").await.unwrap().unwrap().status, InboxStatus::Processing);
    assert!(store.messages_recent(&s.id, 10).await.unwrap().is_empty(), "no transcript from a refused commit");
    assert!(store.outbox_get(&stale.reply.as_ref().unwrap().key).await.unwrap().is_none(), "no reply");
    let mut fresh = started_turn(&store, "ev-fresh").await;
    fresh.session_id = Some(s.id.clone());
    fresh.fence = Some(new.clone());
    assert!(store.finish_event(&fresh).await.unwrap().is_some());
    assert_eq!(store.inbox_get("ev-fresh").await.unwrap().unwrap().status, InboxStatus::Done);
    // A token for a key never taken is refused too.
    let mut never = started_turn(&store, "ev-never").await;
    never.fence = Some(Fence { key: "never-taken".into(), token: 1 });
    assert!(matches!(store.finish_event(&never).await, Err(StoreError::Fenced { .. })));
}

pub async fn routed_events_go_to_their_replica_first(store: Arc<dyn Store>) {
    let chans = vec!["web".to_string()];
    store.inbox_insert(&event("r1", "web", "c1")).await.unwrap();
    let claimed = store.inbox_claim(&chans, "a", 10).await.unwrap();
    assert_eq!(claimed.len(), 1);
    assert!(store.inbox_route("r1", "b").await.unwrap());
    // (claimer, gets it) right after the routing: only the replica it was handed to.
    for (worker, gets) in [("c", false), ("a", false), ("b", true)] {
        let got = store.inbox_claim(&chans, worker, 10).await.unwrap();
        assert_eq!(got.len(), usize::from(gets), "{worker}");
        if gets {
            assert_eq!(got[0].attempts, 1, "routing undid the first claim's count");
        }
    }
    // Routing only applies to a claimed event; a finished one is never reopened.
    store.inbox_finish("r1", InboxStatus::Done, None).await.unwrap();
    assert!(!store.inbox_route("r1", "b").await.unwrap());
    assert_eq!(store.inbox_get("r1").await.unwrap().unwrap().status, InboxStatus::Done);
}

pub async fn a_conversation_stays_in_order_across_replicas(store: Arc<dyn Store>) {
    let chans = vec!["web".to_string()];
    for id in ["o1", "o2"] {
        store.inbox_insert(&event(id, "web", "same")).await.unwrap();
    }
    store.inbox_insert(&event("o3", "web", "other")).await.unwrap();
    // x holds o1: nobody else may take o2 (a later event of the same conversation) meanwhile,
    // but o3 (another conversation) is free.
    let got = store.inbox_claim(&chans, "x", 1).await.unwrap();
    assert_eq!(got[0].event.id.0, "o1");
    let ids = |rows: Vec<butler::store::InboxRow>| rows.into_iter().map(|r| r.event.id.0).collect::<Vec<_>>();
    assert_eq!(ids(store.inbox_claim(&chans, "y", 10).await.unwrap()), ["o3"]);
    // o1 handed to z: only z gets o1 and then o2, in order.
    assert!(store.inbox_route("o1", "z").await.unwrap());
    assert!(ids(store.inbox_claim(&chans, "y", 10).await.unwrap()).is_empty());
    assert_eq!(ids(store.inbox_claim(&chans, "z", 10).await.unwrap()), ["o1", "o2"]);
}

pub async fn takeover_returns_only_dead_replicas_events(store: Arc<dyn Store>) {
    let chans = vec!["web".to_string()];
    for (id, worker) in [("t1", "dead"), ("t2", "alive"), ("t3", "dead")] {
        store.inbox_insert(&event(id, "web", id)).await.unwrap();
        assert_eq!(store.inbox_claim(&chans, worker, 1).await.unwrap().len(), 1);
    }
    store.inbox_insert(&event("t4", "web", "t4")).await.unwrap();
    let back = store.inbox_takeover(&["alive".to_string(), "other".to_string()]).await.unwrap();
    assert_eq!(back, 2);
    // (event, status after the takeover)
    for (id, status) in [
        ("t1", InboxStatus::Pending),
        ("t2", InboxStatus::Processing),
        ("t3", InboxStatus::Pending),
        ("t4", InboxStatus::Pending),
    ] {
        assert_eq!(store.inbox_get(id).await.unwrap().unwrap().status, status, "{id}");
    }
    // Yield: only by the holder.
    assert!(!store.inbox_yield("t2", "someone-else").await.unwrap());
    assert!(store.inbox_yield("t2", "alive").await.unwrap());
    assert_eq!(store.inbox_get("t2").await.unwrap().unwrap().status, InboxStatus::Pending);
    assert!(!store.inbox_yield("t2", "alive").await.unwrap(), "not held any more");
}

pub async fn a_claim_whose_answer_was_lost_is_undone(store: Arc<dyn Store>) {
    let chans = vec!["web".to_string()];
    store.inbox_insert(&event("u1", "web", "u1")).await.unwrap();
    assert_eq!(store.inbox_claim(&chans, "w", 10).await.unwrap().len(), 1);
    // Claims are stamped in milliseconds: step past the first claim's millisecond before
    // taking `since`, and past `since` before the second claim.
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let since = butler::store::now_ms();
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    for id in ["u2", "u3"] {
        store.inbox_insert(&event(id, "web", id)).await.unwrap();
    }
    // This claim "failed" for the caller: its rows are undone, the earlier claim is kept.
    assert_eq!(store.inbox_claim(&chans, "w", 10).await.unwrap().len(), 2);
    assert_eq!(store.inbox_unclaim("other", since).await.unwrap(), 0, "only the worker's own");
    assert_eq!(store.inbox_unclaim("w", since).await.unwrap(), 2);
    // (event, status, attempts)
    for (id, status, attempts) in
        [("u1", InboxStatus::Processing, 1), ("u2", InboxStatus::Pending, 0), ("u3", InboxStatus::Pending, 0)]
    {
        let row = store.inbox_get(id).await.unwrap().unwrap();
        assert_eq!((row.status, row.attempts), (status, attempts), "{id}");
    }
}

pub async fn an_outbox_row_is_claimed_by_one_sender(store: Arc<dyn Store>) {
    let row = store.outbox_enqueue(&reply("o1", "web:c1", "hello")).await.unwrap();
    let until = butler::store::now_ms() + 60_000;
    let mut handles = Vec::new();
    for _ in 0..6 {
        let s = store.clone();
        handles.push(tokio::spawn(async move { s.outbox_claim(row.id, until).await.unwrap() }));
    }
    let mut wins = 0;
    for h in handles {
        wins += usize::from(h.await.unwrap());
    }
    assert_eq!(wins, 1, "one sender");
    // Claimed: not due for anyone else until the claim runs out.
    assert!(store.outbox_due(&["web".to_string()], butler::store::now_ms(), 10).await.unwrap().is_empty());
}
