//! The one rate arithmetic of Butler's limits: [`Rate`] (one token every `every`, at most
//! `burst` at once) and [`Cell`], the state of one limited key as GCRA keeps it (the
//! theoretical arrival time of the next token) plus a hold ("nothing before T", a platform's
//! `Retry-After`). GCRA is a token bucket kept as one timestamp, which is what lets the Redis
//! gate keep the same state in one hash field. [`Bucket`] is a single cell behind a lock, for
//! limits that are per process by design (a tool's own quota).
//!
//! Nothing here may sleep, block or allocate: callers get the wait and decide what it means.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One token every `every`, at most `burst` at once (a burst of `burst`, refilled evenly).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rate {
    pub every: Duration,
    pub burst: u32,
}

impl Rate {
    /// `n` a minute, all of them at once if they come at once (at least 1).
    pub fn per_minute(n: u32) -> Self {
        let n = n.max(1);
        Self { every: Duration::from_secs(60) / n, burst: n }
    }

    /// One at a time, at least `every` apart.
    pub fn spaced(every: Duration) -> Self {
        Self { every, burst: 1 }
    }

    /// How far ahead of the steady pace a key may run (GCRA's tolerance): `(burst - 1) * every`.
    pub fn tolerance(self) -> Duration {
        self.every.saturating_mul(self.burst.max(1) - 1)
    }
}

/// The state of one limited key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cell {
    /// When the key is back at the steady pace (GCRA's theoretical arrival time).
    tat: Option<Instant>,
    /// Nothing is given out before this (a platform asked to wait).
    hold: Option<Instant>,
}

impl Cell {
    /// Reserves the next token at `now`: `Ok(wait)`, the token is the caller's from `now + wait`
    /// on (zero: at once); `Err(wait)` when that is more than `max_wait` away (nothing taken).
    /// Reservations are handed out in call order, so waiting callers never race each other.
    pub fn reserve(&mut self, rate: Rate, now: Instant, max_wait: Duration) -> Result<Duration, Duration> {
        let start = self.hold.map_or(now, |h| h.max(now));
        let tat = self.tat.map_or(start, |t| t.max(start));
        let slot = tat.checked_sub(rate.tolerance()).map_or(start, |s| s.max(start));
        let wait = slot.saturating_duration_since(now);
        if wait > max_wait {
            return Err(wait);
        }
        self.tat = Some(tat + rate.every);
        Ok(wait)
    }

    /// Nothing goes out before `until` (a later hold wins; a shorter one never shortens it).
    pub fn hold(&mut self, until: Instant) {
        self.hold = Some(self.hold.map_or(until, |h| h.max(until)));
    }

    /// How long the hold still lasts at `now`.
    pub fn held(&self, now: Instant) -> Option<Duration> {
        self.hold.and_then(|h| h.checked_duration_since(now)).filter(|d| !d.is_zero())
    }

    /// From when on this cell is the same as a fresh one (its state can be forgotten).
    pub fn idle_from(&self) -> Option<Instant> {
        match (self.tat, self.hold) {
            (Some(t), Some(h)) => Some(t.max(h)),
            (t, h) => t.or(h),
        }
    }
}

/// A token bucket for `per_minute` requests a minute, in this process only.
pub struct Bucket {
    rate: Rate,
    cell: Mutex<Cell>,
}

impl Bucket {
    /// A full bucket for `per_minute` requests a minute (at least 1).
    pub fn new(per_minute: u32) -> Self {
        Self { rate: Rate::per_minute(per_minute), cell: Mutex::new(Cell::default()) }
    }

    /// Takes one token at `now`, or says how long until one is available.
    pub fn take(&self, now: Instant) -> Result<(), Duration> {
        let mut cell = self.cell.lock().unwrap_or_else(|p| p.into_inner());
        cell.reserve(self.rate, now, Duration::ZERO).map(|_| ())
    }
}

/// Whole seconds for a `Retry-After` header (at least 1).
pub fn retry_after_secs(wait: Duration) -> u64 {
    wait.as_secs_f64().ceil().max(1.0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_then_refill() {
        let b = Bucket::new(60);
        let t0 = Instant::now();
        for i in 0..60 {
            assert!(b.take(t0).is_ok(), "request {i} of the burst");
        }
        let wait = b.take(t0).unwrap_err();
        assert_eq!(retry_after_secs(wait), 1);
        assert!(b.take(t0 + Duration::from_millis(500)).is_err());
        assert!(b.take(t0 + Duration::from_millis(1001)).is_ok());
        assert!(b.take(t0 + Duration::from_millis(1002)).is_err());
        // Never more than the capacity, however long it was idle.
        let later = t0 + Duration::from_secs(3600);
        for _ in 0..60 {
            assert!(b.take(later).is_ok());
        }
        assert!(b.take(later).is_err());
    }

    #[test]
    fn slow_sources_wait_longer() {
        let b = Bucket::new(2);
        let t0 = Instant::now();
        assert!(b.take(t0).is_ok() && b.take(t0).is_ok());
        assert_eq!(retry_after_secs(b.take(t0).unwrap_err()), 30);
        assert!(b.take(t0 + Duration::from_secs(30)).is_ok());
        assert_eq!(retry_after_secs(Duration::from_millis(1)), 1);
    }

    #[test]
    fn reservations_queue_in_order_and_holds_push_them_back() {
        let t0 = Instant::now();
        let ms = |n: u64| Duration::from_millis(n);
        let spaced = Rate::spaced(ms(1000));
        let mut c = Cell::default();
        // (hold for, reserve at, max wait, expected)
        type Step = (Option<u64>, u64, u64, Result<u64, u64>);
        let steps: &[Step] = &[
            (None, 0, 10_000, Ok(0)),
            (None, 0, 10_000, Ok(1000)),
            (None, 0, 10_000, Ok(2000)),
            (None, 0, 500, Err(3000)),
            (Some(5000), 0, 4000, Err(5000)),
            (None, 0, 10_000, Ok(5000)),
            (None, 7000, 0, Ok(0)),
            (None, 7000, 0, Err(1000)),
        ];
        for (i, (hold, at, max, want)) in steps.iter().enumerate() {
            if let Some(h) = hold {
                c.hold(t0 + ms(*h));
            }
            let got = c
                .reserve(spaced, t0 + ms(*at), ms(*max))
                .map(|d| d.as_millis() as u64)
                .map_err(|d| d.as_millis() as u64);
            assert_eq!(got, *want, "step {i}");
        }
        assert_eq!(c.held(t0 + ms(4000)), Some(ms(1000)));
        assert_eq!(c.held(t0 + ms(5000)), None);
        c.hold(t0 + ms(100));
        assert_eq!(c.held(t0), Some(ms(5000)), "a shorter hold never shortens a longer one");
        assert_eq!(c.idle_from(), Some(t0 + ms(8000)));
        assert_eq!(Rate::per_minute(30).tolerance(), Duration::from_secs(58));
        assert_eq!(Rate::per_minute(0), Rate { every: Duration::from_secs(60), burst: 1 });
    }
}
