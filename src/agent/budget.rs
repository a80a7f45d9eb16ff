//! What a turn may spend: `[limits] max_usd_per_turn` (the originating message and all its
//! helpers, background tasks and report turns: its chain) and `max_usd_per_day` (per user, the
//! UTC day), as one cap on the chain's spend that each model call is admitted under (see
//! `delegate::Chain`), and the message that names the limit reached.
//!
//! Arithmetic only: nothing here may call a model or write to the store.

use crate::config::LimitsConfig;

/// The limits of one turn: the configured caps, what the user had spent today before the turn
/// began, and what its chain had spent by then.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Budget {
    pub per_turn: Option<f64>,
    pub per_day: Option<f64>,
    pub day_before: f64,
    /// The chain's spend when this turn began (already in `day_before` as far as it was
    /// recorded).
    pub chain_before: f64,
}

impl Budget {
    pub(crate) fn new(limits: &LimitsConfig, day_before: f64, chain_before: f64) -> Self {
        Self { per_turn: limits.max_usd_per_turn, per_day: limits.max_usd_per_day, day_before, chain_before }
    }

    /// Whether any limit is set (only then is the day's spend read at the start of a turn).
    pub(crate) fn any(limits: &LimitsConfig) -> bool {
        limits.max_usd_per_turn.is_some() || limits.max_usd_per_day.is_some()
    }

    /// The most the chain may have spent before a model call may no longer start (`None`: no
    /// limit).
    pub(crate) fn chain_cap(&self) -> Option<f64> {
        let day = self.per_day.map(|cap| cap - self.day_before + self.chain_before);
        match (self.per_turn, day) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The message that stops the turn when `spent` (the chain's, so far) has reached a limit.
    pub(crate) fn exceeded(&self, spent: f64) -> Option<String> {
        if let Some(cap) = self.per_turn.filter(|cap| spent >= *cap) {
            return Some(format!(
                "⚠️ I stopped: this request has cost ${spent:.4} so far, which reaches the limit of ${cap:.2} \
                 per request ([limits] max_usd_per_turn)."
            ));
        }
        let today = self.day_before + spent - self.chain_before;
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
            chain_before: 0.0,
        };
        // A turn taken up by a report: its chain had spent 2.0 (also in the day's 4.9).
        let later = Budget { chain_before: 2.0, ..b(Some(3.0), Some(5.0), 4.9) };
        // (budget, spent by the chain) -> which limit (None: go on)
        let cases = [
            (b(None, None, 100.0), 100.0, None),
            (b(Some(0.5), None, 0.0), 0.4999, None),
            (b(Some(0.5), None, 0.0), 0.5, Some("max_usd_per_turn")),
            (b(None, Some(5.0), 4.9), 0.05, None),
            (b(None, Some(5.0), 4.9), 0.1, Some("max_usd_per_day")),
            (b(None, Some(5.0), 5.2), 0.0, Some("max_usd_per_day")),
            (b(Some(0.5), Some(5.0), 4.9), 0.6, Some("max_usd_per_turn")),
            (later, 2.05, None),
            (later, 2.1, Some("max_usd_per_day")),
        ];
        for (budget, spent, want) in cases {
            // The cap admits calls exactly while no limit is reached.
            let capped = budget.chain_cap().is_some_and(|cap| spent >= cap - 1e-12);
            assert_eq!(capped, want.is_some(), "{budget:?} {spent}");
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
    fn days_start_at_midnight() {
        assert_eq!(day_start_ms(86_400_000 * 3 + 5), 86_400_000 * 3);
        assert_eq!(day_start_ms(86_400_000 * 3), 86_400_000 * 3);
    }
}
