//! The missed-run policy: for a job that is due, which fire time (if any) runs now, and when it
//! fires next. A fire time is on time for [`ON_TIME_MS`] (a slow tick is not downtime); later
//! than that it was missed: `missed = "skip"` skips it, `missed = "run_once"` runs it once if it
//! is within the job's grace period. However many fire times an outage swallowed, only the
//! latest is considered, so a job never runs more than once per tick and never catches up in a
//! storm. Pure functions: no clock, no store.

use super::cron;
use crate::config::Missed;
use crate::store::{RunKind, ScheduleRow};
use chrono_tz::Tz;
use croner::Cron;

/// How late a fire time may start and still count as on time (not missed).
pub const ON_TIME_MS: i64 = 60_000;

/// What a due job does now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The fire time to run, and why.
    pub run: Option<(i64, RunKind)>,
    /// The next fire time after this one (`None`: the job is done).
    pub next: Option<i64>,
}

/// The plan for `row` (with its parsed cron and zone) at `now_ms`; `None` when it is not due.
pub fn plan(row: &ScheduleRow, cron: Option<&Cron>, tz: Tz, now_ms: i64) -> Option<Plan> {
    let due = row.next_fire_ms.filter(|d| *d <= now_ms)?;
    let (latest, next) = match cron {
        Some(c) => {
            // The stored time is a fire time; a later one may have passed meanwhile (downtime).
            let latest = cron::latest_until(c, tz, now_ms).filter(|l| *l >= due).unwrap_or(due);
            let next =
                cron::next_after(c, tz, latest).filter(|n| *n > now_ms).or_else(|| cron::next_after(c, tz, now_ms));
            (latest, next)
        }
        None => (due, None),
    };
    let late = now_ms - latest;
    let on_time = late <= ON_TIME_MS;
    let catch_up = row.missed == Missed::RunOnce && late <= row.grace_ms;
    let run = match (on_time, catch_up) {
        (true, _) => Some((latest, RunKind::Scheduled)),
        (false, true) => Some((latest, RunKind::CatchUp)),
        (false, false) => None,
    };
    Some(Plan { run, next })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ScheduleMode;
    use crate::store::ScheduleSource;

    const MIN: i64 = 60_000;
    const HOUR: i64 = 60 * MIN;

    fn row(cron: Option<&str>, at: Option<i64>, next: i64, missed: Missed, grace_ms: i64) -> ScheduleRow {
        ScheduleRow {
            id: 1,
            scope: "config".into(),
            name: "job".into(),
            source: ScheduleSource::Config,
            owner: "cli:local".into(),
            owner_user: None,
            cron: cron.map(str::to_string),
            at_ms: at,
            tz: "UTC".into(),
            prompt: "p".into(),
            target: "web:t".into(),
            mode: ScheduleMode::Always,
            missed,
            grace_ms,
            paused: false,
            next_fire_ms: Some(next),
            created_ms: 0,
            updated_ms: 0,
        }
    }

    #[test]
    fn missed_policy_table() {
        use Missed::*;
        use RunKind::*;
        let t0 = 1_735_689_600_000; // 2025-01-01T00:00:00Z, a Wednesday
        let every_min = cron::parse_cron("* * * * *").unwrap();
        let hourly = cron::parse_cron("0 * * * *").unwrap();
        // (cron, stored next fire, now, policy, grace, want run, want next)
        type Case<'a> = (&'a croner::Cron, i64, i64, Missed, i64, Option<(i64, RunKind)>, i64);
        let cases: &[Case] = &[
            // On time: runs whatever the policy.
            (&hourly, t0, t0 + 500, Skip, 0, Some((t0, Scheduled)), t0 + HOUR),
            (&hourly, t0, t0 + 59_000, RunOnce, 0, Some((t0, Scheduled)), t0 + HOUR),
            // Down 10 minutes across one fire time.
            (&hourly, t0, t0 + 10 * MIN, Skip, HOUR, None, t0 + HOUR),
            (&hourly, t0, t0 + 10 * MIN, RunOnce, HOUR, Some((t0, CatchUp)), t0 + HOUR),
            (&hourly, t0, t0 + 10 * MIN, RunOnce, 5 * MIN, None, t0 + HOUR),
            // Down a day: 24 fire times missed, at most the latest runs (once).
            (&hourly, t0, t0 + 24 * HOUR + 5 * MIN, RunOnce, HOUR, Some((t0 + 24 * HOUR, CatchUp)), t0 + 25 * HOUR),
            (&hourly, t0, t0 + 24 * HOUR + 5 * MIN, Skip, HOUR, None, t0 + 25 * HOUR),
            (&hourly, t0, t0 + 24 * HOUR + 90 * MIN, RunOnce, HOUR, Some((t0 + 25 * HOUR, CatchUp)), t0 + 26 * HOUR),
            (&hourly, t0, t0 + 24 * HOUR + 90 * MIN, RunOnce, 20 * MIN, None, t0 + 26 * HOUR),
            // Every minute, down a week: the latest (on time) runs, the other 10,079 never do.
            (
                &every_min,
                t0,
                t0 + 7 * 24 * HOUR + 30_000,
                Skip,
                0,
                Some((t0 + 7 * 24 * HOUR, Scheduled)),
                t0 + 7 * 24 * HOUR + MIN,
            ),
        ];
        for (i, (c, next, now, missed, grace, want_run, want_next)) in cases.iter().enumerate() {
            let r = row(Some("x"), None, *next, *missed, *grace);
            let p = plan(&r, Some(c), chrono_tz::UTC, *now).unwrap();
            assert_eq!(p.run, *want_run, "case {i}");
            assert_eq!(p.next, Some(*want_next), "case {i}");
        }
    }

    #[test]
    fn one_shots_run_once_then_are_done() {
        let at = 1_735_689_600_000;
        let on_time = plan(&row(None, Some(at), at, Missed::Skip, 0), None, chrono_tz::UTC, at + 1_000).unwrap();
        assert_eq!(on_time, Plan { run: Some((at, RunKind::Scheduled)), next: None });
        let late = plan(&row(None, Some(at), at, Missed::RunOnce, HOUR), None, chrono_tz::UTC, at + 2 * HOUR).unwrap();
        assert_eq!(late, Plan { run: None, next: None });
        assert!(plan(&row(None, Some(at), at, Missed::RunOnce, HOUR), None, chrono_tz::UTC, at - 1).is_none());
    }
}
