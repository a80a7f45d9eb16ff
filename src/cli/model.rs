//! What the commands say about the model set-up: which provider, model and base URL, what is
//! missing (with the models the endpoint serves), and whether the base URL is Butler itself.
//!
//! Shared by `serve`, `chat` and `doctor`; it must never print a key (only the shown base URL,
//! which has no credentials) and never decide whether a command goes on.

use crate::config::{Config, LlmConfig};
use std::time::Duration;

/// How long listing the served models may take at start.
const LIST_TIMEOUT: Duration = Duration::from_secs(5);

/// `openai gpt-4o-mini at https://api.openai.com/v1`, or what is missing.
pub(super) fn describe(llm: &LlmConfig) -> String {
    let provider = crate::llm::provider_name(llm.provider);
    let base = crate::llm::base_url(llm);
    if llm.model.trim().is_empty() {
        if has_endpoint(llm) {
            return format!("{provider}, no model name, at {base}");
        }
        return "not configured".to_string();
    }
    format!("{provider} {} at {base}", llm.model)
}

/// The file or the environment named an endpoint (a base URL; a key alone counts as nothing
/// configured, as in `llm::from_config`).
fn has_endpoint(llm: &LlmConfig) -> bool {
    llm.base_url.as_deref().is_some_and(|b| !b.trim().is_empty())
}

/// What is wrong with the model set-up before any call, with the served models when an
/// endpoint is set without a model name; `None` when a model is named.
pub(super) async fn setup_problem(llm: &LlmConfig) -> Option<String> {
    if !llm.model.trim().is_empty() {
        return None;
    }
    if !has_endpoint(llm) {
        return Some(crate::llm::LlmError::NotConfigured.to_string());
    }
    let missing = crate::llm::LlmError::MissingModel(crate::llm::base_url(llm)).to_string();
    Some(format!("{missing}. {}", served_sentence(llm).await))
}

/// `It serves: a, b.` or why the list could not be had.
pub(super) async fn served_sentence(llm: &LlmConfig) -> String {
    match crate::llm::list_models(llm, LIST_TIMEOUT).await {
        Ok(models) if models.is_empty() => "It lists no models (GET /models).".to_string(),
        Ok(models) => format!("It serves: {}.", crate::llm::model_list_line(&models, 20)),
        Err(e) => format!("Its model list (GET /models) could not be read: {e}."),
    }
}

/// The warning when `[llm] base_url` is Butler's own listen address (its `/v1` API would
/// answer with Butler, which would call itself).
pub(super) fn points_at_butler(cfg: &Config) -> Option<String> {
    let base = cfg.llm.base_url.as_deref()?;
    let url = reqwest::Url::parse(base.trim()).ok()?;
    let (host, port) = (url.host_str()?.trim_matches(['[', ']']).to_string(), url.port_or_known_default()?);
    let listen: std::net::SocketAddr = cfg.server.listen.parse().ok()?;
    if listen.port() != port {
        return None;
    }
    let local =
        |h: &str| h.eq_ignore_ascii_case("localhost") || h.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
    let same = match host.parse::<std::net::IpAddr>() {
        Ok(ip) if ip == listen.ip() => true,
        _ => listen.ip().is_unspecified() && local(&host) || listen.ip().is_loopback() && local(&host),
    };
    same.then(|| {
        format!(
            "[llm] base_url {} is Butler's own address ([server] listen = {}); Butler would talk to itself. Point it \
             at the model server (OpenAI, Ollama on :11434, vLLM, llama.cpp)",
            crate::llm::base_url(&cfg.llm),
            cfg.server.listen
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base_url_at_butlers_own_address_is_noticed() {
        let cases = [
            ("127.0.0.1:8080", "http://127.0.0.1:8080/v1", true),
            ("127.0.0.1:8080", "http://localhost:8080/v1", true),
            ("0.0.0.0:8080", "http://127.0.0.1:8080/v1", true),
            ("[::1]:8080", "http://[::1]:8080/v1", true),
            ("127.0.0.1:8080", "http://127.0.0.1:11434/v1", false),
            ("127.0.0.1:80", "https://api.openai.com/v1", false),
            ("127.0.0.1:8080", "http://192.0.2.7:8080/v1", false),
        ];
        for (listen, base, want) in cases {
            let mut cfg = Config::default();
            cfg.server.listen = listen.into();
            cfg.llm.base_url = Some(base.into());
            assert_eq!(points_at_butler(&cfg).is_some(), want, "{listen} {base}");
        }
    }

    #[test]
    fn the_set_up_is_described_without_the_key() {
        let mut llm = LlmConfig::default();
        assert_eq!(describe(&llm), "not configured");
        llm.base_url = Some("http://u:pw@127.0.0.1:11434/v1".into());
        assert_eq!(describe(&llm), "openai, no model name, at http://127.0.0.1:11434/v1");
        llm.model = "llama3.1".into();
        llm.api_key = Some(crate::config::Secret::new("sk-secret"));
        assert_eq!(describe(&llm), "openai llama3.1 at http://127.0.0.1:11434/v1");
    }
}
