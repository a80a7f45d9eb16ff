//! A per-source token bucket: `per_minute` requests may arrive at once, and the bucket refills
//! at `per_minute / 60` tokens a second. In memory, per process (each replica limits on its own).
//!
//! It must never sleep or block: a request over the limit is answered at once with the wait.

use std::sync::Mutex;
use std::time::{Duration, Instant};

pub struct Bucket {
    capacity: f64,
    per_sec: f64,
    state: Mutex<(f64, Instant)>,
}

impl Bucket {
    /// A full bucket for `per_minute` requests a minute (at least 1).
    pub fn new(per_minute: u32) -> Self {
        let capacity = f64::from(per_minute.max(1));
        Self { capacity, per_sec: capacity / 60.0, state: Mutex::new((capacity, Instant::now())) }
    }

    /// Takes one token at `now`, or says how long until one is available.
    pub fn take(&self, now: Instant) -> Result<(), Duration> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let (tokens, last) = *state;
        let elapsed = now.saturating_duration_since(last).as_secs_f64();
        let tokens = (tokens + elapsed * self.per_sec).min(self.capacity);
        // The epsilon absorbs rounding in `elapsed * per_sec` (2/60 * 30 is not quite 1).
        if tokens >= 1.0 - 1e-9 {
            *state = ((tokens - 1.0).max(0.0), now.max(last));
            Ok(())
        } else {
            *state = (tokens, now.max(last));
            Err(Duration::from_secs_f64((1.0 - tokens) / self.per_sec))
        }
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
}
