//! What a turn may spend: `[limits] max_usd_per_turn` (the originating message and all its
//! helpers, background tasks and report turns: its chain), a cap on the chain's spend that each
//! model call is admitted under (see `delegate::Chain`), and `max_usd_per_day` (per person, their
//! own day in their time zone), checked before each model call against the store's figure and
//! the calls of this process not yet committed (see `delegate::Days`); and the messages that
//! name the limit reached.
//!
//! Arithmetic only: nothing here may call a model or write to the store.

use crate::config::LimitsConfig;

/// The limits of one turn (the whole tree of its message shares them).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Budget {
    pub per_turn: Option<f64>,
    pub per_day: Option<f64>,
}

impl Budget {
    pub(crate) fn new(limits: &LimitsConfig) -> Self {
        Self { per_turn: limits.max_usd_per_turn, per_day: limits.max_usd_per_day }
    }

    /// The most the chain may have spent before a model call may no longer start (`None`: no
    /// limit per message).
    pub(crate) fn chain_cap(&self) -> Option<f64> {
        self.per_turn
    }

    /// The message that stops the turn when `spent` (the chain's, so far) has reached the limit
    /// per message.
    pub(crate) fn exceeded(&self, spent: f64) -> Option<String> {
        let cap = self.per_turn.filter(|cap| spent >= *cap)?;
        Some(format!(
            "⚠️ I stopped: this request has cost ${spent:.4} so far, which reaches the limit of ${cap:.2} per \
             request ([limits] max_usd_per_turn)."
        ))
    }

    /// The message that stops the turn when the person's spend `today` has reached the day's
    /// limit; their day ends at midnight in `zone`.
    pub(crate) fn day_reached(&self, today: f64, zone: &str) -> String {
        format!(
            "⚠️ I stopped: you have spent ${today:.4} today, which reaches the limit of ${:.2} per day ([limits] \
             max_usd_per_day). It resets at midnight ({zone}); /usage shows where it went.",
            self.per_day.unwrap_or_default()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_table() {
        let b = |turn: Option<f64>| Budget { per_turn: turn, per_day: Some(5.0) };
        // (budget, spent by the chain) -> stopped
        let cases = [
            (b(None), 100.0, false),
            (b(Some(0.5)), 0.4999, false),
            (b(Some(0.5)), 0.5, true),
            (b(Some(0.5)), 0.6, true),
        ];
        for (budget, spent, want) in cases {
            // The cap admits calls exactly while the limit is not reached.
            let capped = budget.chain_cap().is_some_and(|cap| spent >= cap - 1e-12);
            assert_eq!(capped, want, "{budget:?} {spent}");
            let got = budget.exceeded(spent);
            assert_eq!(got.is_some(), want, "{budget:?} {spent}");
            if let Some(msg) = got {
                assert!(msg.starts_with("⚠️ I stopped") && msg.contains("max_usd_per_turn"), "{msg}");
            }
        }
        let day = b(None).day_reached(5.01, "Asia/Tokyo");
        for part in ["$5.0100", "$5.00 per day", "max_usd_per_day", "midnight (Asia/Tokyo)", "/usage"] {
            assert!(day.contains(part), "{day}");
        }
    }
}
