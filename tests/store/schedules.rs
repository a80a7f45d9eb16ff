//! Schedule contract: jobs are upserted by (scope, name) keeping their id, pause state and (for
//! an unchanged timing) their next fire time; listed by id, owner, scope, all, or due (earliest
//! first, active only, inclusive); paused, resumed, removed with their runs, and advanced only by
//! compare-and-swap. A (job, fire time) is claimed by exactly one of many concurrent claimers;
//! runs read their status, end and delivered message id from the inbox and outbox rows.

use crate::fixtures::{event, reply};
use butler::config::{Missed, ScheduleMode};
use butler::store::{
    InboxStatus, NewSchedule, OutboxMark, RunClaim, RunKind, RunQuery, RunStatus, ScheduleChange, ScheduleFilter,
    ScheduleRow, ScheduleSource, Store,
};
use std::sync::Arc;

const T: i64 = 1_700_000_000_000;
const MIN: i64 = 60_000;

/// A job `name` in `scope`, owned by user `u1`, next firing at `next`.
pub fn job(scope: &str, name: &str, next: Option<i64>) -> NewSchedule {
    NewSchedule {
        scope: scope.to_string(),
        name: name.to_string(),
        source: ScheduleSource::Tool,
        owner: "web:alice".to_string(),
        owner_user: Some("u1".to_string()),
        cron: Some("*/5 * * * *".to_string()),
        at_ms: None,
        tz: "Europe/Berlin".to_string(),
        prompt: format!("do {name}"),
        target: "web:briefings".to_string(),
        mode: ScheduleMode::Always,
        missed: Missed::RunOnce,
        grace_ms: 3_600_000,
        next_fire_ms: next,
    }
}

/// The claim of (job `id`, `fire`) by its event id, advancing `from` -> `to` if given.
pub fn claim(id: i64, fire: i64, advance: Option<(i64, Option<i64>)>) -> RunClaim {
    let event_id = format!("schedule:{id}:{fire}");
    RunClaim {
        schedule_id: id,
        fire_at_ms: fire,
        kind: RunKind::Scheduled,
        outbox_key: format!("{event_id}:reply"),
        event_id,
        started_ms: fire + 250,
        advance,
    }
}

fn names(rows: &[ScheduleRow]) -> Vec<&str> {
    rows.iter().map(|r| r.name.as_str()).collect()
}

async fn one(store: &dyn Store, id: i64) -> ScheduleRow {
    store.schedules_list(&ScheduleFilter::Id(id)).await.unwrap().pop().expect("the job exists")
}

pub async fn put_creates_then_updates_in_place(store: Arc<dyn Store>) {
    let a = store.schedule_put(&job("user:u1", "brief", Some(T))).await.unwrap();
    assert_eq!((a.name.as_str(), a.next_fire_ms, a.paused, a.source), ("brief", Some(T), false, ScheduleSource::Tool));
    assert_eq!(
        (a.mode, a.missed, a.grace_ms, a.tz.as_str()),
        (ScheduleMode::Always, Missed::RunOnce, 3_600_000, "Europe/Berlin")
    );
    assert_eq!(one(&*store, a.id).await, a, "list by id sees the same row");
    assert!(store.schedule_set(a.id, &ScheduleChange::Pause).await.unwrap());

    // The same name in the same scope: the same job; an unchanged timing keeps its fire time
    // (a restart never moves a missed time) and a pause survives.
    let mut edit = job("user:u1", "brief", Some(T + 99 * MIN));
    edit.prompt = "new prompt".into();
    edit.mode = ScheduleMode::Heartbeat;
    let b = store.schedule_put(&edit).await.unwrap();
    assert_eq!((b.id, b.next_fire_ms, b.paused, b.prompt.as_str()), (a.id, Some(T), true, "new prompt"));
    assert_eq!((b.mode, b.created_ms), (ScheduleMode::Heartbeat, a.created_ms));
    // A changed cron, zone or one-shot time takes the new fire time; then unchanged keeps it.
    // (cron, tz, at, next given, next kept)
    type Step<'a> = (Option<&'a str>, &'a str, Option<i64>, i64, i64);
    let steps: &[Step] = &[
        (Some("0 8 * * *"), "Europe/Berlin", None, T + MIN, T + MIN),
        (Some("0 8 * * *"), "America/New_York", None, T + 2 * MIN, T + 2 * MIN),
        (None, "America/New_York", Some(T + 5 * MIN), T + 5 * MIN, T + 5 * MIN),
        (None, "America/New_York", Some(T + 5 * MIN), T + 7 * MIN, T + 5 * MIN),
    ];
    for (i, (cron, tz, at, next, kept)) in steps.iter().enumerate() {
        let j = NewSchedule {
            cron: cron.map(str::to_string),
            tz: tz.to_string(),
            at_ms: *at,
            ..job("user:u1", "brief", Some(*next))
        };
        let row = store.schedule_put(&j).await.unwrap();
        assert_eq!((row.id, row.next_fire_ms), (a.id, Some(*kept)), "step {i}");
    }
    let last = one(&*store, a.id).await;
    assert_eq!((last.cron.as_deref(), last.at_ms), (None, Some(T + 5 * MIN)));
    // Another scope is another job.
    let c = store.schedule_put(&job("config", "brief", Some(T))).await.unwrap();
    assert_ne!(c.id, a.id);
    assert_eq!(store.schedules_list(&ScheduleFilter::All).await.unwrap().len(), 2);
}

pub async fn list_filters_and_due_order(store: Arc<dyn Store>) {
    let mut ids = Vec::new();
    // (scope, name, owner user, next fire)
    let jobs: &[(&str, &str, Option<&str>, Option<i64>)] = &[
        ("user:u1", "late", Some("u1"), Some(T + 2 * MIN)),
        ("user:u1", "early", Some("u1"), Some(T)),
        ("user:u2", "bob", Some("u2"), Some(T + MIN)),
        ("config", "cfg", None, Some(T + MIN)),
        ("user:u1", "done", Some("u1"), None),
        ("user:u1", "paused", Some("u1"), Some(T - MIN)),
        ("user:u2", "future", Some("u2"), Some(T + 60 * MIN)),
    ];
    for (scope, name, user, next) in jobs {
        let mut j = job(scope, name, *next);
        j.owner_user = user.map(str::to_string);
        ids.push(store.schedule_put(&j).await.unwrap().id);
    }
    store.schedule_set(ids[5], &ScheduleChange::Pause).await.unwrap();
    let list = |f: ScheduleFilter| {
        let store = store.clone();
        async move { store.schedules_list(&f).await.unwrap() }
    };
    assert_eq!(names(&list(ScheduleFilter::Owner("u1".into())).await), ["late", "early", "done", "paused"]);
    assert_eq!(names(&list(ScheduleFilter::Owner("u3".into())).await), Vec::<&str>::new());
    assert_eq!(names(&list(ScheduleFilter::Scope("config".into())).await), ["cfg"]);
    assert_eq!(list(ScheduleFilter::All).await.len(), 7);
    assert_eq!(names(&list(ScheduleFilter::Id(ids[2])).await), ["bob"]);
    assert!(list(ScheduleFilter::Id(-1)).await.is_empty());
    // Due: active and still firing, at or before now (inclusive), earliest first, then by id.
    let due = |now_ms, limit| list(ScheduleFilter::Due { now_ms, limit });
    assert_eq!(names(&due(T + MIN, 10).await), ["early", "bob", "cfg"]);
    assert_eq!(names(&due(T + MIN - 1, 10).await), ["early"]);
    assert_eq!(names(&due(T + 2 * MIN, 2).await), ["early", "bob"]);
    assert_eq!(names(&due(i64::MAX, 1).await), ["early"], "the next job to fire");
    assert!(due(T - 1, 10).await.is_empty(), "a paused job is never due");
}

pub async fn set_pause_remove_and_advance(store: Arc<dyn Store>) {
    let a = store.schedule_put(&job("user:u1", "a", Some(T))).await.unwrap();
    let due_now = || async { store.schedules_list(&ScheduleFilter::Due { now_ms: T, limit: 10 }).await.unwrap().len() };
    assert!(store.schedule_set(a.id, &ScheduleChange::Pause).await.unwrap());
    assert_eq!((one(&*store, a.id).await.paused, due_now().await), (true, 0));
    let adv = ScheduleChange::Advance { from: T, to: Some(T + MIN) };
    assert!(!store.schedule_set(a.id, &adv).await.unwrap(), "a paused job does not advance");
    assert!(store.schedule_set(a.id, &ScheduleChange::Resume).await.unwrap());
    assert_eq!((one(&*store, a.id).await.paused, due_now().await), (false, 1));
    // Advance is a compare-and-swap: only from the time the caller read.
    assert!(!store.schedule_set(a.id, &ScheduleChange::Advance { from: T - 1, to: Some(T + MIN) }).await.unwrap());
    assert!(store.schedule_set(a.id, &adv).await.unwrap());
    assert!(!store.schedule_set(a.id, &adv).await.unwrap(), "the second advance from the same time loses");
    assert!(store.schedule_set(a.id, &ScheduleChange::Advance { from: T + MIN, to: None }).await.unwrap());
    assert_eq!(one(&*store, a.id).await.next_fire_ms, None, "done");
    // Remove deletes the job and its runs; unknown ids change nothing.
    store.schedule_claim(&claim(a.id, T, None)).await.unwrap().expect("claimed");
    assert!(store.schedule_set(a.id, &ScheduleChange::Remove).await.unwrap());
    assert!(store.schedules_list(&ScheduleFilter::Id(a.id)).await.unwrap().is_empty());
    assert!(store.schedule_runs(&RunQuery::Of { schedule_id: a.id, limit: 10 }).await.unwrap().is_empty());
    for change in [ScheduleChange::Pause, ScheduleChange::Resume, ScheduleChange::Remove] {
        assert!(!store.schedule_set(a.id, &change).await.unwrap(), "{change:?} of a removed job");
    }
}

pub async fn claim_wins_once_under_races(store: Arc<dyn Store>) {
    let a = store.schedule_put(&job("user:u1", "a", Some(T))).await.unwrap();
    let mut tasks = Vec::new();
    for _ in 0..12 {
        let store = store.clone();
        tasks.push(tokio::spawn(
            async move { store.schedule_claim(&claim(a.id, T, Some((T, Some(T + 5 * MIN))))).await },
        ));
    }
    let mut won = Vec::new();
    for t in tasks {
        if let Some(run) = t.await.unwrap().unwrap() {
            won.push(run);
        }
    }
    assert_eq!(won.len(), 1, "exactly one claimer wins");
    let run = &won[0];
    assert_eq!(
        (run.status, run.kind, run.fire_at_ms, run.started_ms),
        (RunStatus::Claimed, RunKind::Scheduled, T, T + 250)
    );
    assert_eq!(
        (run.event_id.as_str(), run.outbox_key.clone()),
        (format!("schedule:{}:{T}", a.id).as_str(), format!("schedule:{}:{T}:reply", a.id))
    );
    assert_eq!(one(&*store, a.id).await.next_fire_ms, Some(T + 5 * MIN), "advanced once, in the same transaction");
    // The same fire time without an advance (run-now racing the tick) loses to the run row.
    assert!(store.schedule_claim(&claim(a.id, T, None)).await.unwrap().is_none());
    // A stale advance writes nothing, not even a run for a new fire time.
    assert!(store.schedule_claim(&claim(a.id, T + MIN, Some((T, Some(T + 9 * MIN))))).await.unwrap().is_none());
    // An advance that holds but whose fire time already ran keeps the advance.
    assert!(store.schedule_claim(&claim(a.id, T, Some((T + 5 * MIN, Some(T + 10 * MIN))))).await.unwrap().is_none());
    assert_eq!(one(&*store, a.id).await.next_fire_ms, Some(T + 10 * MIN));
    let runs = store.schedule_runs(&RunQuery::Of { schedule_id: a.id, limit: 10 }).await.unwrap();
    assert_eq!(runs.len(), 1, "one run row per (job, fire time)");
    // Claiming for a job that does not exist is refused.
    assert!(store.schedule_claim(&claim(a.id + 1000, T, None)).await.is_err());
}

pub async fn runs_read_their_delivery(store: Arc<dyn Store>) {
    let a = store.schedule_put(&job("user:u1", "a", Some(T))).await.unwrap();
    let fires = [T, T + MIN, T + 2 * MIN, T + 3 * MIN, T + 4 * MIN, T + 5 * MIN];
    for f in fires {
        store.schedule_claim(&claim(a.id, f, None)).await.unwrap().expect("claimed");
    }
    let runs = || async {
        let mut rows = store.schedule_runs(&RunQuery::Of { schedule_id: a.id, limit: 10 }).await.unwrap();
        rows.reverse();
        rows
    };
    assert!(runs().await.iter().all(|r| r.status == RunStatus::Claimed));
    let ev = |f: i64| event(&format!("schedule:{}:{f}", a.id), "web", "briefings");
    let key = |f: i64| format!("schedule:{}:{f}:reply", a.id);
    // Never queued, and claimed long enough ago: what recovery hands over (oldest first).
    let unqueued =
        store.schedule_runs(&RunQuery::Unqueued { claimed_before_ms: T + 3 * MIN + 250, limit: 10 }).await.unwrap();
    assert_eq!(unqueued.iter().map(|r| r.fire_at_ms).collect::<Vec<_>>(), fires[..4]);
    // fires[0]: queued, then running, delivered (message id = first chunk).
    // fires[1]: a heartbeat that said nothing. fires[2]: dropped by triage with the reason.
    // fires[3]: delivery failing and retried. fires[4]: delivery given up. fires[5]: claimed only.
    for f in &fires[..5] {
        assert!(store.inbox_insert(&ev(*f)).await.unwrap());
    }
    assert_eq!(runs().await[0].status, RunStatus::Queued, "in the inbox, not yet decided");
    let unqueued =
        store.schedule_runs(&RunQuery::Unqueued { claimed_before_ms: T + 9 * MIN, limit: 10 }).await.unwrap();
    assert_eq!(unqueued.iter().map(|r| r.fire_at_ms).collect::<Vec<_>>(), [fires[5]]);
    for f in [fires[0], fires[1], fires[3], fires[4]] {
        assert!(store.schedule_run_note(a.id, f, RunStatus::Running, None).await.unwrap());
    }
    assert_eq!(runs().await[0].status, RunStatus::Running);
    assert!(store
        .schedule_run_note(a.id, fires[2], RunStatus::Dropped, Some("owner may not use Butler"))
        .await
        .unwrap());
    assert!(!store.schedule_run_note(a.id, T - 1, RunStatus::Running, None).await.unwrap(), "no such run");
    store.inbox_finish(&ev(fires[2]).id.0, InboxStatus::Dropped, Some("owner may not use Butler")).await.unwrap();
    for f in [fires[0], fires[3], fires[4]] {
        store.outbox_enqueue(&reply(&key(f), "web:briefings", "Your briefing")).await.unwrap();
        store.inbox_finish(&ev(f).id.0, InboxStatus::Done, None).await.unwrap();
    }
    store.inbox_finish(&ev(fires[1]).id.0, InboxStatus::Done, None).await.unwrap();
    assert_eq!(runs().await[0].status, RunStatus::Delivering);
    let row0 = store.outbox_get(&key(fires[0])).await.unwrap().unwrap();
    let sent = OutboxMark::Sent { platform_ids: vec!["m-41".into(), "m-42".into()], text: "Your briefing".into() };
    store.outbox_mark(row0.id, &sent).await.unwrap();
    let row3 = store.outbox_get(&key(fires[3])).await.unwrap().unwrap();
    let retry =
        OutboxMark::Retry { next_attempt_ms: T + 9 * MIN, error: "502 from the platform".into(), count_attempt: true };
    store.outbox_mark(row3.id, &retry).await.unwrap();
    let row4 = store.outbox_get(&key(fires[4])).await.unwrap().unwrap();
    store.outbox_mark(row4.id, &OutboxMark::Failed { error: "chat not found".into() }).await.unwrap();

    let got = runs().await;
    let view: Vec<(RunStatus, Option<&str>, Option<&str>, i32)> =
        got.iter().map(|r| (r.status, r.error.as_deref(), r.delivered_id.as_deref(), r.delivery_attempts)).collect();
    assert_eq!(
        view,
        [
            (RunStatus::Delivered, None, Some("m-41"), 1),
            (RunStatus::Silent, None, None, 0),
            (RunStatus::Dropped, Some("owner may not use Butler"), None, 0),
            (RunStatus::Delivering, Some("502 from the platform"), None, 1),
            (RunStatus::Failed, Some("chat not found"), None, 1),
            (RunStatus::Claimed, None, None, 0),
        ]
    );
    let ended: Vec<bool> = got.iter().map(|r| r.ended_ms.is_some()).collect();
    assert_eq!(ended, [true, true, true, false, true, false], "ended once delivered, silent, dropped or failed");
    let newest = store.schedule_runs(&RunQuery::Of { schedule_id: a.id, limit: 2 }).await.unwrap();
    assert_eq!(newest.iter().map(|r| r.fire_at_ms).collect::<Vec<_>>(), [fires[5], fires[4]], "newest first");
}

/// Linking bob's identity into alice moves bob's jobs to alice: listed as hers, in her scope,
/// except a job whose name she already uses, which keeps its old scope (and still lists as hers).
pub async fn jobs_follow_a_linked_identity(store: Arc<dyn Store>) {
    use butler::channel::Identity;
    let (alice, bob) = (Identity::new("web", "alice"), Identity::new("telegram", "7"));
    store.user_ensure(&alice, &crate::fixtures::user("alice", "Alice")).await.unwrap();
    store.user_ensure(&bob, &crate::fixtures::user("bob", "Bob")).await.unwrap();
    let owned = |scope: &str, name: &str, user: &str| NewSchedule {
        owner: format!("x:{user}"),
        owner_user: Some(user.to_string()),
        ..job(scope, name, Some(T))
    };
    store.schedule_put(&owned("user:alice", "news", "alice")).await.unwrap();
    let news = store.schedule_put(&owned("user:bob", "news", "bob")).await.unwrap();
    let gym = store.schedule_put(&owned("user:bob", "gym", "bob")).await.unwrap();
    let other = store.schedule_put(&owned("user:carol", "gym", "carol")).await.unwrap();

    assert_eq!(store.identity_link(&bob, "alice").await.unwrap().as_deref(), Some("bob"));
    let mine = store.schedules_list(&ScheduleFilter::Owner("alice".into())).await.unwrap();
    let mut got: Vec<(String, String)> = mine.iter().map(|r| (r.scope.clone(), r.name.clone())).collect();
    got.sort();
    let want = [("user:alice", "gym"), ("user:alice", "news"), ("user:bob", "news")];
    assert_eq!(got, want.map(|(s, n)| (s.to_string(), n.to_string())));
    assert!(store.schedules_list(&ScheduleFilter::Owner("bob".into())).await.unwrap().is_empty());
    assert_eq!(one(&*store, gym.id).await.scope, "user:alice");
    assert_eq!(one(&*store, news.id).await.owner_user.as_deref(), Some("alice"));
    assert_eq!(one(&*store, other.id).await.scope, "user:carol", "other users' jobs stay put");
}
