//! What the soak watches in the `butler serve` process, and the slopes it reports: from /proc,
//! resident memory (VmRSS, and RssAnon: the heap, without the file pages the kernel may drop),
//! threads and open files; the database connections (the descriptors open on the SQLite file:
//! each connection holds one) and the size of its WAL file; from /metrics, the session actors
//! in memory, the turns and delivery attempts running now (`butler_work_in_flight`) and the
//! inbox backlog. Butler has no gauge of tokio tasks: every long-lived task it spawns belongs
//! to a session actor, a turn or a delivery (ARCHITECTURE.md: every spawned task is tracked),
//! so those gauges and the thread count stand for them.

use crate::support::bench::proc_mib;
use std::path::PathBuf;

/// The series, in the order of [`Sample::values`] and [`SERIES`].
pub const SERIES: [&str; 9] =
    ["rss_mib", "anon_mib", "fds", "threads", "db_conns", "wal_mib", "sessions", "in_flight", "inbox_pending"];

/// One look at the process, `t` seconds into the run.
#[derive(Clone, Debug)]
pub struct Sample {
    pub t: f64,
    pub values: [f64; SERIES.len()],
}

pub struct Watch {
    pub pid: u32,
    pub db: PathBuf,
}

/// The value of the metric line that starts with `name` (labels included) in a /metrics text.
pub fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.strip_prefix(name).filter(|rest| rest.starts_with(' ')))
        .and_then(|v| v.trim().parse().ok())
}

/// The sum of every line of metric family `family` whose labels contain all of `labels`.
pub fn metric_sum(text: &str, family: &str, labels: &[&str]) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(&format!("{family}{{")))
        .filter(|l| labels.iter().all(|want| l.contains(want)))
        .filter_map(|l| l.rsplit_once(' ').and_then(|(_, v)| v.parse::<f64>().ok()))
        .sum()
}

impl Watch {
    /// Open descriptors: all, and those on the database file itself (one per connection).
    fn fds(&self) -> (usize, usize) {
        let Ok(dir) = std::fs::read_dir(format!("/proc/{}/fd", self.pid)) else { return (0, 0) };
        let (mut all, mut db) = (0, 0);
        for entry in dir.flatten() {
            all += 1;
            if std::fs::read_link(entry.path()).is_ok_and(|target| target == self.db) {
                db += 1;
            }
        }
        (all, db)
    }

    fn threads(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid)).unwrap_or_default();
        status.lines().find_map(|l| l.strip_prefix("Threads:")).and_then(|v| v.trim().parse().ok()).unwrap_or(0.0)
    }

    fn wal_mib(&self) -> f64 {
        std::fs::metadata(format!("{}-wal", self.db.display())).map_or(0.0, |m| m.len() as f64 / (1024.0 * 1024.0))
    }

    /// A sample now; `metrics` is the /metrics text just read (empty when it did not answer).
    pub fn sample(&self, t: f64, metrics: &str) -> Sample {
        let (fds, db) = self.fds();
        let gauge = |name: &str| metric(metrics, name).unwrap_or(f64::NAN);
        let in_flight = metric_sum(metrics, "butler_work_in_flight", &[]);
        Sample {
            t,
            values: [
                proc_mib(self.pid, "VmRSS:"),
                proc_mib(self.pid, "RssAnon:"),
                fds as f64,
                self.threads(),
                db as f64,
                self.wal_mib(),
                gauge("butler_sessions_live"),
                in_flight,
                gauge("butler_inbox_pending"),
            ],
        }
    }
}

/// One series of `samples`, by its name in [`SERIES`].
pub fn series(samples: &[Sample], name: &str) -> Vec<(f64, f64)> {
    let i = SERIES.iter().position(|s| *s == name).expect("a known series");
    samples.iter().map(|s| (s.t, s.values[i])).collect()
}

/// A bound on the slope of one series per hour.
pub struct Bound {
    pub series: &'static str,
    /// Largest slope per hour a healthy process shows.
    pub max: f64,
}

/// The bounds, and why (see the bench's doc comment for the reasoning in full).
pub const BOUNDS: [Bound; 8] = [
    // A leak of 1 MiB a minute is 60 MiB/h; the heap of a healthy process settles within the
    // warm-up and wanders by a few MiB, which over a 20-minute window is under 20 MiB/h.
    Bound { series: "rss_mib", max: 24.0 },
    Bound { series: "anon_mib", max: 24.0 },
    // Sockets and files come and go with each turn; one leaked per minute is 60/h.
    Bound { series: "fds", max: 30.0 },
    // The blocking pool grows and shrinks with bursts; a thread leaked per minute is 60/h.
    Bound { series: "threads", max: 20.0 },
    // The pools are bounded (one writer, `max_connections` readers): any lasting growth is a leak.
    Bound { series: "db_conns", max: 6.0 },
    // The WAL is reused after each checkpoint; growth means checkpoints starve.
    Bound { series: "wal_mib", max: 16.0 },
    // Live actors follow the load and retire after `session_idle_secs`.
    Bound { series: "sessions", max: 60.0 },
    // Work in flight is a handful at any time; a turn or delivery left behind each minute is 60/h.
    Bound { series: "in_flight", max: 20.0 },
];
