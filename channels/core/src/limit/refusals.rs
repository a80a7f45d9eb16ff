//! What a signed endpoint does with requests that fail verification (unsigned, forged, stale):
//! a limit per source address kept in the [`Gate`] (so with several replicas a flood from one
//! address is counted once, wherever it lands), answered 429 once it is spent, and one
//! aggregated WARN line per address and interval instead of one per request (the log lines are
//! this replica's own: each replica reports what it refused).
//!
//! A verified request never comes here, so a shared or unknown address can never make Butler
//! refuse genuine platform traffic. Nothing here may sleep or block.

use super::{Gate, Rate};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

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
    /// The last refusal from this address.
    seen: Instant,
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

/// Refused requests per source address of one endpoint: the limit and the log aggregation.
pub struct Refusals {
    /// The endpoint (`hook`, `slack`, ...): each has its own limit per address.
    scope: &'static str,
    rate: Rate,
    log_every: Duration,
    gate: Gate,
    slots: Mutex<HashMap<String, Slot>>,
}

impl Refusals {
    /// The usual limits ([`REFUSALS_PER_MINUTE`], [`LOG_EVERY`]) for the endpoint `scope`.
    pub fn new(scope: &'static str, gate: Gate) -> Self {
        Self::with_limits(scope, gate, REFUSALS_PER_MINUTE, LOG_EVERY)
    }

    /// `per_minute` refusals an address may cause before 429s (at least 1); a WARN line per
    /// address at most every `log_every`.
    pub fn with_limits(scope: &'static str, gate: Gate, per_minute: u32, log_every: Duration) -> Self {
        Self { scope, rate: Rate::per_minute(per_minute), log_every, gate, slots: Mutex::new(HashMap::new()) }
    }

    /// Counts one refused request from `source` (an IP address, or [`UNKNOWN_SOURCE`]).
    pub async fn refuse(&self, source: &str) -> Refusal {
        let now = tokio::time::Instant::now().into_std();
        let (fits, log) = self.note(source, now);
        let slot = if fits { source } else { UNKNOWN_SOURCE };
        let key = format!("refused:{}:{slot}", self.scope);
        let retry_after = self.gate.take(&key, self.rate).await.err();
        Refusal { retry_after, log }
    }

    /// Counts the refusal for the log: whether `source` has a slot of its own, and the WARN
    /// line's count when one is due.
    fn note(&self, source: &str, now: Instant) -> (bool, Option<u64>) {
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        let fits = slots.contains_key(source) || self.make_room(&mut slots, now);
        let key = if fits { source } else { UNKNOWN_SOURCE };
        let slot = match slots.get_mut(key) {
            Some(s) => s,
            None => slots.entry(key.to_string()).or_insert(Slot { seen: now, logged: None, unlogged: 0 }),
        };
        slot.seen = now;
        slot.unlogged += 1;
        let due = slot.logged.is_none_or(|at| now.saturating_duration_since(at) >= self.log_every);
        let log = due.then(|| {
            slot.logged = Some(now);
            std::mem::take(&mut slot.unlogged)
        });
        (fits, log)
    }

    /// Whether one more address fits, forgetting idle ones (limit refilled, nothing to report)
    /// when the map is full.
    fn make_room(&self, slots: &mut HashMap<String, Slot>, now: Instant) -> bool {
        if slots.len() < MAX_SOURCES {
            return true;
        }
        let refill = self.rate.every.saturating_mul(self.rate.burst);
        slots.retain(|key, s| {
            let idle = now.saturating_duration_since(s.seen);
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

    #[tokio::test(start_paused = true)]
    async fn refusals_are_limited_and_logged_once_per_interval_per_address() {
        let r = Refusals::with_limits("test", Gate::local(), 3, Duration::from_secs(60));
        // (source, at second, over the limit, log line reporting n)
        let steps: &[(&str, u64, bool, Option<u64>)] = &[
            ("10.0.0.1", 0, false, Some(1)),
            ("10.0.0.1", 0, false, None),
            ("10.0.0.1", 0, false, None),
            ("10.0.0.1", 0, true, None),
            ("10.0.0.2", 0, false, Some(1)),
            ("10.0.0.1", 30, false, None),
            ("10.0.0.1", 30, true, None),
            ("10.0.0.1", 60, false, Some(6)),
            ("10.0.0.1", 61, false, None),
            ("10.0.0.1", 61, true, None),
            ("10.0.0.2", 200, false, Some(1)),
        ];
        let t0 = tokio::time::Instant::now();
        for (i, (source, at, limited, log)) in steps.iter().enumerate() {
            tokio::time::advance(
                (t0 + Duration::from_secs(*at)).saturating_duration_since(tokio::time::Instant::now()),
            )
            .await;
            let got = r.refuse(source).await;
            assert_eq!((got.retry_after.is_some(), got.log), (*limited, *log), "step {i}");
        }
        assert_eq!(source_key(None), UNKNOWN_SOURCE);
        assert_eq!(source_key(Some("192.0.2.7:5000".parse().unwrap())), "192.0.2.7");
    }

    #[tokio::test(start_paused = true)]
    async fn the_address_map_is_bounded() {
        let r = Refusals::with_limits("test", Gate::local(), 1, Duration::from_secs(60));
        for i in 0..MAX_SOURCES + 10 {
            r.refuse(&format!("10.{}.{}.{}", i >> 16, (i >> 8) & 255, i & 255)).await;
        }
        assert!(r.slots.lock().unwrap().len() <= MAX_SOURCES + 1);
        // Much later the idle ones make room again.
        tokio::time::advance(Duration::from_secs(3600)).await;
        assert_eq!(r.refuse("192.0.2.1").await.log, Some(1));
        assert!(r.slots.lock().unwrap().contains_key("192.0.2.1"));
    }
}
