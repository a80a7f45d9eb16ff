//! `[llm]`: the model endpoint, its fallbacks and prices, and the model tiers
//! (`[llm.tiers.<name>]`, each any key of `[llm]` over `[llm]`'s own).
//!
//! Plain data (the providers are built in `crate::llm`); a tier's merge with `[llm]` is here
//! because it is only data. This file must never print or log an API key.

use super::secret::Secret;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    #[default]
    Openai,
    Anthropic,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct LlmConfig {
    pub provider: ProviderKind,
    /// Defaults: `https://api.openai.com/v1` or `https://api.anthropic.com`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key: Option<Secret>,
    /// Empty means "not configured" unless the environment supplies one.
    pub model: String,
    pub connect_timeout_secs: u64,
    /// Time to the first byte of the response.
    pub first_byte_timeout_secs: u64,
    /// Longest silence between two stream events.
    pub idle_timeout_secs: u64,
    pub max_retries: u32,
    pub max_tokens: u32,
    /// The model's context window in tokens (drives compaction thresholds).
    pub context_window: u32,
    /// USD per million input tokens, for cost records. Unset: the price book shipped with
    /// Butler (`crate::llm::book`) prices well-known models; a set key wins over it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_price_per_mtok: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_price_per_mtok: Option<f64>,
    /// USD per million input tokens served from the provider's prompt cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_read_price_per_mtok: Option<f64>,
    /// USD per million input tokens written to the provider's prompt cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_write_price_per_mtok: Option<f64>,
    /// Tried in order when the primary fails with a transient error before streaming.
    pub fallback: Vec<LlmFallback>,
    /// Model tiers (`worker`, `chat`, `reasoning`, or any name): `[llm.tiers.<name>]`, each any
    /// key of `[llm]`; unset keys come from `[llm]`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tiers: BTreeMap<String, LlmTier>,
    /// The model reads images: photos people send reach it as image content. When false it
    /// gets a short description instead and the reply says it cannot see images.
    pub vision: bool,
}

impl Default for LlmConfig {
    fn default() -> Self {
        Self {
            provider: ProviderKind::Openai,
            base_url: None,
            api_key: None,
            model: String::new(),
            connect_timeout_secs: 10,
            first_byte_timeout_secs: 60,
            idle_timeout_secs: 60,
            max_retries: 3,
            max_tokens: 4096,
            context_window: 128_000,
            input_price_per_mtok: None,
            output_price_per_mtok: None,
            cache_read_price_per_mtok: None,
            cache_write_price_per_mtok: None,
            fallback: Vec::new(),
            tiers: BTreeMap::new(),
            vision: true,
        }
    }
}

/// One `[[llm.fallback]]` endpoint. Its prices (USD per million tokens) price the calls it
/// answers; unset, the price book's for its model (or unknown: the usage row still records the
/// tokens, and `config check` names the model).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LlmFallback {
    pub provider: ProviderKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key: Option<Secret>,
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_price_per_mtok: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_price_per_mtok: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_price_per_mtok: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_price_per_mtok: Option<f64>,
}

/// One `[llm.tiers.<name>]`: any key of `[llm]`; unset keys come from `[llm]`.
///
/// The API key is inherited only while the tier talks to the same endpoint as `[llm]` (same
/// provider and base URL): a tier pointed elsewhere never receives the main key.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct LlmTier {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<ProviderKind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key: Option<Secret>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connect_timeout_secs: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_byte_timeout_secs: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_timeout_secs: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_retries: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_price_per_mtok: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_price_per_mtok: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_read_price_per_mtok: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_write_price_per_mtok: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<Vec<LlmFallback>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vision: Option<bool>,
}

impl LlmConfig {
    /// The `[llm]` a tier runs on: the tier's keys over `[llm]`'s (without `[llm]`'s tiers).
    /// `None` when no such tier is configured (callers fall back to `[llm]`).
    pub fn tier(&self, name: &str) -> Option<LlmConfig> {
        let t = self.tiers.get(name)?;
        // A tier with a model of its own never inherits [llm]'s prices (they are another
        // model's); one running [llm]'s model does.
        let own_model = t.model.as_ref().is_some_and(|m| m.trim() != self.model.trim());
        let price = |tier: Option<f64>, main: Option<f64>| tier.or(main.filter(|_| !own_model));
        let same_endpoint = t.provider.is_none_or(|p| p == self.provider)
            && t.base_url.as_ref().is_none_or(|b| Some(b) == self.base_url.as_ref());
        Some(LlmConfig {
            provider: t.provider.unwrap_or(self.provider),
            base_url: t.base_url.clone().or_else(|| self.base_url.clone()),
            api_key: t.api_key.clone().or_else(|| same_endpoint.then(|| self.api_key.clone()).flatten()),
            model: t.model.clone().unwrap_or_else(|| self.model.clone()),
            connect_timeout_secs: t.connect_timeout_secs.unwrap_or(self.connect_timeout_secs),
            first_byte_timeout_secs: t.first_byte_timeout_secs.unwrap_or(self.first_byte_timeout_secs),
            idle_timeout_secs: t.idle_timeout_secs.unwrap_or(self.idle_timeout_secs),
            max_retries: t.max_retries.unwrap_or(self.max_retries),
            max_tokens: t.max_tokens.unwrap_or(self.max_tokens),
            context_window: t.context_window.unwrap_or(self.context_window),
            input_price_per_mtok: price(t.input_price_per_mtok, self.input_price_per_mtok),
            output_price_per_mtok: price(t.output_price_per_mtok, self.output_price_per_mtok),
            cache_read_price_per_mtok: price(t.cache_read_price_per_mtok, self.cache_read_price_per_mtok),
            cache_write_price_per_mtok: price(t.cache_write_price_per_mtok, self.cache_write_price_per_mtok),
            fallback: t.fallback.clone().unwrap_or_else(|| self.fallback.clone()),
            tiers: Default::default(),
            vision: t.vision.unwrap_or(self.vision),
        })
    }

    /// The tier's `[llm]`, or `[llm]` itself when the tier is not configured.
    pub fn tier_or_main(&self, name: &str) -> LlmConfig {
        self.tier(name).unwrap_or_else(|| LlmConfig { tiers: Default::default(), ..self.clone() })
    }
}
