//! The tick after downtime, driven with explicit `now` values and times set in the store (no
//! sleeping): `missed = "skip"` never runs a missed time late, `run_once` runs the latest one
//! once within the grace period, a long outage never causes a storm, one-shots fire once and
//! are done, DST changes fire once, concurrent ticks claim each fire time once, and a run whose
//! claimer died before queueing it is handed over later.

use crate::support::db::{PgTestDb, SqliteTestDb};
use crate::{put, scheduler, set_next, spec, Recorder};
use butler::config::Missed;
use butler::store::{RunKind, RunQuery, RunStatus, ScheduleFilter, Store};
use std::sync::Arc;

const MIN: i64 = 60_000;
const HOUR: i64 = 60 * MIN;

fn ms(s: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(s).unwrap().timestamp_millis()
}

async fn sqlite() -> (Arc<dyn Store>, SqliteTestDb) {
    let db = SqliteTestDb::new();
    let store = butler::store::connect(&db.url, 2).await.unwrap();
    store.migrate().await.unwrap();
    (store, db)
}

async fn next_of(store: &dyn Store, id: i64) -> Option<i64> {
    store.schedules_list(&ScheduleFilter::Id(id)).await.unwrap().pop().unwrap().next_fire_ms
}

async fn runs(store: &dyn Store, id: i64) -> Vec<(i64, RunKind)> {
    let mut rows = store.schedule_runs(&RunQuery::Of { schedule_id: id, limit: 1000 }).await.unwrap();
    rows.reverse();
    rows.into_iter().map(|r| (r.fire_at_ms, r.kind)).collect()
}

#[tokio::test]
async fn skip_and_run_once_after_downtime() {
    let (store, _db) = sqlite().await;
    let s = scheduler(store.clone());
    let ingress = Recorder::default();
    let t = ms("2025-01-06T09:10:00Z"); // Butler comes back at 09:10; the 09:00 run was missed.
                                        // (policy, grace, job fires at 09:00 every hour)
    let cases = [(Missed::Skip, HOUR, false), (Missed::RunOnce, HOUR, true), (Missed::RunOnce, 5 * MIN, false)];
    for (i, (missed, grace, runs_late)) in cases.into_iter().enumerate() {
        let mut def = spec(&format!("hourly-{i}"), "0 * * * *", "UTC", "check", "web:x");
        def.missed = missed;
        def.grace_secs = (grace / 1000) as u64;
        let job = put(&*store, &def, "cli:local", None).await;
        set_next(&*store, job.id, ms("2025-01-06T09:00:00Z")).await;
        let report = s.tick(&ingress, t).await.unwrap();
        let want: Vec<(i64, RunKind)> =
            if runs_late { vec![(ms("2025-01-06T09:00:00Z"), RunKind::CatchUp)] } else { vec![] };
        assert_eq!(runs(&*store, job.id).await, want, "{missed:?} grace {grace}");
        assert_eq!((report.fired, report.skipped), (usize::from(runs_late), usize::from(!runs_late)), "{missed:?}");
        assert_eq!(next_of(&*store, job.id).await, Some(ms("2025-01-06T10:00:00Z")), "back on schedule");
        store.schedule_set(job.id, &butler::store::ScheduleChange::Pause).await.unwrap();
    }
    // The catch-up event says it is late; the recorded events are the runs, nothing more.
    assert_eq!(ingress.ids().len(), 1);
    let text = ingress.events.lock().unwrap()[0].text().unwrap().to_string();
    assert!(text.contains("run late after downtime") && text.ends_with("check"), "{text}");
}

#[tokio::test]
async fn a_long_outage_never_causes_a_storm() {
    let (store, _db) = sqlite().await;
    let s = scheduler(store.clone());
    let ingress = Recorder::default();
    let every_minute =
        put(&*store, &spec("every-minute", "* * * * *", "UTC", "tick", "web:x"), "cli:local", None).await;
    let mut daily = spec("daily", "0 7 * * *", "Europe/Berlin", "brief", "web:x");
    daily.grace_secs = 6 * 3600;
    let daily = put(&*store, &daily, "cli:local", None).await;
    // Down for a week: 10,080 minutes and 7 mornings missed.
    let back = ms("2025-01-13T09:00:30Z");
    set_next(&*store, every_minute.id, back - 7 * 24 * HOUR - 30_000).await;
    set_next(&*store, daily.id, ms("2025-01-06T06:00:00Z")).await;
    for n in 0..3 {
        s.tick(&ingress, back + n * 1_000).await.unwrap();
    }
    assert_eq!(runs(&*store, every_minute.id).await, [(back - 30_000, RunKind::Scheduled)], "only the current minute");
    assert_eq!(
        runs(&*store, daily.id).await,
        [(ms("2025-01-13T06:00:00Z"), RunKind::CatchUp)],
        "one catch-up: this morning"
    );
    assert_eq!(ingress.ids().len(), 2);
    // Then on schedule again: the next minute, once, however often the tick runs.
    for n in 0..5 {
        s.tick(&ingress, back + 30_000 + n * 400).await.unwrap();
    }
    assert_eq!(runs(&*store, every_minute.id).await.len(), 2);
    assert_eq!(next_of(&*store, daily.id).await, Some(ms("2025-01-14T06:00:00Z")));
}

#[tokio::test]
async fn one_shots_fire_once_and_are_done() {
    let (store, _db) = sqlite().await;
    let s = scheduler(store.clone());
    let ingress = Recorder::default();
    let on_time = put(&*store, &spec("remind", "in 20 minutes", "UTC", "stretch", "web:x"), "cli:local", None).await;
    let at = on_time.at_ms.unwrap();
    let mut late = spec("late", "in 20 minutes", "UTC", "too late", "web:x");
    late.missed = Missed::Skip;
    let late = put(&*store, &late, "cli:local", None).await;
    assert_eq!(s.tick(&ingress, at - 1).await.unwrap().fired, 0, "not yet");
    let report = s.tick(&ingress, at + 10 * MIN).await.unwrap();
    assert_eq!((report.fired, report.skipped), (1, 1), "run_once within grace; skip does not run late");
    assert_eq!(runs(&*store, on_time.id).await, [(at, RunKind::CatchUp)]);
    assert!(runs(&*store, late.id).await.is_empty());
    for id in [on_time.id, late.id] {
        assert_eq!(next_of(&*store, id).await, None, "done");
    }
    assert_eq!(s.tick(&ingress, at + 20 * MIN).await.unwrap().due, 0);
    assert_eq!(ingress.ids(), [format!("schedule:{}:{at}", on_time.id)]);
}

#[tokio::test]
async fn daylight_saving_changes_fire_once() {
    let (store, _db) = sqlite().await;
    let s = scheduler(store.clone());
    let ingress = Recorder::default();
    // New York, 2025-11-02: 01:30 happens twice (05:30Z EDT and 06:30Z EST).
    let fall = put(&*store, &spec("fall", "30 1 * * *", "America/New_York", "p", "web:x"), "cli:local", None).await;
    set_next(&*store, fall.id, ms("2025-11-02T05:30:00Z")).await;
    // New York, 2025-03-09: 02:30 does not exist; it runs once at 03:00 EDT (07:00Z).
    let spring = put(&*store, &spec("spring", "30 2 * * *", "America/New_York", "p", "web:x"), "cli:local", None).await;
    let gap_run = butler::schedule::cron::next_after(
        &butler::schedule::cron::parse_cron("30 2 * * *").unwrap(),
        butler::schedule::cron::parse_tz("America/New_York").unwrap(),
        ms("2025-03-08T12:00:00Z"),
    );
    assert_eq!(gap_run, Some(ms("2025-03-09T07:00:00Z")));
    set_next(&*store, spring.id, gap_run.unwrap()).await;
    for now in ["2025-03-09T07:00:05Z", "2025-03-09T07:30:05Z", "2025-11-02T05:30:05Z", "2025-11-02T06:30:05Z"] {
        s.tick(&ingress, ms(now)).await.unwrap();
    }
    assert_eq!(runs(&*store, spring.id).await, [(ms("2025-03-09T07:00:00Z"), RunKind::Scheduled)]);
    assert_eq!(
        runs(&*store, fall.id).await,
        [(ms("2025-11-02T05:30:00Z"), RunKind::Scheduled)],
        "not again at 01:30 EST"
    );
    assert_eq!(next_of(&*store, fall.id).await, Some(ms("2025-11-03T06:30:00Z")));
}

#[tokio::test]
async fn concurrent_ticks_claim_each_fire_time_once() {
    let db = PgTestDb::create().await;
    let store = butler::store::connect(&db.url, 8).await.unwrap();
    store.migrate().await.unwrap();
    let now = butler::store::now_ms();
    let mut ids = Vec::new();
    for i in 0..40 {
        let job = put(&*store, &spec(&format!("j{i}"), "* * * * *", "UTC", "p", "web:x"), "cli:local", None).await;
        set_next(&*store, job.id, now - (i % 7) * 1_000).await;
        ids.push(job.id);
    }
    // Three schedulers (as three processes would) on their own connections, ticking together.
    let mut tasks = Vec::new();
    let ingress = Arc::new(Recorder::default());
    for _ in 0..3 {
        let store = butler::store::connect(&db.url, 4).await.unwrap();
        let ingress = ingress.clone();
        tasks.push(tokio::spawn(async move {
            let s = scheduler(store);
            let mut fired = 0;
            for n in 0..4 {
                fired += s.tick(&*ingress, now + n * 100).await.unwrap().fired;
            }
            fired
        }));
    }
    let mut fired = 0;
    for t in tasks {
        fired += t.await.unwrap();
    }
    assert_eq!(fired, 40, "each job fired by exactly one scheduler");
    assert_eq!(ingress.ids().len(), 40, "no event handed over twice");
    for id in ids {
        assert_eq!(runs(&*store, id).await.len(), 1, "job #{id}");
    }
    store.close().await;
}

#[tokio::test]
async fn a_run_whose_claimer_died_is_handed_over() {
    let (store, _db) = sqlite().await;
    let job = put(&*store, &spec("j", "0 8 * * *", "UTC", "p", "web:x"), "cli:local", None).await;
    // A process claimed the run, then died before the event reached the inbox.
    let fire = job.next_fire_ms.unwrap();
    let event_id = format!("schedule:{}:{fire}", job.id);
    let claim = butler::store::RunClaim {
        schedule_id: job.id,
        fire_at_ms: fire,
        kind: RunKind::Scheduled,
        outbox_key: format!("{event_id}:reply"),
        event_id: event_id.clone(),
        started_ms: butler::store::now_ms(),
        advance: Some((fire, Some(fire + 24 * HOUR))),
    };
    store.schedule_claim(&claim).await.unwrap().expect("claimed");
    let s = scheduler(store.clone());
    let ingress = Recorder::default();
    assert_eq!(s.recover(&ingress, butler::store::now_ms()).await.unwrap(), 0, "too recent: its claimer may be alive");
    let later = butler::store::now_ms() + butler::schedule::tick::RECOVER_AFTER_MS + 1_000;
    assert_eq!(s.recover(&ingress, later).await.unwrap(), 1);
    assert_eq!(ingress.ids(), std::slice::from_ref(&event_id));
    // Once in the inbox it is no longer anyone's to hand over.
    let inbox = butler::ingress::InboxIngress::new(store.clone(), Arc::new(tokio::sync::Notify::new()));
    s.recover(&inbox, later).await.unwrap();
    let run = store.schedule_runs(&RunQuery::Of { schedule_id: job.id, limit: 1 }).await.unwrap().pop().unwrap();
    assert_eq!(run.status, RunStatus::Queued);
    assert_eq!(s.recover(&inbox, later).await.unwrap(), 0);
    assert!(store.inbox_get(&event_id).await.unwrap().is_some());
}
