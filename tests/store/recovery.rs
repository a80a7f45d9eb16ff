//! What a crash may charge, on both backends: a process death (start-up recovery, or the
//! takeover of a dead replica's events) charges a try and a crash in a row only to an event
//! whose turn had begun; an event that only waited (claimed, queued) gets its claim's try back
//! and its streak ends; a try ending any other way starts the streak over. And the streamed
//! drafts nobody will finish (their event ended) are settled, never one whose event may run.

use crate::fixtures::{event, reply, strings};
use butler::store::{InboxStatus, OutboxStatus, Store};
use std::sync::Arc;

/// What happens to event `a` (web:c1) in one step of the table below.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// Claimed by `w1`, its turn never begins, the process dies.
    DiesWaiting,
    /// Claimed by `w1`, its turn begins, the process dies (start-up recovery).
    DiesRunning,
    /// As `DiesRunning`, but `w1` is a replica whose events another takes back.
    ReplicaDiesRunning,
    /// Claimed, begun, and the try fails with an error (retried later).
    Fails,
    /// Claimed, begun, and parked by a shutdown (released without counting).
    Released,
}

pub async fn a_death_charges_only_the_running_event(store: Arc<dyn Store>) {
    let web = strings(&["web"]);
    store.inbox_insert(&event("a", "web", "c1")).await.unwrap();
    // (step, then: attempts, crashes in a row)
    let table: &[(Step, i32, i32)] = &[
        (Step::DiesWaiting, 0, 0),
        (Step::DiesWaiting, 0, 0),
        (Step::DiesRunning, 1, 1),
        (Step::DiesRunning, 2, 2),
        (Step::DiesWaiting, 2, 0),
        (Step::ReplicaDiesRunning, 3, 1),
        (Step::DiesRunning, 4, 2),
        (Step::Fails, 5, 0),
        (Step::DiesRunning, 6, 1),
        (Step::Released, 6, 1),
        (Step::DiesRunning, 7, 2),
    ];
    let mut before = 0;
    for (i, (step, attempts, crashes)) in table.iter().enumerate() {
        let claimed = store.inbox_claim(&web, "w1", 10).await.unwrap();
        assert_eq!(claimed.len(), 1, "step {i}: {step:?}");
        assert_eq!(claimed[0].attempts, before + 1, "step {i}: a claim counts a try until it is given back");
        before = *attempts;
        if !matches!(step, Step::DiesWaiting) {
            assert!(store.inbox_start("a", "w1").await.unwrap(), "step {i}: w1 holds it");
        }
        match step {
            Step::DiesWaiting | Step::DiesRunning => assert_eq!(store.inbox_recover(&web).await.unwrap(), 1),
            Step::ReplicaDiesRunning => assert_eq!(store.inbox_takeover(&strings(&["w2"])).await.unwrap(), 1),
            Step::Fails => store.inbox_retry("a", 0, Some("boom")).await.unwrap(),
            Step::Released => store.inbox_release("a", 0).await.unwrap(),
        }
        let row = store.inbox_get("a").await.unwrap().unwrap();
        assert_eq!(
            (row.status, row.attempts, row.crashes),
            (InboxStatus::Pending, *attempts, *crashes),
            "step {i}: {step:?}"
        );
    }
    // A failed event given another set of tries starts with a clean streak.
    store.inbox_claim(&web, "w1", 10).await.unwrap();
    store.inbox_finish("a", InboxStatus::Failed, Some("gave up")).await.unwrap();
    assert!(store.inbox_requeue("a").await.unwrap());
    let row = store.inbox_get("a").await.unwrap().unwrap();
    assert_eq!((row.attempts, row.crashes), (0, 0));
}

pub async fn only_the_holder_begins_an_event(store: Arc<dyn Store>) {
    let web = strings(&["web"]);
    for (id, conv) in [("a", "c1"), ("b", "c1"), ("c", "c2")] {
        store.inbox_insert(&event(id, "web", conv)).await.unwrap();
    }
    assert!(!store.inbox_start("a", "w1").await.unwrap(), "a pending event is not held");
    assert_eq!(store.inbox_claim(&web, "w1", 10).await.unwrap().len(), 3);
    // (event, worker, begins)
    let table = [("a", "w2", false), ("a", "w1", true), ("a", "w1", true), ("nope", "w1", false)];
    for (id, worker, want) in table {
        assert_eq!(store.inbox_start(id, worker).await.unwrap(), want, "{id} by {worker}");
    }
    // One process dies: the running `a` is charged, `b` queued behind it and `c` waiting are not.
    assert_eq!(store.inbox_recover(&web).await.unwrap(), 3);
    // (event, attempts, crashes)
    for (id, attempts, crashes) in [("a", 1, 1), ("b", 0, 0), ("c", 0, 0)] {
        let row = store.inbox_get(id).await.unwrap().unwrap();
        assert_eq!((row.status, row.attempts, row.crashes), (InboxStatus::Pending, attempts, crashes), "{id}");
    }
    store.inbox_finish("a", InboxStatus::Done, None).await.unwrap();
    assert!(!store.inbox_start("a", "w1").await.unwrap(), "an ended event never begins again");
    // A live replica's events stay untouched by a takeover, begun or not.
    store.inbox_claim(&web, "w3", 10).await.unwrap();
    assert!(store.inbox_start("b", "w3").await.unwrap());
    assert_eq!(store.inbox_takeover(&strings(&["w3"])).await.unwrap(), 0);
    assert_eq!(store.inbox_get("b").await.unwrap().unwrap().status, InboxStatus::Processing);
}

/// A `draft` reply row for event `id` in web:c1, shown as platform message `shown` if any.
async fn draft(store: &Arc<dyn Store>, id: &str, shown: Option<&str>) -> i64 {
    let mut new = reply(&format!("{id}:reply"), "web:c1", "");
    new.buttons = vec![butler::channel::Button::new("Stop", "stop:t1", butler::channel::ButtonStyle::Danger)];
    let row = store.outbox_draft(&new).await.unwrap();
    if let Some(p) = shown {
        store.outbox_progress(row.id, &[p.to_string()]).await.unwrap();
    }
    row.id
}

/// What settling does to a draft.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Fate {
    /// Never shown: the row is deleted.
    Deleted,
    /// Shown: finished as `pending` under `<key>:cut:<id>`, edited in place by delivery.
    Finished,
    /// Its event may still run: left as it is.
    Kept,
}

pub async fn orphan_drafts_are_settled(store: Arc<dyn Store>) {
    let web = strings(&["web"]);
    // (event, its inbox row: None = none, Some(None) = still open, Some(Some(end)); fate)
    let events: &[(&str, Option<Option<InboxStatus>>, Fate)] = &[
        ("done-shown", Some(Some(InboxStatus::Done)), Fate::Finished),
        ("failed-shown", Some(Some(InboxStatus::Failed)), Fate::Finished),
        ("failed-unshown", Some(Some(InboxStatus::Failed)), Fate::Deleted),
        ("dropped-unshown", Some(Some(InboxStatus::Dropped)), Fate::Deleted),
        ("pending-shown", Some(None), Fate::Kept),
        ("running-unshown", Some(None), Fate::Kept),
        ("gone-shown", None, Fate::Finished),
    ];
    for (id, row, _) in events {
        if row.is_some() {
            store.inbox_insert(&event(id, "web", &format!("c-{id}"))).await.unwrap();
        }
    }
    store.inbox_claim(&web, "w1", 10).await.unwrap();
    for (id, row, _) in events {
        match row {
            Some(Some(end)) => store.inbox_finish(id, *end, None).await.unwrap(),
            Some(None) if id.starts_with("pending") => store.inbox_release(id, 0).await.unwrap(),
            _ => {}
        }
    }
    let mut ids = std::collections::HashMap::new();
    for (id, _, _) in events {
        ids.insert(*id, draft(&store, id, id.ends_with("-shown").then_some("42")).await);
    }
    // Not a streamed reply: left alone whatever its state.
    store.outbox_draft(&reply("approval:x", "web:c1", "")).await.unwrap();

    let settled = events.iter().filter(|(_, _, fate)| *fate != Fate::Kept).count() as u64;
    assert_eq!(store.drafts_settle("cut off").await.unwrap(), settled);
    let due = store.outbox_due(&web, i64::MAX, 100).await.unwrap();
    for (id, _, fate) in events {
        let reply_key = format!("{id}:reply");
        let kept = store.outbox_get(&reply_key).await.unwrap();
        let finished = due.iter().find(|r| r.id == ids[id]);
        match fate {
            Fate::Deleted => assert!(kept.is_none() && finished.is_none(), "{id}: deleted"),
            Fate::Kept => {
                let row = kept.unwrap_or_else(|| panic!("{id}: kept"));
                assert_eq!((row.status, row.text.as_str()), (OutboxStatus::Draft, ""), "{id}");
            }
            Fate::Finished => {
                assert!(kept.is_none(), "{id}: the reply's key is free again");
                let row = finished.unwrap_or_else(|| panic!("{id}: finished and due"));
                let want = (format!("{reply_key}:cut:{}", ids[id]), OutboxStatus::Pending, "cut off");
                assert_eq!((row.key.clone(), row.status, row.text.as_str()), want, "{id}");
                assert!(row.buttons.is_empty(), "{id}: no Stop button on a finished draft");
                assert_eq!(row.platform_ids, ["42"], "{id}: delivery edits the message shown");
            }
        }
    }
    assert_eq!(store.outbox_get("approval:x").await.unwrap().unwrap().status, OutboxStatus::Draft);
    assert_eq!(store.drafts_settle("cut off").await.unwrap(), 0, "nothing left to settle");
    // A later run of a settled event (`butler inbox retry`) still gets a reply of its own.
    let fresh = store.outbox_enqueue(&reply("failed-shown:reply", "web:c1", "the answer")).await.unwrap();
    assert_eq!((fresh.status, fresh.text.as_str()), (OutboxStatus::Pending, "the answer"));
    assert_ne!(fresh.id, ids["failed-shown"]);
}
