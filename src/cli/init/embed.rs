//! The embeddings question of `butler init`: recall by meaning is off unless the person says
//! yes; then the endpoint and model are asked (the chat model's endpoint and key suggested) and
//! checked with one real embedding request, asked again with the reason until one answers.
//!
//! It must never print a key, and never turn embeddings on without saying what leaves the
//! machine.

use super::ask::{self, Ended};
use super::file::{Embeddings, Stored};
use crate::config::{EmbeddingsConfig, LlmConfig, ProviderKind, Secret};
use crate::memory::embed::Embedder;
use std::time::Duration;

/// The suggested model: OpenAI's small one on OpenAI, Ollama's common one on a local server.
fn suggested_model(base: &str) -> &'static str {
    if base.contains(":11434") {
        "nomic-embed-text"
    } else {
        "text-embedding-3-small"
    }
}

/// `[memory.embeddings]`, if wanted. `llm` and `llm_key` are the chat model's answers.
pub(super) async fn ask(llm: &LlmConfig, llm_key: Option<&Stored>) -> Result<Option<Embeddings>, Ended> {
    println!(
        "\nRecall by meaning finds \"my sister's birthday\" in \"Anna turns 30 on May 4\". It sends each memory\n\
         and each chat message to an embedding model (your chat model's server, or a local one such as Ollama)."
    );
    if !ask::yes_no("Turn on recall by meaning?", false)? {
        return Ok(None);
    }
    let llm_base = match llm.provider {
        ProviderKind::Openai => crate::llm::base_url(llm),
        ProviderKind::Anthropic => "https://api.openai.com/v1".to_string(),
    };
    loop {
        let typed = ask::line(&format!("Embeddings base URL [{llm_base}]: "))?;
        let base = if typed.trim().is_empty() { llm_base.clone() } else { typed.trim().to_string() };
        let suggested = suggested_model(&base);
        let typed = ask::line(&format!("Embedding model [{suggested}]: "))?;
        let model = if typed.trim().is_empty() { suggested.to_string() } else { typed.trim().to_string() };
        // The chat model's key goes with the chat model's server.
        let same_server = llm.provider == ProviderKind::Openai && base == llm_base;
        let (key, stored) = match (same_server, llm_key) {
            (true, Some(stored)) => (llm.api_key.clone(), Some(stored.clone())),
            _ => {
                let typed = ask::secret("Embeddings API key (hidden; Enter for none): ")?;
                let stored = (!typed.is_empty()).then(|| Stored::Value(typed.clone()));
                ((!typed.is_empty()).then(|| Secret::new(typed)), stored)
            }
        };
        let cfg = EmbeddingsConfig { base_url: base.clone(), model: model.clone(), api_key: key, ..Default::default() };
        let embedder = Embedder::new(&cfg);
        match embedder.embed(&["hello".to_string()], Some(Duration::from_secs(30))).await {
            Ok(v) => {
                println!("✓ {model} embeds in {} dimensions", v.first().map_or(0, Vec::len));
                return Ok(Some(Embeddings { base_url: base, model, api_key: stored }));
            }
            Err(e) => {
                println!("✗ {e}");
                if !ask::yes_no("Try another endpoint or model?", true)? {
                    return Ok(None);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_suggested_model_fits_the_server() {
        let cases = [
            ("http://127.0.0.1:11434/v1", "nomic-embed-text"),
            ("https://api.openai.com/v1", "text-embedding-3-small"),
            ("http://127.0.0.1:8080/v1", "text-embedding-3-small"),
        ];
        for (base, want) in cases {
            assert_eq!(super::suggested_model(base), want, "{base}");
        }
    }
}
