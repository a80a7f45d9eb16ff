//! The LLM from the conventional environment variables, used only when the configuration (file
//! and overrides) leaves `llm.model`, `llm.api_key` and `llm.base_url` all unset:
//!
//! 1. `OPENAI_API_KEY` and/or `OPENAI_BASE_URL` set: provider `openai`, with those, and the model
//!    from `BUTLER_MODEL`, else `gpt-4o-mini` when a key is set. `OPENAI_BASE_URL` plus
//!    `BUTLER_MODEL` without a key is fine for local servers (Ollama, vLLM, llama.cpp).
//! 2. Else `ANTHROPIC_API_KEY` and/or `ANTHROPIC_BASE_URL`: provider `anthropic`, model from
//!    `BUTLER_MODEL`, else `claude-sonnet-4-5` when a key is set.
//!
//! Empty variables count as unset. When the file sets `llm.provider`, only that provider's
//! variables are used. `BUTLER_MODEL` alone configures nothing; when the file or an override
//! (`BUTLER_LLM__BASE_URL`, `BUTLER_LLM__API_KEY`) sets the endpoint but no model, it names the
//! model. This must never log a key.

use super::super::{LlmConfig, ProviderKind, Secret};
use super::env::Env;

/// Model used with `OPENAI_API_KEY` when `BUTLER_MODEL` is not set.
pub const DEFAULT_OPENAI_MODEL: &str = "gpt-4o-mini";
/// Model used with `ANTHROPIC_API_KEY` when `BUTLER_MODEL` is not set.
pub const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";

/// Fills `llm` from `env` as described in the module docs. `provider_set`: the file or an
/// override named `llm.provider`.
pub(super) fn apply_defaults(llm: &mut LlmConfig, provider_set: bool, env: &Env) {
    if !llm.model.is_empty() {
        return;
    }
    if llm.api_key.is_some() || llm.base_url.is_some() {
        if let Some(model) = env.non_empty("BUTLER_MODEL") {
            llm.model = model.to_string();
        }
        return;
    }
    let candidates = [
        (ProviderKind::Openai, "OPENAI_API_KEY", "OPENAI_BASE_URL", DEFAULT_OPENAI_MODEL),
        (ProviderKind::Anthropic, "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", DEFAULT_ANTHROPIC_MODEL),
    ];
    for (provider, key_var, url_var, default_model) in candidates {
        if provider_set && llm.provider != provider {
            continue;
        }
        let key = env.non_empty(key_var);
        let base_url = env.non_empty(url_var);
        if key.is_none() && base_url.is_none() {
            continue;
        }
        llm.provider = provider;
        llm.api_key = key.map(Secret::new);
        llm.base_url = base_url.map(str::to_string);
        llm.model = match (env.non_empty("BUTLER_MODEL"), key) {
            (Some(model), _) => model.to_string(),
            (None, Some(_)) => default_model.to_string(),
            (None, None) => String::new(),
        };
        return;
    }
}
