//! Model tiers: the main provider and one per `[llm.tiers.<name>]`, so a caller can run on
//! `worker`, `chat` or `reasoning` by name, falling back to the main model when a tier is not
//! configured.
//!
//! Built once at start; it must never build a provider per call.

use super::{from_config, Provider};
use crate::config::LlmConfig;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The tier a caller gets.
#[derive(Clone)]
pub struct TierChoice {
    pub provider: Arc<dyn Provider>,
    /// The tier actually used: its name, or `main` when that tier is not configured.
    pub tier: String,
}

/// The main provider and the configured tiers'.
#[derive(Clone)]
pub struct Tiers {
    main: Arc<dyn Provider>,
    tiers: BTreeMap<String, Arc<dyn Provider>>,
}

impl Tiers {
    /// `main` is the provider already built from `[llm]`.
    pub fn new(cfg: &LlmConfig, main: Arc<dyn Provider>) -> Self {
        let tiers = cfg.tiers.keys().filter_map(|name| Some((name.clone(), from_config(&cfg.tier(name)?)))).collect();
        Self { main, tiers }
    }

    /// Only the main provider (no tiers).
    pub fn single(main: Arc<dyn Provider>) -> Self {
        Self { main, tiers: BTreeMap::new() }
    }

    pub fn get(&self, tier: &str) -> TierChoice {
        match self.tiers.get(tier) {
            Some(p) => TierChoice { provider: p.clone(), tier: tier.to_string() },
            None => TierChoice { provider: self.main.clone(), tier: "main".into() },
        }
    }
}
