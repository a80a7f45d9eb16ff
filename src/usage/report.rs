//! A person's usage report: for today, this week and this month (their calendar), what each
//! model cost and how many tokens it took, with the budgets and how much of today's is used;
//! built from the usage ledger ([`Usage::report`]) and rendered as chat text ([`render`]) or
//! served as JSON (the web page's usage panel).
//!
//! It only reads the ledger: it must never record usage, and never show another person's.

use super::periods::Period;
use crate::config::LimitsConfig;
use crate::llm::{PriceBook, PriceSource};
use crate::store::{ModelUsage, StoreError, TurnStore, UserRow};
use serde::Serialize;
use std::sync::Arc;

/// One period's spend, by model (dearest first).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PeriodUsage {
    pub period: Period,
    pub label: &'static str,
    pub since_ms: i64,
    pub cost_usd: f64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub models: Vec<ModelUsage>,
}

/// What a person (or, for the CLI, everyone) spent, and the limits.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct UsageReport {
    /// The time zone the periods are counted in.
    pub zone: String,
    pub periods: Vec<PeriodUsage>,
    pub max_usd_per_turn: Option<f64>,
    pub max_usd_per_day: Option<f64>,
    /// Models in the report that nobody prices (their calls are recorded at $0).
    pub unpriced: Vec<String>,
}

/// Builds reports from the usage ledger with the prices and limits of the config.
#[derive(Clone)]
pub struct Usage {
    turns: Arc<dyn TurnStore>,
    prices: Arc<PriceBook>,
    limits: LimitsConfig,
}

impl Usage {
    pub fn new(turns: Arc<dyn TurnStore>, prices: Arc<PriceBook>, limits: &LimitsConfig) -> Self {
        Self { turns, prices, limits: limits.clone() }
    }

    /// `user`'s report in their own zone (every account of theirs: usage is recorded under the
    /// person).
    pub async fn report(&self, user: &UserRow, now_ms: i64) -> Result<UsageReport, StoreError> {
        self.report_for(Some(&user.id), &user.timezone, now_ms).await
    }

    /// The report of `user_id` (`None`: everyone, for the owner's CLI), periods in `zone`.
    pub async fn report_for(&self, user_id: Option<&str>, zone: &str, now_ms: i64) -> Result<UsageReport, StoreError> {
        let mut periods = Vec::new();
        for period in Period::ALL {
            let since_ms = period.start_ms(zone, now_ms);
            let models = self.turns.usage_by_model(user_id, since_ms).await?;
            periods.push(PeriodUsage {
                period,
                label: period.label(),
                since_ms,
                cost_usd: models.iter().fold(0.0, |sum, m| sum + m.cost_usd),
                input_tokens: models.iter().map(|m| m.input_tokens).sum(),
                output_tokens: models.iter().map(|m| m.output_tokens).sum(),
                models,
            });
        }
        let mut unpriced: Vec<String> = periods
            .iter()
            .flat_map(|p| &p.models)
            .filter(|m| self.prices.priced(&m.model).source == PriceSource::Unknown)
            .map(|m| m.model.clone())
            .collect();
        unpriced.sort();
        unpriced.dedup();
        Ok(UsageReport {
            zone: zone.to_string(),
            periods,
            max_usd_per_turn: self.limits.max_usd_per_turn,
            max_usd_per_day: self.limits.max_usd_per_day,
            unpriced,
        })
    }
}

fn tokens(n: i64) -> String {
    match n {
        n if n >= 10_000_000 => format!("{:.0}M", n as f64 / 1e6),
        n if n >= 1_000_000 => format!("{:.1}M", n as f64 / 1e6),
        n if n >= 10_000 => format!("{:.0}k", n as f64 / 1e3),
        n if n >= 1_000 => format!("{:.1}k", n as f64 / 1e3),
        n => n.to_string(),
    }
}

/// The report as chat text (Markdown), the same in every channel and the terminal.
pub fn render(r: &UsageReport) -> String {
    let mut out = format!("💰 **Usage** (days in {})", r.zone);
    for p in &r.periods {
        if p.models.is_empty() {
            out.push_str(&format!("\n**{}**: nothing yet", p.label));
            continue;
        }
        out.push_str(&format!(
            "\n**{}**: ${:.4} · {} tokens in, {} out",
            p.label,
            p.cost_usd,
            tokens(p.input_tokens),
            tokens(p.output_tokens)
        ));
        for m in &p.models {
            let mark = if r.unpriced.contains(&m.model) { " (no known price)" } else { "" };
            out.push_str(&format!(
                "\n  • {}: ${:.4}{mark} · {} in, {} out",
                m.model,
                m.cost_usd,
                tokens(m.input_tokens),
                tokens(m.output_tokens)
            ));
        }
    }
    let today = r.periods.first().map_or(0.0, |p| p.cost_usd);
    out.push_str(&match (r.max_usd_per_turn, r.max_usd_per_day) {
        (None, None) => "\nNo spending limits are set ([limits] max_usd_per_turn, max_usd_per_day).".to_string(),
        (turn, day) => {
            let mut parts = Vec::new();
            if let Some(t) = turn {
                parts.push(format!("${t:.2} per request"));
            }
            if let Some(d) = day {
                let used = if d > 0.0 { today / d * 100.0 } else { 0.0 };
                parts.push(format!("${d:.2} per day ({used:.0}% used today)"));
            }
            format!("\nLimits: {}.", parts.join(", "))
        }
    });
    if !r.unpriced.is_empty() {
        out.push_str(&format!(
            "\n⚠️ No price is known for {}: their calls count as $0. Set [llm] input_price_per_mtok and \
             output_price_per_mtok (0 for a free local model).",
            r.unpriced.join(", ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(model: &str, cost: f64, input: i64, output: i64) -> ModelUsage {
        ModelUsage { model: model.into(), input_tokens: input, output_tokens: output, cost_usd: cost }
    }

    fn period(period: Period, models: Vec<ModelUsage>) -> PeriodUsage {
        PeriodUsage {
            period,
            label: period.label(),
            since_ms: 0,
            cost_usd: models.iter().map(|m| m.cost_usd).sum(),
            input_tokens: models.iter().map(|m| m.input_tokens).sum(),
            output_tokens: models.iter().map(|m| m.output_tokens).sum(),
            models,
        }
    }

    #[test]
    fn the_report_reads_as_text() {
        let report = UsageReport {
            zone: "Europe/Berlin".into(),
            periods: vec![
                period(Period::Today, vec![m("gpt-4o", 0.0125, 4_000, 250), m("llama3.1", 0.0, 1_200, 80)]),
                period(Period::ThisWeek, vec![m("gpt-4o", 1.5, 480_000, 30_000), m("llama3.1", 0.0, 12_000, 800)]),
                period(Period::ThisMonth, vec![]),
            ],
            max_usd_per_turn: Some(0.5),
            max_usd_per_day: Some(2.0),
            unpriced: vec!["llama3.1".into()],
        };
        let want = "💰 **Usage** (days in Europe/Berlin)
**Today**: $0.0125 · 5.2k tokens in, 330 out
  • gpt-4o: $0.0125 · 4.0k in, 250 out
  • llama3.1: $0.0000 (no known price) · 1.2k in, 80 out
**This week**: $1.5000 · 492k tokens in, 31k out
  • gpt-4o: $1.5000 · 480k in, 30k out
  • llama3.1: $0.0000 (no known price) · 12k in, 800 out
**This month**: nothing yet
Limits: $0.50 per request, $2.00 per day (1% used today).
⚠️ No price is known for llama3.1: their calls count as $0. Set [llm] input_price_per_mtok and output_price_per_mtok (0 for a free local model).";
        assert_eq!(render(&report), want);
        let none = UsageReport { max_usd_per_turn: None, max_usd_per_day: None, unpriced: vec![], ..report };
        assert!(render(&none).ends_with("No spending limits are set ([limits] max_usd_per_turn, max_usd_per_day)."));
    }
}
