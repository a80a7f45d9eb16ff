//! The usage ledger's rows: what one model call cost ([`UsageRecord`]), what a turn spent
//! across the models that answered it ([`TurnUsage`]), a user's totals since a time
//! ([`UsageTotals`]) and the same by model ([`ModelUsage`]).
//!
//! Plain data and arithmetic over it, and the Prometheus counters of what was recorded: nothing
//! here may run a query.

use crate::llm::{Prices, Usage};

#[derive(Clone, Debug, PartialEq)]
pub struct UsageRecord {
    pub user_id: String,
    pub session_id: String,
    pub event_id: String,
    pub model: String,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cost_usd: f64,
    pub iterations: i32,
    /// `turn`, `archivist`, `compaction` or `classifier`: which kind of model call this was.
    pub kind: String,
    /// Estimated tokens of the last prompt the turn sent (0 when not a turn).
    pub context_tokens: i64,
}

impl UsageRecord {
    /// What one model call of `kind` cost, as the usage ledger stores it; `iterations` and
    /// `context_tokens` are 1 and 0 and a turn sets its own.
    pub fn priced(prices: &Prices, kind: &str, ids: [&str; 3], model: &str, u: &Usage) -> Self {
        let [user_id, session_id, event_id] = ids;
        Self {
            user_id: user_id.to_string(),
            session_id: session_id.to_string(),
            event_id: event_id.to_string(),
            model: model.to_string(),
            // The whole prompt, cached or not.
            input_tokens: (u.input_tokens + u.cache_read_tokens + u.cache_write_tokens) as i64,
            output_tokens: u.output_tokens as i64,
            cost_usd: prices.cost(u),
            iterations: 1,
            kind: kind.into(),
            context_tokens: 0,
        }
    }
}

/// Counts a recorded row in the Prometheus counters of tokens and cost, by model and kind
/// (never by user).
pub fn count_usage(row: &UsageRecord) {
    crate::metrics::METRICS.count_llm_usage(&row.model, &row.kind, row.input_tokens, row.output_tokens, row.cost_usd);
}

/// What a turn spent: one row per model that answered one of its calls, in the order they
/// first answered, each priced at its own model's prices. The first row carries the turn's
/// `iterations` (the others 0, so a sum is the turn's count); every row carries its
/// `context_tokens`. The totals are the rows' sums.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TurnUsage {
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cost_usd: f64,
    pub rows: Vec<UsageRecord>,
}

impl TurnUsage {
    pub fn new(rows: Vec<UsageRecord>) -> Self {
        Self {
            input_tokens: rows.iter().map(|r| r.input_tokens).sum(),
            output_tokens: rows.iter().map(|r| r.output_tokens).sum(),
            cost_usd: rows.iter().map(|r| r.cost_usd).sum(),
            rows,
        }
    }
}

impl From<UsageRecord> for TurnUsage {
    fn from(row: UsageRecord) -> Self {
        Self::new(vec![row])
    }
}

/// A user's turns, tokens and cost since a time (`/status`, the day's budget).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UsageTotals {
    pub turns: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cost_usd: f64,
}

/// What one model took and cost since a time (`/usage`, the usage panel, `butler usage`).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct ModelUsage {
    pub model: String,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cost_usd: f64,
}
