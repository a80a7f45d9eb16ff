//! What a turn may spend: `[limits] max_usd_per_turn` (the turn and all its children) and
//! `max_usd_per_day` (per user, the UTC day), checked before every model call of the turn and
//! of each child, with one shared [`Spend`] for a whole tree of delegations.
//!
//! Arithmetic only: nothing here may call a model or write to the store.

use crate::config::LimitsConfig;
use std::sync::atomic::{AtomicU64, Ordering};

/// Dollars spent by a turn and its children so far, shared by the whole tree (in micro-dollars,
/// so concurrent children add without a lock).
#[derive(Debug, Default)]
pub(crate) struct Spend {
    micros: AtomicU64,
}

impl Spend {
    pub(crate) fn add(&self, usd: f64) {
        if usd.is_finite() && usd > 0.0 {
            self.micros.fetch_add((usd * 1e6).round() as u64, Ordering::Relaxed);
        }
    }

    pub(crate) fn usd(&self) -> f64 {
        self.micros.load(Ordering::Relaxed) as f64 / 1e6
    }
}

/// The limits of one turn tree: the configured caps and what the user had spent today before
/// the turn began.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Budget {
    pub per_turn: Option<f64>,
    pub per_day: Option<f64>,
    pub day_before: f64,
}

impl Budget {
    pub(crate) fn new(limits: &LimitsConfig, day_before: f64) -> Self {
        Self { per_turn: limits.max_usd_per_turn, per_day: limits.max_usd_per_day, day_before }
    }

    /// Whether any limit is set (only then is the day's spend read at the start of a turn).
    pub(crate) fn any(limits: &LimitsConfig) -> bool {
        limits.max_usd_per_turn.is_some() || limits.max_usd_per_day.is_some()
    }

    /// The message that stops the turn when `spent` (the tree's, so far) has reached a limit.
    pub(crate) fn exceeded(&self, spent: f64) -> Option<String> {
        if let Some(cap) = self.per_turn.filter(|cap| spent >= *cap) {
            return Some(format!(
                "⚠️ I stopped: this request has cost ${spent:.4} so far, which reaches the limit of ${cap:.2} \
                 per request ([limits] max_usd_per_turn)."
            ));
        }
        let today = self.day_before + spent;
        if let Some(cap) = self.per_day.filter(|cap| today >= *cap) {
            return Some(format!(
                "⚠️ I stopped: you have spent ${today:.4} today (UTC), which reaches the limit of ${cap:.2} per \
                 day ([limits] max_usd_per_day). It resets at midnight UTC."
            ));
        }
        None
    }
}

/// The start of the UTC day that `now_ms` falls in.
pub(crate) fn day_start_ms(now_ms: i64) -> i64 {
    now_ms - now_ms.rem_euclid(86_400_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_table() {
        let b = |turn: Option<f64>, day: Option<f64>, before: f64| Budget {
            per_turn: turn,
            per_day: day,
            day_before: before,
        };
        // (budget, spent) -> which limit (None: go on)
        let cases = [
            (b(None, None, 100.0), 100.0, None),
            (b(Some(0.5), None, 0.0), 0.4999, None),
            (b(Some(0.5), None, 0.0), 0.5, Some("max_usd_per_turn")),
            (b(None, Some(5.0), 4.9), 0.05, None),
            (b(None, Some(5.0), 4.9), 0.1, Some("max_usd_per_day")),
            (b(None, Some(5.0), 5.2), 0.0, Some("max_usd_per_day")),
            (b(Some(0.5), Some(5.0), 4.9), 0.6, Some("max_usd_per_turn")),
        ];
        for (budget, spent, want) in cases {
            let got = budget.exceeded(spent);
            match want {
                None => assert_eq!(got, None, "{budget:?} {spent}"),
                Some(key) => {
                    let msg = got.unwrap_or_default();
                    assert!(msg.contains(key) && msg.starts_with("⚠️ I stopped"), "{msg}");
                }
            }
        }
    }

    #[test]
    fn spend_adds_across_threads_and_days_start_at_midnight() {
        let s = std::sync::Arc::new(Spend::default());
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let s = s.clone();
                std::thread::spawn(move || (0..1000).for_each(|_| s.add(0.001)))
            })
            .collect();
        hs.into_iter().for_each(|h| h.join().unwrap());
        assert!((s.usd() - 4.0).abs() < 1e-9, "{}", s.usd());
        assert_eq!(day_start_ms(86_400_000 * 3 + 5), 86_400_000 * 3);
        assert_eq!(day_start_ms(86_400_000 * 3), 86_400_000 * 3);
    }
}
