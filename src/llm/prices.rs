//! What model calls cost: the configured prices per million tokens, by kind of token, the cost
//! of one call's usage, and the price book that finds a model's prices by its name (the main
//! model, each fallback, each tier and its fallbacks). Shared by the agent, the archivist, the
//! trigger classifier and the usage ledger.
//!
//! This must never read the store or the network: it is arithmetic over [`Usage`] and lookups
//! in the config.

use super::Usage;
use crate::config::{LlmConfig, LlmFallback};
use std::collections::BTreeMap;

/// USD per million tokens, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Prices {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

impl Prices {
    pub fn from_config(cfg: &LlmConfig) -> Self {
        Self {
            input: cfg.input_price_per_mtok,
            output: cfg.output_price_per_mtok,
            cache_read: cfg.cache_read_price_per_mtok,
            cache_write: cfg.cache_write_price_per_mtok,
        }
    }

    /// A `[[llm.fallback]]` entry's own prices (unset: 0, unknown).
    pub fn from_fallback(fb: &LlmFallback) -> Self {
        Self {
            input: fb.input_price_per_mtok,
            output: fb.output_price_per_mtok,
            cache_read: fb.cache_read_price_per_mtok,
            cache_write: fb.cache_write_price_per_mtok,
        }
    }

    /// The cost of `u` in USD. Providers report cached input separately from `input_tokens`.
    pub fn cost(&self, u: &Usage) -> f64 {
        (u.input_tokens as f64 * self.input
            + u.output_tokens as f64 * self.output
            + u.cache_read_tokens as f64 * self.cache_read
            + u.cache_write_tokens as f64 * self.cache_write)
            / 1e6
    }
}

/// Every configured model's prices by model name. When two endpoints serve a model of the same
/// name, the first configured wins: `[llm]`, its fallbacks in order, then each tier (by name)
/// and its fallbacks. A model nobody configured costs 0 (unknown).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PriceBook {
    by_model: BTreeMap<String, Prices>,
}

impl PriceBook {
    pub fn from_config(cfg: &LlmConfig) -> Self {
        let mut book = Self::default();
        book.add_endpoints(cfg);
        for name in cfg.tiers.keys() {
            if let Some(tier) = cfg.tier(name) {
                book.add_endpoints(&tier);
            }
        }
        book
    }

    fn add_endpoints(&mut self, cfg: &LlmConfig) {
        self.add(&cfg.model, Prices::from_config(cfg));
        for fb in &cfg.fallback {
            self.add(&fb.model, Prices::from_fallback(fb));
        }
    }

    fn add(&mut self, model: &str, prices: Prices) {
        let model = model.trim();
        if !model.is_empty() {
            self.by_model.entry(model.to_string()).or_insert(prices);
        }
    }

    /// The prices of `model` (0 for a model not in the config).
    pub fn get(&self, model: &str) -> Prices {
        self.by_model.get(model.trim()).copied().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{LlmTier, ProviderKind};

    fn p(input: f64) -> Prices {
        Prices { input, output: input * 2.0, cache_read: 0.0, cache_write: 0.0 }
    }

    fn fallback(model: &str, input: f64) -> LlmFallback {
        LlmFallback {
            provider: ProviderKind::Openai,
            model: model.into(),
            input_price_per_mtok: input,
            output_price_per_mtok: input * 2.0,
            ..LlmFallback::default()
        }
    }

    #[test]
    fn prices_come_from_the_entry_that_names_the_model() {
        let mut cfg = LlmConfig {
            model: "big".into(),
            input_price_per_mtok: 10.0,
            output_price_per_mtok: 20.0,
            fallback: vec![fallback("backup", 3.0), fallback("big", 99.0)],
            ..LlmConfig::default()
        };
        cfg.tiers.insert(
            "worker".into(),
            LlmTier {
                model: Some("small".into()),
                input_price_per_mtok: Some(0.5),
                output_price_per_mtok: Some(1.0),
                fallback: Some(vec![fallback("tiny", 0.1)]),
                ..LlmTier::default()
            },
        );
        // A tier with no model of its own runs [llm]'s model: no new entry.
        cfg.tiers.insert("chat".into(), LlmTier::default());
        let book = PriceBook::from_config(&cfg);
        let cases = [
            ("big", p(10.0)),
            ("backup", p(3.0)),
            ("small", p(0.5)),
            ("tiny", p(0.1)),
            (" small ", p(0.5)),
            ("unknown", Prices::default()),
            ("", Prices::default()),
        ];
        for (model, want) in cases {
            assert_eq!(book.get(model), want, "{model:?}");
        }
    }

    #[test]
    fn cost_by_kind_of_token() {
        let prices = Prices { input: 1.0, output: 2.0, cache_read: 0.5, cache_write: 4.0 };
        let u = Usage {
            input_tokens: 1_000_000,
            output_tokens: 500_000,
            cache_read_tokens: 2_000_000,
            cache_write_tokens: 250_000,
        };
        assert!((prices.cost(&u) - (1.0 + 1.0 + 1.0 + 1.0)).abs() < 1e-9);
        assert_eq!(Prices::default().cost(&u), 0.0);
    }
}
