//! `butler schedule` as an operator runs it: `next` previews fire times (RFC 3339 with the
//! zone's offset, one per line) without touching the database; `add`, `list`, `run-now` and
//! `remove` work on the store, with errors that say what to fix.

use crate::support::proc::Deployment;
use butler::store::{RunKind, RunQuery, RunStatus, ScheduleFilter, ScheduleSource};
use std::process::Output;

fn run(dep: &Deployment, args: &[&str]) -> Output {
    dep.command(args).output().expect("run butler")
}

fn out(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

#[test]
fn next_previews_fire_times_without_touching_the_database() {
    let dep = Deployment::new("");
    // (args after `schedule next`, expected stdout)
    let cases: &[(&[&str], &str)] = &[
        (
            &["0 8 * * 1-5", "--tz", "Europe/Berlin", "--after", "2025-03-28T12:00:00Z", "--count", "3"],
            "2025-03-31T08:00:00+02:00\n2025-04-01T08:00:00+02:00\n2025-04-02T08:00:00+02:00\n",
        ),
        // --after as a wall time in --tz; the 02:30 that does not exist runs at 03:00.
        (
            &["30 2 * * *", "--tz", "America/New_York", "--after", "2025-03-08 12:00", "--count", "2"],
            "2025-03-09T03:00:00-04:00\n2025-03-10T02:30:00-04:00\n",
        ),
        (
            &["30 1 * * *", "--tz", "America/New_York", "--after", "2025-11-01T12:00:00-04:00", "--count", "2"],
            "2025-11-02T01:30:00-04:00\n2025-11-03T01:30:00-05:00\n",
        ),
        // Default zone: UTC.
        (
            &["0 0 1 1 *", "--after", "2025-06-01T00:00:00Z", "--count", "2"],
            "2026-01-01T00:00:00+00:00\n2027-01-01T00:00:00+00:00\n",
        ),
        // Forms from other crons: Vixie/Quartz `0/15`, `29-L`, croniter's `L5` (last Friday).
        (
            &["0/15 * * * *", "--after", "2025-06-01T00:01:00Z", "--count", "2"],
            "2025-06-01T00:15:00+00:00\n2025-06-01T00:30:00+00:00\n",
        ),
        (&["0 9 29-L * *", "--after", "2025-02-01T00:00:00Z", "--count", "1"], "2025-03-29T09:00:00+00:00\n"),
        (&["0 9 * * L5", "--after", "2025-03-01T00:00:00Z", "--count", "1"], "2025-03-28T09:00:00+00:00\n"),
    ];
    for (args, want) in cases {
        let o = run(&dep, &[&["schedule", "next"], *args].concat());
        let (stdout, stderr) = out(&o);
        assert!(o.status.success(), "{args:?}: {stderr}");
        assert_eq!(stdout, *want, "{args:?}");
    }
    // Default --after: now, and five times.
    let o = run(&dep, &["schedule", "next", "*/10 * * * *"]);
    let lines: Vec<String> = out(&o).0.lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 5);
    let first = chrono::DateTime::parse_from_rfc3339(&lines[0]).unwrap().timestamp_millis();
    assert!(first > butler::store::now_ms() - 1_000 && first <= butler::store::now_ms() + 600_000, "{lines:?}");
    // Usage errors exit 2 and say what is wrong.
    let bad: &[(&[&str], &str)] = &[
        (&["0 8 * *"], "5-field"),
        (&["0 25 * * *"], "the hour field `25` has 25, which is out of range: hours are 0-23"),
        (&["0 8 * * MON-FRX"], "the day-of-week field `MON-FRX` has `FRX`, which is not a value"),
        (&["0 8 * * *", "--tz", "Mars/Base"], "IANA"),
        (&["0 8 * * *", "--after", "yesterday-ish"], "--after"),
        (&["0 8 * * *", "--count", "0"], "--count"),
    ];
    for (args, want) in bad {
        let o = run(&dep, &[&["schedule", "next"], *args].concat());
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(out(&o).1.contains(want), "{args:?}: {}", out(&o).1);
    }
    assert!(!dep.dir.path().join("butler.db").exists(), "no database was opened");
}

#[tokio::test]
async fn add_list_run_now_and_remove_on_the_store() {
    let dep = Deployment::new("");
    let add = |extra: &[&str]| {
        let base = ["schedule", "add", "--prompt", "Standup notes, please.", "--target", "web:team"];
        run(&dep, &[&base[..], extra].concat())
    };
    let o = add(&["--name", "standup", "--cron", "0 9 * * 1-5", "--tz", "Europe/Berlin"]);
    let (stdout, stderr) = out(&o);
    assert!(o.status.success(), "{stderr}");
    assert!(stdout.starts_with("added job #1 `standup` (every `0 9 * * 1-5` (Europe/Berlin)), next 20"), "{stdout}");
    assert!(stdout.trim_end().ends_with("+01:00") || stdout.trim_end().ends_with("+02:00"), "{stdout}");
    assert!(add(&["--name", "remind", "--at", "in 2 hours"]).status.success());
    let refusals: &[(&[&str], i32, &str)] = &[
        (&["--name", "standup", "--cron", "0 9 * * *"], 1, "exists already"),
        (&["--name", "x", "--cron", "0 9 * *"], 2, "5-field"),
        (&["--name", "x", "--at", "2001-01-01 08:00"], 2, "in the past"),
        (&["--name", "x", "--cron", "0 9 * * *", "--owner", "web:stranger"], 1, "may not use Butler"),
        (&["--name", "x", "--cron", "0 9 * * *", "--mode", "loud"], 2, "--mode"),
    ];
    for (args, code, want) in refusals {
        let o = add(args);
        assert_eq!(o.status.code(), Some(*code), "{args:?}");
        assert!(out(&o).1.contains(want), "{args:?}: {}", out(&o).1);
    }

    // A config job, as `butler serve` stores it.
    let store = butler::store::connect(&dep.db_url(), 1).await.unwrap();
    let owner = butler::schedule::JobOwner { identity: "cli:local".parse().unwrap(), user_id: None };
    let cfg_job = butler::schedule::jobs::build(
        &crate::spec("from-config", "0 7 * * *", "UTC", "p", "web:team"),
        &owner,
        ScheduleSource::Config,
        butler::store::now_ms(),
    )
    .unwrap();
    let cfg_job = store.schedule_put(&cfg_job).await.unwrap();

    let o = run(&dep, &["schedule", "list"]);
    let listed = out(&o).0;
    assert!(listed.contains("#1  standup  [cli]  owner cli:local  every `0 9 * * 1-5` (Europe/Berlin)  -> web:team  mode=always missed=run_once grace=3600s  next 20"), "{listed}");
    assert!(listed.contains("#2  remind  [cli]") && listed.contains("from-config  [config]"), "{listed}");

    let o = run(&dep, &["schedule", "run-now", "1"]);
    let (stdout, stderr) = out(&o);
    assert!(o.status.success(), "{stderr}");
    assert!(stdout.starts_with("queued run of job #1 as event schedule:1:"), "{stdout}");
    let runs = store.schedule_runs(&RunQuery::Of { schedule_id: 1, limit: 10 }).await.unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(
        (runs[0].kind, runs[0].status),
        (RunKind::Manual, RunStatus::Queued),
        "in the inbox for a running Butler"
    );
    assert!(store.inbox_get(&runs[0].event_id).await.unwrap().is_some());
    assert!(run(&dep, &["schedule", "list"]).status.success());
    assert!(out(&run(&dep, &["schedule", "list"])).0.contains(" manual: queued  started "));

    let o = run(&dep, &["schedule", "remove", "1"]);
    assert!(o.status.success(), "{}", out(&o).1);
    assert!(store.schedules_list(&ScheduleFilter::Id(1)).await.unwrap().is_empty());
    let gone: &[(&str, &str)] = &[("1", "no job #1"), ("999", "no job #999")];
    for (id, want) in gone {
        let o = run(&dep, &["schedule", "remove", id]);
        assert_eq!(o.status.code(), Some(1));
        assert!(out(&o).1.contains(want), "{}", out(&o).1);
    }
    let o = run(&dep, &["schedule", "remove", &cfg_job.id.to_string()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(out(&o).1.contains("comes from [[schedules]] in the config file"), "{}", out(&o).1);
    let o = run(&dep, &["schedule", "run-now", "999"]);
    assert_eq!(o.status.code(), Some(1));
    store.close().await;
}
