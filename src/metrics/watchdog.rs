//! The watchdog: work in flight (a turn, a delivery attempt) is registered while it runs, so
//! `/metrics` shows how much runs now, how long the oldest has run, and how much has run past
//! its bound (`butler_work_stuck`): something waiting on what will never answer. A fault test
//! reads it to prove that nothing is left hanging once the fault clears.
//!
//! Registering is a map insert under a std mutex, never held across an await; it must never
//! block a caller for longer than that, and never hold user content.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Work {
    /// A session's job: a turn (and its commit), a reset, a compaction.
    Turn,
    /// One attempt to hand an outbox row to its platform.
    Delivery,
}

impl Work {
    const ALL: [Work; 2] = [Work::Turn, Work::Delivery];

    fn name(self) -> &'static str {
        match self {
            Work::Turn => "turn",
            Work::Delivery => "delivery",
        }
    }

    /// Past this it is stuck: a turn is bounded by its model calls and tool time limits (15 min
    /// is far past any configured default), a delivery attempt by the platform client's
    /// timeouts (a minute at most).
    fn bound(self) -> Duration {
        match self {
            Work::Turn => Duration::from_secs(15 * 60),
            Work::Delivery => Duration::from_secs(3 * 60),
        }
    }
}

/// The registry of running work.
pub struct Watchdog {
    next: AtomicU64,
    live: Mutex<BTreeMap<u64, (Work, Instant)>>,
}

/// The process's watchdog.
pub static WATCHDOG: Watchdog = Watchdog { next: AtomicU64::new(0), live: Mutex::new(BTreeMap::new()) };

/// Registered work; dropping it (however the work ends: done, failed, cancelled, panicked)
/// takes it off the registry.
#[must_use = "the work is registered only while this lives"]
pub struct Watched<'a>(&'a Watchdog, u64);

impl Drop for Watched<'_> {
    fn drop(&mut self) {
        self.0.lock().remove(&self.1);
    }
}

impl Watchdog {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, (Work, Instant)>> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers `work` as running from now.
    pub fn watch(&self, work: Work) -> Watched<'_> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock().insert(id, (work, Instant::now()));
        Watched(self, id)
    }

    /// Per kind of work: how many run, how long the oldest has run, how many are past the bound.
    pub fn census(&self) -> Vec<(Work, usize, Duration, usize)> {
        let live = self.lock();
        Work::ALL
            .iter()
            .map(|&w| {
                let ages: Vec<Duration> = live.values().filter(|(k, _)| *k == w).map(|(_, t)| t.elapsed()).collect();
                let oldest = ages.iter().max().copied().unwrap_or_default();
                (w, ages.len(), oldest, ages.iter().filter(|a| **a > w.bound()).count())
            })
            .collect()
    }

    pub(super) fn render(&self, out: &mut String) {
        let census = self.census();
        let families = [
            ("butler_work_in_flight", "Turns and delivery attempts running now", 0),
            ("butler_work_oldest_seconds", "How long the oldest running one has run", 1),
            ("butler_work_stuck", "Running past their bound (turn 15 min, delivery 3 min): stuck", 2),
        ];
        for (name, help, which) in families {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
            for (w, n, oldest, stuck) in &census {
                let value = match which {
                    0 => n.to_string(),
                    1 => format!("{:.3}", oldest.as_secs_f64()),
                    _ => stuck.to_string(),
                };
                let _ = writeln!(out, "{name}{{work=\"{}\"}} {value}", w.name());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_is_counted_while_it_runs_and_past_its_bound_it_is_stuck() {
        let dog = Watchdog { next: AtomicU64::new(0), live: Mutex::new(BTreeMap::new()) };
        let turn = dog.watch(Work::Turn);
        let delivery = dog.watch(Work::Delivery);
        // One more turn that started long ago.
        let old = dog.watch(Work::Turn);
        dog.lock().get_mut(&old.1).unwrap().1 = Instant::now() - Duration::from_secs(16 * 60);
        let census = dog.census();
        assert_eq!(census[0].0, Work::Turn);
        assert_eq!((census[0].1, census[0].3), (2, 1), "two turns, one stuck");
        assert!(census[0].2 >= Duration::from_secs(16 * 60));
        assert_eq!((census[1].1, census[1].3), (1, 0));
        let mut text = String::new();
        dog.render(&mut text);
        assert!(text.contains("butler_work_stuck{work=\"turn\"} 1\n"), "{text}");
        assert!(text.contains("butler_work_in_flight{work=\"delivery\"} 1\n"), "{text}");
        drop((turn, delivery, old));
        assert!(dog.census().iter().all(|(_, n, _, stuck)| *n == 0 && *stuck == 0), "gone when they end");
    }
}
