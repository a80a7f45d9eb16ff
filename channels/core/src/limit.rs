//! Rate limits for channel endpoints, in memory and per process (each replica limits on its own):
//!
//! - [`Bucket`]: one token bucket; `per_minute` requests may arrive at once and it refills at
//!   `per_minute / 60` a second (a webhook source's limit on signed requests).
//! - [`Refusals`]: what a signed endpoint does with requests that fail verification (unsigned,
//!   forged, stale): a bucket per source address, so a flood from one address is answered 429,
//!   and one aggregated WARN line per address and interval instead of one per request.
//!
//! Nothing here may sleep or block: a request over a limit is answered at once with the wait.
//! A verified request never goes through [`Refusals`], so a shared or unknown address can never
//! make Butler refuse genuine platform traffic.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Tokens and when they were last counted.
#[derive(Clone, Copy)]
struct Level {
    tokens: f64,
    at: Instant,
}

impl Level {
    fn full(capacity: f64, now: Instant) -> Self {
        Self { tokens: capacity, at: now }
    }

    /// Takes one token at `now` (capacity and refill per second given), or the wait for one.
    fn take(&mut self, capacity: f64, per_sec: f64, now: Instant) -> Result<(), Duration> {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        let tokens = (self.tokens + elapsed * per_sec).min(capacity);
        self.at = now.max(self.at);
        // The epsilon absorbs rounding in `elapsed * per_sec` (2/60 * 30 is not quite 1).
        if tokens >= 1.0 - 1e-9 {
            self.tokens = (tokens - 1.0).max(0.0);
            Ok(())
        } else {
            self.tokens = tokens;
            Err(Duration::from_secs_f64((1.0 - tokens) / per_sec))
        }
    }
}

/// A token bucket for `per_minute` requests a minute.
pub struct Bucket {
    capacity: f64,
    per_sec: f64,
    level: Mutex<Level>,
}

impl Bucket {
    /// A full bucket for `per_minute` requests a minute (at least 1).
    pub fn new(per_minute: u32) -> Self {
        let capacity = f64::from(per_minute.max(1));
        Self { capacity, per_sec: capacity / 60.0, level: Mutex::new(Level::full(capacity, Instant::now())) }
    }

    /// Takes one token at `now`, or says how long until one is available.
    pub fn take(&self, now: Instant) -> Result<(), Duration> {
        let mut level = self.level.lock().unwrap_or_else(|p| p.into_inner());
        level.take(self.capacity, self.per_sec, now)
    }
}

/// Whole seconds for a `Retry-After` header (at least 1).
pub fn retry_after_secs(wait: Duration) -> u64 {
    wait.as_secs_f64().ceil().max(1.0) as u64
}

/// Refused requests from one address a minute (a burst of this many, refilled evenly) before
/// the endpoints answer 429 instead of 401.
pub const REFUSALS_PER_MINUTE: u32 = 30;
/// At most one WARN line per address in this interval; the others are counted into the next.
pub const LOG_EVERY: Duration = Duration::from_secs(60);
/// Addresses remembered at most; past it idle ones are forgotten, then all share one slot.
const MAX_SOURCES: usize = 4096;
/// The slot of addresses that do not fit, and of requests without a known address.
pub const UNKNOWN_SOURCE: &str = "unknown";

struct Slot {
    level: Level,
    /// When this address's last WARN line was written (None: never).
    logged: Option<Instant>,
    /// Refusals since that line.
    unlogged: u64,
}

/// What to do with one refused request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// Over the address's limit: answer 429 with this wait instead of the usual 401.
    pub retry_after: Option<Duration>,
    /// Write the one WARN line now, reporting this many refusals from the address (this one
    /// and those not reported yet); None: counted, reported with a later line.
    pub log: Option<u64>,
}

/// Refused requests per source address: the limit and the log aggregation.
pub struct Refusals {
    capacity: f64,
    per_sec: f64,
    log_every: Duration,
    slots: Mutex<HashMap<String, Slot>>,
}

impl Default for Refusals {
    fn default() -> Self {
        Self::new(REFUSALS_PER_MINUTE, LOG_EVERY)
    }
}

impl Refusals {
    /// `per_minute` refusals an address may cause before 429s (at least 1); a WARN line per
    /// address at most every `log_every`.
    pub fn new(per_minute: u32, log_every: Duration) -> Self {
        let capacity = f64::from(per_minute.max(1));
        Self { capacity, per_sec: capacity / 60.0, log_every, slots: Mutex::new(HashMap::new()) }
    }

    /// Counts one refused request from `source` (an IP address, or [`UNKNOWN_SOURCE`]) at `now`.
    pub fn refuse(&self, source: &str, now: Instant) -> Refusal {
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        let key = if slots.contains_key(source) || self.make_room(&mut slots, now) { source } else { UNKNOWN_SOURCE };
        let capacity = self.capacity;
        let slot = slots.entry(key.to_string()).or_insert_with(|| Slot {
            level: Level::full(capacity, now),
            logged: None,
            unlogged: 0,
        });
        let retry_after = slot.level.take(self.capacity, self.per_sec, now).err();
        slot.unlogged += 1;
        let due = slot.logged.is_none_or(|at| now.saturating_duration_since(at) >= self.log_every);
        let log = due.then(|| {
            slot.logged = Some(now);
            std::mem::take(&mut slot.unlogged)
        });
        Refusal { retry_after, log }
    }

    /// Whether one more address fits, forgetting idle ones (bucket refilled, nothing to report)
    /// when the map is full.
    fn make_room(&self, slots: &mut HashMap<String, Slot>, now: Instant) -> bool {
        if slots.len() < MAX_SOURCES {
            return true;
        }
        let refill = Duration::from_secs_f64(self.capacity / self.per_sec);
        slots.retain(|key, s| {
            let idle = now.saturating_duration_since(s.level.at);
            key == UNKNOWN_SOURCE || s.unlogged > 0 || idle < refill.max(self.log_every)
        });
        slots.len() < MAX_SOURCES
    }
}

/// The key [`Refusals`] counts a request under: the peer's IP address (the port differs per
/// connection), or [`UNKNOWN_SOURCE`] when the server did not record one.
pub fn source_key(peer: Option<std::net::SocketAddr>) -> String {
    peer.map_or_else(|| UNKNOWN_SOURCE.to_string(), |a| a.ip().to_string())
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
    fn refusals_are_limited_and_logged_once_per_interval_per_address() {
        let r = Refusals::new(3, Duration::from_secs(60));
        let t0 = Instant::now();
        let secs = |s: u64| t0 + Duration::from_secs(s);
        // (source, at, over the limit, log line reporting n)
        let steps: &[(&str, Instant, bool, Option<u64>)] = &[
            ("10.0.0.1", t0, false, Some(1)),
            ("10.0.0.1", t0, false, None),
            ("10.0.0.1", t0, false, None),
            ("10.0.0.1", t0, true, None),
            ("10.0.0.2", t0, false, Some(1)),
            ("10.0.0.1", secs(30), false, None),
            ("10.0.0.1", secs(30), true, None),
            ("10.0.0.1", secs(60), false, Some(6)),
            ("10.0.0.1", secs(61), false, None),
            ("10.0.0.1", secs(61), true, None),
            ("10.0.0.2", secs(200), false, Some(1)),
        ];
        for (i, (source, at, limited, log)) in steps.iter().enumerate() {
            let got = r.refuse(source, *at);
            assert_eq!((got.retry_after.is_some(), got.log), (*limited, *log), "step {i}");
        }
        assert_eq!(source_key(None), UNKNOWN_SOURCE);
        assert_eq!(source_key(Some("192.0.2.7:5000".parse().unwrap())), "192.0.2.7");
    }

    #[test]
    fn the_address_map_is_bounded() {
        let r = Refusals::new(1, Duration::from_secs(60));
        let t0 = Instant::now();
        for i in 0..MAX_SOURCES + 10 {
            r.refuse(&format!("10.{}.{}.{}", i >> 16, (i >> 8) & 255, i & 255), t0);
        }
        assert!(r.slots.lock().unwrap().len() <= MAX_SOURCES + 1);
        // Much later the idle ones make room again.
        assert_eq!(r.refuse("192.0.2.1", t0 + Duration::from_secs(3600)).log, Some(1));
        assert!(r.slots.lock().unwrap().contains_key("192.0.2.1"));
    }
}
