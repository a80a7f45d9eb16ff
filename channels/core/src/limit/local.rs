//! The in-process [`RateGate`]: every key's [`Cell`] and window count in one map behind one lock,
//! read on tokio's clock (so tests with paused time see their own clock). This is what a single
//! Butler uses, and what the Redis gate falls back to while Redis is away.
//!
//! It must never sleep, never hold its lock across an await (it has none) and never grow
//! without bound: keys that are back to fresh are forgotten when the map fills up.

use super::{Cell, Rate, RateGate};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Keys kept before the first sweep of forgettable ones.
const SWEEP_FROM: usize = 1024;

#[derive(Default)]
struct Entry {
    cell: Cell,
    count: u64,
    window_end: Option<Instant>,
}

impl Entry {
    /// Whether nothing of this entry matters any more at `now`.
    fn forgettable(&self, now: Instant) -> bool {
        self.cell.idle_from().is_none_or(|t| t <= now) && self.window_end.is_none_or(|t| t <= now)
    }
}

struct Keys {
    map: HashMap<String, Entry>,
    sweep_at: usize,
}

/// Limits of this process alone.
pub struct LocalGate {
    keys: Mutex<Keys>,
}

impl Default for LocalGate {
    fn default() -> Self {
        Self { keys: Mutex::new(Keys { map: HashMap::new(), sweep_at: SWEEP_FROM }) }
    }
}

fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

impl LocalGate {
    fn lock(&self) -> std::sync::MutexGuard<'_, Keys> {
        self.keys.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The entry of `key`, made when missing (after a sweep if the map is full).
    fn entry<'a>(keys: &'a mut Keys, key: &str, now: Instant) -> &'a mut Entry {
        if !keys.map.contains_key(key) {
            if keys.map.len() >= keys.sweep_at {
                keys.map.retain(|_, e| !e.forgettable(now));
                keys.sweep_at = (keys.map.len() * 2).max(SWEEP_FROM);
            }
            keys.map.insert(key.to_string(), Entry::default());
        }
        keys.map.get_mut(key).expect("inserted above")
    }

    /// [`RateGate::reserve`] at `now`.
    pub fn reserve_at(&self, key: &str, rate: Rate, max_wait: Duration, now: Instant) -> Result<Duration, Duration> {
        let mut keys = self.lock();
        match keys.map.get_mut(key) {
            Some(e) => e.cell.reserve(rate, now, max_wait),
            None => Self::entry(&mut keys, key, now).cell.reserve(rate, now, max_wait),
        }
    }

    pub(super) fn reserve_now(&self, key: &str, rate: Rate, max_wait: Duration) -> Result<Duration, Duration> {
        self.reserve_at(key, rate, max_wait, now())
    }

    /// [`RateGate::hold`] at `now`.
    pub fn hold_at(&self, key: &str, wait: Duration, now: Instant) {
        Self::entry(&mut self.lock(), key, now).cell.hold(now + wait);
    }

    pub(super) fn hold_now(&self, key: &str, wait: Duration) {
        self.hold_at(key, wait, now());
    }

    /// [`RateGate::held`] at `now`.
    pub fn held_at(&self, key: &str, now: Instant) -> Option<Duration> {
        self.lock().map.get(key).and_then(|e| e.cell.held(now))
    }

    pub(super) fn held_now(&self, key: &str) -> Option<Duration> {
        self.held_at(key, now())
    }

    /// [`RateGate::count`] at `now`.
    pub fn count_at(&self, key: &str, window: Duration, now: Instant) -> u64 {
        let mut keys = self.lock();
        let e = Self::entry(&mut keys, key, now);
        if e.window_end.is_none_or(|end| end <= now) {
            e.window_end = Some(now + window);
            e.count = 0;
        }
        e.count += 1;
        e.count
    }

    pub(super) fn count_now(&self, key: &str, window: Duration) -> u64 {
        self.count_at(key, window, now())
    }

    /// [`RateGate::clear`].
    pub fn clear(&self, key: &str) {
        self.lock().map.remove(key);
    }

    /// Keys remembered now.
    pub fn len(&self) -> usize {
        self.lock().map.len()
    }

    /// Whether no key is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[async_trait::async_trait]
impl RateGate for LocalGate {
    async fn reserve(&self, key: &str, rate: Rate, max_wait: Duration) -> Result<Duration, Duration> {
        self.reserve_now(key, rate, max_wait)
    }

    async fn hold(&self, key: &str, wait: Duration) {
        self.hold_now(key, wait);
    }

    async fn held(&self, key: &str) -> Option<Duration> {
        self.held_now(key)
    }

    async fn count(&self, key: &str, window: Duration) -> u64 {
        self.count_now(key, window)
    }

    async fn clear(&self, key: &str) {
        LocalGate::clear(self, key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_independent_and_counts_restart_after_their_window() {
        let g = LocalGate::default();
        let t0 = Instant::now();
        let s = |n: u64| t0 + Duration::from_secs(n);
        let rate = Rate::spaced(Duration::from_secs(1));
        assert_eq!(g.reserve_at("a", rate, Duration::ZERO, t0), Ok(Duration::ZERO));
        assert_eq!(g.reserve_at("a", rate, Duration::ZERO, t0), Err(Duration::from_secs(1)));
        assert_eq!(g.reserve_at("b", rate, Duration::ZERO, t0), Ok(Duration::ZERO), "another key");
        // (at, count expected) in a 10 s window
        for (at, want) in [(0, 1), (1, 2), (9, 3), (10, 1), (12, 2)] {
            assert_eq!(g.count_at("wrong", Duration::from_secs(10), s(at)), want, "at {at}s");
        }
        g.hold_at("m", Duration::from_secs(3), t0);
        assert_eq!(g.held_at("m", s(1)), Some(Duration::from_secs(2)));
        assert_eq!(g.reserve_at("m", rate, Duration::from_secs(1), s(1)), Err(Duration::from_secs(2)));
        g.clear("m");
        assert_eq!(g.held_at("m", s(1)), None);
    }

    #[test]
    fn the_map_forgets_fresh_keys_when_it_fills_up() {
        let g = LocalGate::default();
        let t0 = Instant::now();
        let rate = Rate::spaced(Duration::from_secs(1));
        for i in 0..SWEEP_FROM * 3 {
            let _ = g.reserve_at(&format!("k{i}"), rate, Duration::ZERO, t0);
        }
        assert!(g.len() > SWEEP_FROM, "all still live at t0");
        let later = t0 + Duration::from_secs(5);
        for i in 0..SWEEP_FROM * 5 {
            let _ = g.reserve_at(&format!("n{i}"), rate, Duration::ZERO, later + Duration::from_secs(2 * i as u64));
        }
        assert!(g.len() <= SWEEP_FROM * 2 + 1, "{} keys kept", g.len());
    }
}
