//! Inbox contract: duplicates are dropped, claims are ordered, per channel and exclusive under
//! concurrency, and finish / retry / recover move rows between states as documented.

use crate::fixtures::{event, strings};
use butler::store::{InboxStatus, Store};
use std::collections::HashMap;
use std::sync::Arc;

pub async fn duplicate_ids_are_dropped(store: Arc<dyn Store>) {
    // (event id, whether the insert stores a new row)
    let steps: &[(&str, bool)] = &[
        ("telegram:update:1", true),
        ("telegram:update:1", false),
        ("telegram:update:2", true),
        ("telegram:update:1", false),
        ("slack:E1", true),
        ("telegram:update:2", false),
    ];
    for (id, want) in steps {
        let channel = id.split(':').next().unwrap();
        assert_eq!(store.inbox_insert(&event(id, channel, "c1")).await.unwrap(), *want, "{id}");
    }
    let row = store.inbox_get("telegram:update:1").await.unwrap().expect("stored");
    assert_eq!(row.event, event("telegram:update:1", "telegram", "c1"), "the event round-trips");
    assert_eq!((row.status, row.attempts, row.error.as_deref()), (InboxStatus::Pending, 0, None));
    assert!(store.inbox_get("nope").await.unwrap().is_none());
    let all = store.inbox_claim(&strings(&["telegram", "slack"]), "w", 100).await.unwrap();
    assert_eq!(all.len(), 3, "one row per distinct id");
}

pub async fn claims_in_order_by_channel(store: Arc<dyn Store>) {
    for i in 0..6 {
        let channel = if i % 2 == 0 { "telegram" } else { "slack" };
        // One conversation each: a worker never takes a later event of a conversation another
        // worker holds (replicas::a_conversation_stays_in_order_across_replicas).
        store.inbox_insert(&event(&format!("e{i}"), channel, &format!("c{i}"))).await.unwrap();
    }
    assert!(store.inbox_claim(&[], "w1", 10).await.unwrap().is_empty(), "no channels, no claims");
    assert!(store.inbox_claim(&strings(&["telegram"]), "w1", 0).await.unwrap().is_empty());

    let first = store.inbox_claim(&strings(&["telegram"]), "w1", 2).await.unwrap();
    let ids: Vec<&str> = first.iter().map(|r| r.event.id.0.as_str()).collect();
    assert_eq!(ids, ["e0", "e2"], "oldest first, only telegram, at most the limit");
    assert!(first.windows(2).all(|w| w[0].seq < w[1].seq));
    for row in &first {
        assert_eq!((row.status, row.attempts), (InboxStatus::Processing, 1));
    }
    let rest = store.inbox_claim(&strings(&["telegram", "discord"]), "w2", 10).await.unwrap();
    assert_eq!(rest.iter().map(|r| r.event.id.0.as_str()).collect::<Vec<_>>(), ["e4"]);
    assert!(store.inbox_claim(&strings(&["telegram"]), "w1", 10).await.unwrap().is_empty());
    let slack = store.inbox_claim(&strings(&["slack"]), "w1", 10).await.unwrap();
    assert_eq!(slack.iter().map(|r| r.event.id.0.as_str()).collect::<Vec<_>>(), ["e1", "e3", "e5"]);
}

pub async fn concurrent_claims_never_overlap(store: Arc<dyn Store>) {
    const ROWS: usize = 200;
    for i in 0..ROWS {
        let channel = if i % 3 == 0 { "slack" } else { "telegram" };
        store.inbox_insert(&event(&format!("ev{i:03}"), channel, &format!("c{i}"))).await.unwrap();
    }
    let channels = strings(&["telegram", "slack"]);
    let mut tasks = Vec::new();
    for w in 0..4 {
        let (store, channels) = (store.clone(), channels.clone());
        tasks.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            loop {
                let got = store.inbox_claim(&channels, &format!("worker-{w}"), 7).await.unwrap();
                if got.is_empty() {
                    break mine;
                }
                mine.extend(got.into_iter().map(|r| r.event.id.0));
            }
        }));
    }
    let mut seen: HashMap<String, usize> = HashMap::new();
    for t in tasks {
        for id in t.await.unwrap() {
            *seen.entry(id).or_default() += 1;
        }
    }
    assert_eq!(seen.len(), ROWS, "every row claimed");
    let twice: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "claimed more than once: {twice:?}");
}

pub async fn finish_retry_recover(store: Arc<dyn Store>) {
    for id in ["a", "b", "c", "d"] {
        store.inbox_insert(&event(id, "web", "c1")).await.unwrap();
    }
    store.inbox_insert(&event("other", "slack", "c9")).await.unwrap();
    let web = strings(&["web"]);
    let claimed = store.inbox_claim(&web, "w1", 4).await.unwrap();
    assert_eq!(claimed.len(), 4);

    store.inbox_finish("a", InboxStatus::Done, None).await.unwrap();
    store.inbox_finish("b", InboxStatus::Failed, Some("model exploded")).await.unwrap();
    store.inbox_retry("c", 0, Some("429")).await.unwrap();
    store.inbox_retry("d", 60_000, Some("later")).await.unwrap();

    // (id, status, attempts, error)
    let want: &[(&str, InboxStatus, i32, Option<&str>)] = &[
        ("a", InboxStatus::Done, 1, None),
        ("b", InboxStatus::Failed, 1, Some("model exploded")),
        ("c", InboxStatus::Pending, 1, Some("429")),
        ("d", InboxStatus::Pending, 1, Some("later")),
    ];
    for (id, status, attempts, error) in want {
        let row = store.inbox_get(id).await.unwrap().unwrap();
        assert_eq!((row.status, row.attempts, row.error.as_deref()), (*status, *attempts, *error), "{id}");
    }

    let again = store.inbox_claim(&web, "w2", 10).await.unwrap();
    assert_eq!(again.iter().map(|r| r.event.id.0.as_str()).collect::<Vec<_>>(), ["c"], "d is not due yet");
    assert_eq!(again[0].attempts, 2);

    // A crash leaves `c` (web) and `other` (slack) processing; recovery is per channel.
    store.inbox_claim(&strings(&["slack"]), "w3", 10).await.unwrap();
    assert_eq!(store.inbox_recover(&web).await.unwrap(), 1);
    assert_eq!(store.inbox_recover(&web).await.unwrap(), 0, "nothing left to recover");
    assert_eq!(store.inbox_get("c").await.unwrap().unwrap().status, InboxStatus::Pending);
    assert_eq!(store.inbox_get("other").await.unwrap().unwrap().status, InboxStatus::Processing);
    assert_eq!(store.inbox_get("a").await.unwrap().unwrap().status, InboxStatus::Done, "finished rows stay");
    assert_eq!(store.inbox_recover(&strings(&["slack", "web"])).await.unwrap(), 1);
    // `c` never began its turn (`inbox_start`): the dead process's claim is given back.
    let reclaimed = store.inbox_claim(&web, "w4", 10).await.unwrap();
    assert_eq!(reclaimed.iter().map(|r| (r.event.id.0.as_str(), r.attempts)).collect::<Vec<_>>(), [("c", 2)]);
}

/// Receivers' read positions (a Matrix sync token) through the ingress: none before the first
/// save, then the last one saved, per name; without a cursor store the ingress refuses to save.
pub async fn read_positions_are_kept_per_name(store: Arc<dyn Store>) {
    use butler::channel::Ingress;
    let ingress = butler::ingress::InboxIngress::new(store.clone(), Arc::new(tokio::sync::Notify::new()))
        .with_cursors(store.clone());
    assert_eq!(ingress.cursor("matrix:@b:x").await.unwrap(), None);
    for (name, cursor) in [("matrix:@b:x", "s1"), ("matrix:@b:x", "s2_with'quote"), ("matrix:@c:x", "t1")] {
        ingress.save_cursor(name, cursor).await.unwrap();
    }
    assert_eq!(ingress.cursor("matrix:@b:x").await.unwrap().as_deref(), Some("s2_with'quote"));
    assert_eq!(ingress.cursor("matrix:@c:x").await.unwrap().as_deref(), Some("t1"));
    let bare = butler::ingress::InboxIngress::new(store.clone(), Arc::new(tokio::sync::Notify::new()));
    assert!(bare.save_cursor("matrix:@b:x", "s3").await.is_err(), "no store: nothing claims to be saved");
    assert_eq!(store.cursor_get("matrix:@b:x").await.unwrap().as_deref(), Some("s2_with'quote"));
}
