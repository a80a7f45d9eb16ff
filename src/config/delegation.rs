//! `[agent.delegation]`, `[[agent.archetypes]]` and `[llm.tiers.<name>]`: how a turn may hand a
//! focused task to a child agent, the named kinds of helper, and the model tiers they run on.
//! Plain data: the checks of delegation and archetypes live in `crate::delegate`; a tier's
//! merge with `[llm]` is here because it is only data. This file must never touch the network.

use super::{LlmConfig, LlmFallback, ProviderKind, Secret};
use serde::{Deserialize, Serialize};

/// `[agent.delegation]`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct DelegationConfig {
    /// Children may delegate down to this depth; a child of this depth is not offered `delegate`.
    /// 0 turns delegation off.
    pub max_depth: u32,
    /// Children of one turn running at once.
    pub max_parallel: usize,
    /// Model calls one child may make before it is stopped (its partial answer goes back).
    pub max_iterations: u32,
    /// Longest a child may run, in seconds, before it is stopped (its partial answer goes back).
    pub timeout_secs: u64,
    /// Background tasks of one user running at once; more are refused with a message.
    pub max_background: usize,
}

impl Default for DelegationConfig {
    fn default() -> Self {
        Self { max_depth: 3, max_parallel: 4, max_iterations: 8, timeout_secs: 300, max_background: 100 }
    }
}

/// One `[[agent.archetypes]]`: a named kind of helper.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ArchetypeConfig {
    pub name: String,
    /// The model tier (`[llm.tiers.<tier>]`); default `worker`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tier: Option<String>,
    /// The tools it may have (intersected with the parent's and the call's); unset: the parent's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Its instructions, at the top of the child's system prompt.
    pub prompt: String,
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
}

/// The tier every helper runs on unless told otherwise; also the archivist's, compaction's and
/// the trigger classifier's when configured.
pub const WORKER_TIER: &str = "worker";
/// The everyday model: `[llm]` itself unless `[llm.tiers.chat]` says otherwise.
pub const CHAT_TIER: &str = "chat";
/// The tier names a call may use besides configured ones.
pub const KNOWN_TIERS: [&str; 3] = ["worker", "chat", "reasoning"];

impl LlmConfig {
    /// The `[llm]` a tier runs on: the tier's keys over `[llm]`'s (without `[llm]`'s tiers).
    /// `None` when no such tier is configured (callers fall back to `[llm]`).
    pub fn tier(&self, name: &str) -> Option<LlmConfig> {
        let t = self.tiers.get(name)?;
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
            input_price_per_mtok: t.input_price_per_mtok.unwrap_or(self.input_price_per_mtok),
            output_price_per_mtok: t.output_price_per_mtok.unwrap_or(self.output_price_per_mtok),
            cache_read_price_per_mtok: t.cache_read_price_per_mtok.unwrap_or(self.cache_read_price_per_mtok),
            cache_write_price_per_mtok: t.cache_write_price_per_mtok.unwrap_or(self.cache_write_price_per_mtok),
            fallback: t.fallback.clone().unwrap_or_else(|| self.fallback.clone()),
            tiers: Default::default(),
        })
    }

    /// The tier's `[llm]`, or `[llm]` itself when the tier is not configured.
    pub fn tier_or_main(&self, name: &str) -> LlmConfig {
        self.tier(name).unwrap_or_else(|| LlmConfig { tiers: Default::default(), ..self.clone() })
    }
}
