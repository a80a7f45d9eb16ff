//! What model calls cost: prices per million tokens by kind of token, the cost of one call's
//! usage, and the price book that finds a model's prices by its name: the config's prices for
//! the models it names (the main model, each fallback, each tier and its fallbacks) over the
//! book shipped with Butler ([`super::book`]). Shared by the agent, the archivist, the trigger
//! classifier, the usage ledger, `config check`, `doctor` and the status page.
//!
//! This must never read the store or the network: it is arithmetic over [`Usage`] and lookups
//! in the config and the compiled-in book.

use super::{book, Usage};
use crate::config::{Config, LlmConfig, LlmFallback, Problems};
use std::collections::BTreeMap;

/// USD per million tokens, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Prices {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

/// Where a model's prices come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PriceSource {
    /// The config's `*_price_per_mtok` keys (over the book's, for the kinds it leaves out).
    Config,
    /// Butler's price book.
    Book,
    /// Nobody knows: calls cost 0 in the records and budgets cannot work.
    Unknown,
}

impl PriceSource {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Config => "config",
            Self::Book => "price book",
            Self::Unknown => "unpriced",
        }
    }
}

/// A model's prices and where they come from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Priced {
    pub prices: Prices,
    pub source: PriceSource,
}

/// One endpoint's price keys as configured (`None`: not set).
struct Keys {
    input: Option<f64>,
    output: Option<f64>,
    cache_read: Option<f64>,
    cache_write: Option<f64>,
}

impl Keys {
    fn of(cfg: &LlmConfig) -> Self {
        Self {
            input: cfg.input_price_per_mtok,
            output: cfg.output_price_per_mtok,
            cache_read: cfg.cache_read_price_per_mtok,
            cache_write: cfg.cache_write_price_per_mtok,
        }
    }

    fn of_fallback(fb: &LlmFallback) -> Self {
        Self {
            input: fb.input_price_per_mtok,
            output: fb.output_price_per_mtok,
            cache_read: fb.cache_read_price_per_mtok,
            cache_write: fb.cache_write_price_per_mtok,
        }
    }

    /// The config's keys over the book's prices for `model`. Priced when the book knows the
    /// model or the config sets its input or output price (a kind left unset is then 0).
    fn over_book(&self, model: &str) -> Priced {
        let book = book::lookup(model).map(Prices::from);
        let any_key = self.input.is_some() || self.output.is_some();
        let base = book.unwrap_or_default();
        let prices = Prices {
            input: self.input.unwrap_or(base.input),
            output: self.output.unwrap_or(base.output),
            cache_read: self.cache_read.unwrap_or(base.cache_read),
            cache_write: self.cache_write.unwrap_or(base.cache_write),
        };
        let known = book.is_some() || any_key;
        let source = match (known, any_key) {
            (false, _) => PriceSource::Unknown,
            (true, true) => PriceSource::Config,
            (true, false) => PriceSource::Book,
        };
        Priced { prices, source }
    }
}

impl From<book::Rates> for Prices {
    fn from(r: book::Rates) -> Self {
        Self { input: r.input, output: r.output, cache_read: r.cache_read, cache_write: r.cache_write }
    }
}

impl Prices {
    /// The cost of `u` in USD. Providers report cached input separately from `input_tokens`.
    pub fn cost(&self, u: &Usage) -> f64 {
        (u.input_tokens as f64 * self.input
            + u.output_tokens as f64 * self.output
            + u.cache_read_tokens as f64 * self.cache_read
            + u.cache_write_tokens as f64 * self.cache_write)
            / 1e6
    }
}

/// One configured endpoint's model, where its price keys live, and its prices.
#[derive(Clone, Debug, PartialEq)]
pub struct Endpoint {
    pub model: String,
    /// The config section of its price keys (`llm`, `llm.fallback[0]`, `llm.tiers.worker`).
    pub section: String,
    pub priced: Priced,
}

/// Every configured model's prices by model name, and the book for the rest. When two
/// endpoints serve a model of the same name, the first configured wins: `[llm]`, its fallbacks
/// in order, then each tier (by name) and its fallbacks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PriceBook {
    endpoints: Vec<Endpoint>,
    by_model: BTreeMap<String, Priced>,
}

impl PriceBook {
    pub fn from_config(cfg: &LlmConfig) -> Self {
        let mut book = Self::default();
        book.add_endpoints(cfg, "llm", true);
        for (name, own) in &cfg.tiers {
            if let Some(tier) = cfg.tier(name) {
                // Fallbacks a tier inherits are [llm]'s, listed (and priced) there.
                book.add_endpoints(&tier, &format!("llm.tiers.{name}"), own.fallback.is_some());
            }
        }
        book
    }

    fn add_endpoints(&mut self, cfg: &LlmConfig, section: &str, fallbacks: bool) {
        self.add(&cfg.model, section.to_string(), Keys::of(cfg));
        for (i, fb) in cfg.fallback.iter().enumerate().filter(|_| fallbacks) {
            self.add(&fb.model, format!("{section}.fallback[{i}]"), Keys::of_fallback(fb));
        }
    }

    /// The first endpoint of a model name sets its prices; later ones of the same name are
    /// not listed again.
    fn add(&mut self, model: &str, section: String, keys: Keys) {
        let model = model.trim();
        if model.is_empty() || self.by_model.contains_key(model) {
            return;
        }
        let priced = keys.over_book(model);
        self.by_model.insert(model.to_string(), priced);
        self.endpoints.push(Endpoint { model: model.to_string(), section, priced });
    }

    /// The prices of `model` and where they come from: the configured model of that name, else
    /// a configured model whose name it extends with a suffix (`gpt-4o` answering as
    /// `gpt-4o-2024-08-06`), else the book, else unknown (0).
    pub fn priced(&self, model: &str) -> Priced {
        let model = model.trim();
        if let Some(p) = self.by_model.get(model) {
            return *p;
        }
        let extended = self
            .by_model
            .iter()
            .filter(|(name, _)| model.strip_prefix(name.as_str()).is_some_and(|rest| rest.starts_with('-')))
            .max_by_key(|(name, _)| name.len());
        if let Some((_, p)) = extended {
            return *p;
        }
        match book::lookup(model).map(Prices::from) {
            Some(prices) => Priced { prices, source: PriceSource::Book },
            None => Priced { prices: Prices::default(), source: PriceSource::Unknown },
        }
    }

    /// The prices of `model` (0 for a model nobody prices).
    pub fn get(&self, model: &str) -> Prices {
        self.priced(model).prices
    }

    /// Every configured endpoint's model and prices, in config order.
    pub fn endpoints(&self) -> &[Endpoint] {
        &self.endpoints
    }

    /// The configured endpoints whose model has no known price.
    pub fn unpriced(&self) -> impl Iterator<Item = &Endpoint> {
        self.endpoints.iter().filter(|e| e.priced.source == PriceSource::Unknown)
    }
}

impl Endpoint {
    /// One line about the endpoint's prices (`doctor`, `config check`, the status page).
    pub fn describe(&self) -> String {
        let p = &self.priced.prices;
        match self.priced.source {
            PriceSource::Unknown => format!(
                "{} ({}): no known price; its calls count as $0 and budgets cannot hold. Set {s}.input_price_per_mtok \
                 and {s}.output_price_per_mtok (0 for a free local model)",
                self.model,
                self.section,
                s = self.section
            ),
            source => format!(
                "{}: ${} in, ${} out per million tokens{} ({})",
                self.model,
                p.input,
                p.output,
                if p.cache_read > 0.0 { format!(", cached ${}", p.cache_read) } else { String::new() },
                source.as_str()
            ),
        }
    }
}

/// The price rules of `[llm]` against `[limits]`: a dollar budget with a model nobody prices
/// cannot work (its calls would cost 0), so it is refused, naming the model and the keys to
/// set. (An unpriced model without a budget is only reported: `config check`, `doctor`.)
pub fn check_config(cfg: &Config, p: &mut Problems) {
    let budget = [
        ("limits.max_usd_per_turn", cfg.limits.max_usd_per_turn),
        ("limits.max_usd_per_day", cfg.limits.max_usd_per_day),
    ]
    .into_iter()
    .find_map(|(key, v)| v.map(|_| key));
    let Some(budget) = budget else { return };
    for e in PriceBook::from_config(&cfg.llm).unpriced() {
        p.add(
            format!("{}.input_price_per_mtok", e.section),
            format!(
                "model `{}` has no known price, so {budget} cannot be kept: set {s}.input_price_per_mtok and \
                 {s}.output_price_per_mtok (US dollars per million tokens; 0 for a free local model), or remove \
                 the budget",
                e.model,
                s = e.section
            ),
        );
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
            input_price_per_mtok: Some(input),
            output_price_per_mtok: Some(input * 2.0),
            ..LlmFallback::default()
        }
    }

    #[test]
    fn prices_come_from_the_entry_that_names_the_model_then_the_book() {
        let mut cfg = LlmConfig {
            model: "big".into(),
            input_price_per_mtok: Some(10.0),
            output_price_per_mtok: Some(20.0),
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
        // A tier with no model of its own runs [llm]'s model: no new price.
        cfg.tiers.insert("chat".into(), LlmTier::default());
        // A tier naming a well-known model with no prices of its own: the book's.
        cfg.tiers.insert("reasoning".into(), LlmTier { model: Some("o3".into()), ..LlmTier::default() });
        let book = PriceBook::from_config(&cfg);
        let o3 = Prices { input: 2.0, output: 8.0, cache_read: 0.5, cache_write: 0.0 };
        let cases = [
            ("big", p(10.0), PriceSource::Config),
            ("big-2025-01-01", p(10.0), PriceSource::Config),
            ("backup", p(3.0), PriceSource::Config),
            ("small", p(0.5), PriceSource::Config),
            ("tiny", p(0.1), PriceSource::Config),
            (" small ", p(0.5), PriceSource::Config),
            ("o3", o3, PriceSource::Book),
            (
                "gpt-4o-mini",
                Prices { input: 0.15, output: 0.6, cache_read: 0.075, cache_write: 0.0 },
                PriceSource::Book,
            ),
            ("unknown", Prices::default(), PriceSource::Unknown),
            ("", Prices::default(), PriceSource::Unknown),
        ];
        for (model, want, source) in cases {
            assert_eq!(book.priced(model), Priced { prices: want, source }, "{model:?}");
        }
        assert_eq!(book.unpriced().count(), 0);
    }

    #[test]
    fn config_keys_override_the_book_kind_by_kind_and_unknown_models_are_listed() {
        let mut cfg = LlmConfig {
            model: "gpt-4o".into(),
            output_price_per_mtok: Some(12.0),
            fallback: vec![LlmFallback { model: "llama3.1".into(), ..LlmFallback::default() }],
            ..LlmConfig::default()
        };
        cfg.tiers.insert("worker".into(), LlmTier { model: Some("qwen2.5:7b".into()), ..LlmTier::default() });
        cfg.tiers.insert(
            "local".into(),
            LlmTier {
                model: Some("my-local".into()),
                input_price_per_mtok: Some(0.0),
                output_price_per_mtok: Some(0.0),
                ..LlmTier::default()
            },
        );
        let book = PriceBook::from_config(&cfg);
        let got = book.priced("gpt-4o");
        assert_eq!(got.prices, Prices { input: 2.5, output: 12.0, cache_read: 1.25, cache_write: 0.0 });
        assert_eq!(got.source, PriceSource::Config);
        assert_eq!(book.priced("my-local").source, PriceSource::Config, "0 set by hand is a price");
        let unpriced: Vec<(&str, &str)> = book.unpriced().map(|e| (e.model.as_str(), e.section.as_str())).collect();
        assert_eq!(unpriced, [("llama3.1", "llm.fallback[0]"), ("qwen2.5:7b", "llm.tiers.worker")]);
    }

    #[test]
    fn a_budget_with_an_unpriced_model_is_refused_naming_the_model_and_the_keys() {
        let problems = |model: &str, budget: Option<f64>| {
            let mut cfg = Config::default();
            cfg.llm.model = model.into();
            cfg.limits.max_usd_per_day = budget;
            let mut p = Problems::default();
            check_config(&cfg, &mut p);
            p.into_lines()
        };
        assert!(problems("llama3.1", None).is_empty(), "no budget: only reported elsewhere");
        assert!(problems("gpt-4o", Some(5.0)).is_empty(), "the book prices it");
        let got = problems("llama3.1", Some(5.0));
        assert_eq!(got.len(), 1, "{got:?}");
        let message = &got[0];
        assert!(message.starts_with("llm.input_price_per_mtok: "), "{message}");
        for part in ["`llama3.1`", "limits.max_usd_per_day", "llm.output_price_per_mtok", "0 for a free local model"] {
            assert!(message.contains(part), "{message}");
        }
    }

    #[test]
    fn endpoint_lines_say_the_price_and_where_it_comes_from() {
        let mut cfg = LlmConfig { model: "gpt-4o".into(), ..LlmConfig::default() };
        cfg.fallback = vec![LlmFallback { model: "llama3.1".into(), ..LlmFallback::default() }];
        let book = PriceBook::from_config(&cfg);
        let lines: Vec<String> = book.endpoints().iter().map(Endpoint::describe).collect();
        assert_eq!(lines[0], "gpt-4o: $2.5 in, $10 out per million tokens, cached $1.25 (price book)");
        assert!(lines[1].starts_with("llama3.1 (llm.fallback[0]): no known price"), "{}", lines[1]);
        assert!(lines[1].contains("llm.fallback[0].input_price_per_mtok"), "{}", lines[1]);
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
