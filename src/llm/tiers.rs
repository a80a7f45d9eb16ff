//! Model tiers: the main provider and one per `[llm.tiers.<name>]`, so a caller can run on
//! `worker`, `chat` or `reasoning` by name, falling back to the main model when a tier is not
//! configured; and the price book of every configured model, so a call is priced by the model
//! that answered it.
//!
//! Built once at start; it must never build a provider per call.

use super::{from_config, PriceBook, Provider};
use crate::config::{LlmConfig, WORKER_TIER};
use std::collections::BTreeMap;
use std::sync::Arc;

/// What `get` answers for a tier that is not configured.
pub const MAIN_TIER: &str = "main";

/// The tier a caller gets.
#[derive(Clone)]
pub struct TierChoice {
    pub provider: Arc<dyn Provider>,
    /// The tier actually used: its name, or `main` when that tier is not configured.
    pub tier: String,
    /// The tier's context window in tokens (`[llm.tiers.<name>] context_window`, else `[llm]`'s).
    pub context_window: u32,
    /// The most tokens one answer of the tier may have.
    pub max_tokens: u32,
}

/// The main provider and the configured tiers', with the prices of every configured model.
#[derive(Clone)]
pub struct Tiers {
    main: TierChoice,
    tiers: BTreeMap<String, TierChoice>,
    prices: Arc<PriceBook>,
}

impl Tiers {
    /// `main` is the provider already built from `[llm]`; each configured tier gets its own
    /// (with its fallbacks) from the tier merged over `[llm]`.
    pub fn new(cfg: &LlmConfig, main: Arc<dyn Provider>) -> Self {
        let tiers = cfg
            .tiers
            .keys()
            .filter_map(|name| {
                let tier = cfg.tier(name)?;
                let choice = TierChoice {
                    provider: from_config(&tier),
                    tier: name.clone(),
                    context_window: tier.context_window,
                    max_tokens: tier.max_tokens,
                };
                Some((name.clone(), choice))
            })
            .collect();
        let main = TierChoice {
            provider: main,
            tier: MAIN_TIER.into(),
            context_window: cfg.context_window,
            max_tokens: cfg.max_tokens,
        };
        Self { main, tiers, prices: Arc::new(PriceBook::from_config(cfg)) }
    }

    /// Only the main provider (no tiers, no prices: every call costs 0), with `[llm]`'s default
    /// context window and answer size.
    pub fn single(main: Arc<dyn Provider>) -> Self {
        let d = LlmConfig::default();
        Self {
            main: TierChoice {
                provider: main,
                tier: MAIN_TIER.into(),
                context_window: d.context_window,
                max_tokens: d.max_tokens,
            },
            tiers: BTreeMap::new(),
            prices: Arc::default(),
        }
    }

    /// The tier `tier`, or the main model when it is not configured.
    pub fn get(&self, tier: &str) -> TierChoice {
        self.choice(tier).clone()
    }

    /// [`Tiers::get`] without the clone.
    pub fn choice(&self, tier: &str) -> &TierChoice {
        self.tiers.get(tier).unwrap_or(&self.main)
    }

    /// The tier background work runs on: `worker` when configured, else the main model.
    pub fn worker(&self) -> TierChoice {
        self.get(WORKER_TIER)
    }

    /// The main model (`[llm]`).
    pub fn main(&self) -> TierChoice {
        self.main.clone()
    }

    /// The configured tiers, by name.
    pub fn configured(&self) -> impl Iterator<Item = &TierChoice> {
        self.tiers.values()
    }

    /// The prices of every configured model, by name.
    pub fn prices(&self) -> &Arc<PriceBook> {
        &self.prices
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::LlmTier;

    #[test]
    fn unconfigured_tiers_fall_back_to_the_main_model() {
        let mut cfg = LlmConfig {
            model: "big".into(),
            base_url: Some("http://127.0.0.1:9/v1".into()),
            context_window: 200_000,
            max_tokens: 8_000,
            ..LlmConfig::default()
        };
        cfg.tiers.insert(
            "worker".into(),
            LlmTier { model: Some("small".into()), context_window: Some(32_000), ..LlmTier::default() },
        );
        cfg.tiers.insert("reasoning".into(), LlmTier { model: Some("deep".into()), ..LlmTier::default() });
        let tiers = Tiers::new(&cfg, from_config(&cfg));
        let cases = [
            ("worker", "worker", "small", 32_000, 8_000),
            ("reasoning", "reasoning", "deep", 200_000, 8_000),
            ("chat", MAIN_TIER, "big", 200_000, 8_000),
            ("nope", MAIN_TIER, "big", 200_000, 8_000),
        ];
        for (asked, tier, model, window, max_tokens) in cases {
            let got = tiers.get(asked);
            assert_eq!(
                (got.tier.as_str(), got.provider.model(), got.context_window, got.max_tokens),
                (tier, model, window, max_tokens),
                "{asked}"
            );
        }
        assert_eq!(tiers.worker().provider.model(), "small");
        assert_eq!(tiers.main().provider.model(), "big");
        let names: Vec<_> = tiers.configured().map(|t| t.tier.as_str()).collect();
        assert_eq!(names, ["reasoning", "worker"]);

        let single = Tiers::single(from_config(&cfg));
        assert_eq!((single.worker().tier.as_str(), single.worker().provider.model()), (MAIN_TIER, "big"));
        assert_eq!(single.configured().count(), 0);
    }
}
