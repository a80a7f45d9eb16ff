//! What an endpoint serves and where it is: `GET {base}/models` (OpenAI-compatible servers,
//! Ollama, vLLM, llama.cpp) or `GET {base}/v1/models` (Anthropic), and the base URL as it may
//! be shown. Used by `butler doctor`, `butler init` and the start-up message of a model set-up
//! without a model name.
//!
//! It must never log an API key or put one into an error or a shown URL.

use super::anthropic::ANTHROPIC_VERSION;
use super::errors::scrub;
use super::LlmError;
use crate::config::{LlmConfig, ProviderKind};
use std::time::Duration;

const OPENAI_DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
const ANTHROPIC_DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// The base URL `cfg` talks to (the provider's default when unset), as it may be shown: no
/// user or password, no trailing `/`.
pub fn base_url(cfg: &LlmConfig) -> String {
    display_url(raw_base(cfg))
}

fn raw_base(cfg: &LlmConfig) -> &str {
    resolved_base(cfg.provider, cfg.base_url.as_deref())
}

/// The provider's public API when no base URL is set.
pub fn default_base_url(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::Openai => OPENAI_DEFAULT_BASE_URL,
        ProviderKind::Anthropic => ANTHROPIC_DEFAULT_BASE_URL,
    }
}

/// `base_url` trimmed, or the provider's default when it is unset or blank.
pub(crate) fn resolved_base(kind: ProviderKind, base_url: Option<&str>) -> &str {
    base_url.map(str::trim).filter(|b| !b.is_empty()).unwrap_or(default_base_url(kind))
}

/// `openai` or `anthropic`.
pub fn provider_name(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::Openai => "openai",
        ProviderKind::Anthropic => "anthropic",
    }
}

/// The base URL without user or password.
pub(crate) fn display_url(base: &str) -> String {
    match reqwest::Url::parse(base) {
        Ok(mut url) => {
            if url.password().is_some() || !url.username().is_empty() {
                let _ = url.set_password(None);
                let _ = url.set_username("");
            }
            url.as_str().trim_end_matches('/').to_string()
        }
        Err(_) => base.trim_end_matches('/').to_string(),
    }
}

/// The model ids the endpoint of `cfg` lists, sorted, within `timeout`. A refused key is
/// [`LlmError::Auth`], an endpoint that cannot be reached [`LlmError::Unreachable`], anything
/// else (a server without the list) [`LlmError::BadRequest`].
pub async fn list_models(cfg: &LlmConfig, timeout: Duration) -> Result<Vec<String>, LlmError> {
    let base = raw_base(cfg).trim_end_matches('/');
    let shown = display_url(base);
    let key = cfg.api_key.as_ref().map(|k| k.expose().trim()).filter(|k| !k.is_empty());
    let url = match cfg.provider {
        ProviderKind::Openai => format!("{base}/models"),
        ProviderKind::Anthropic if base.ends_with("/v1") => format!("{base}/models"),
        ProviderKind::Anthropic => format!("{base}/v1/models"),
    };
    let client = reqwest::Client::builder()
        .timeout(timeout)
        .user_agent(concat!("butler/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| LlmError::BadRequest(format!("cannot build the HTTP client: {e}")))?;
    let mut rb = client.get(&url);
    match (cfg.provider, key) {
        (ProviderKind::Openai, Some(k)) => rb = rb.bearer_auth(k),
        (ProviderKind::Anthropic, k) => {
            rb = rb.header("anthropic-version", ANTHROPIC_VERSION);
            if let Some(k) = k {
                rb = rb.header("x-api-key", k);
            }
        }
        (ProviderKind::Openai, None) => {}
    }
    let result = async {
        let resp = rb.send().await.map_err(|e| {
            if e.is_timeout() {
                LlmError::Timeout(format!("{shown}/models did not answer within {}s", timeout.as_secs()))
            } else {
                LlmError::Unreachable(shown.clone())
            }
        })?;
        let status = resp.status().as_u16();
        if matches!(status, 401 | 403) {
            return Err(LlmError::Auth(format!("HTTP {status} from {shown}/models")));
        }
        if status != 200 {
            return Err(LlmError::BadRequest(format!("{shown} answered HTTP {status} to GET /models")));
        }
        let body: serde_json::Value = resp
            .json()
            .await
            .map_err(|_| LlmError::BadRequest(format!("{shown}/models did not answer with a model list")))?;
        Ok(model_ids(&body))
    }
    .await;
    result.map_err(|e| scrub(e, key.unwrap_or_default()))
}

/// The ids of a model list: OpenAI's and Anthropic's `{"data": [{"id": ...}]}`, or Ollama's
/// native `{"models": [{"name": ...}]}`; sorted and without repeats.
fn model_ids(body: &serde_json::Value) -> Vec<String> {
    let from = |list: &str, field: &str| {
        body[list]
            .as_array()
            .map(|a| a.iter().filter_map(|m| m[field].as_str().map(str::to_string)).collect::<Vec<_>>())
            .unwrap_or_default()
    };
    let mut ids = from("data", "id");
    ids.extend(from("models", "name"));
    ids.sort();
    ids.dedup();
    ids
}

/// The models as one line for a message: up to `max` names, then how many more.
pub fn model_list_line(models: &[String], max: usize) -> String {
    let mut line = models.iter().take(max).cloned().collect::<Vec<_>>().join(", ");
    if models.len() > max {
        line.push_str(&format!(" and {} more", models.len() - max));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn model_lists_of_each_shape_are_read() {
        let cases = [
            (json!({"object": "list", "data": [{"id": "b"}, {"id": "a"}]}), vec!["a", "b"]),
            (json!({"models": [{"name": "llama3.1:8b"}, {"name": "qwen"}]}), vec!["llama3.1:8b", "qwen"]),
            (json!({"data": [{"id": "x"}], "models": [{"name": "x"}]}), vec!["x"]),
            (json!({"error": "nope"}), vec![]),
        ];
        for (body, want) in cases {
            assert_eq!(model_ids(&body), want, "{body}");
        }
    }

    #[test]
    fn the_line_names_a_few_models_and_counts_the_rest() {
        let models: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        assert_eq!(model_list_line(&models, 5), "a, b, c");
        assert_eq!(model_list_line(&models, 2), "a, b and 1 more");
    }

    #[test]
    fn shown_urls_have_no_credentials() {
        assert_eq!(display_url("http://user:pw@127.0.0.1:8080/v1/"), "http://127.0.0.1:8080/v1");
        let cfg = LlmConfig { provider: ProviderKind::Anthropic, ..LlmConfig::default() };
        assert_eq!(base_url(&cfg), "https://api.anthropic.com");
    }
}
