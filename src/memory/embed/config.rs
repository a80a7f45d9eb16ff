//! The rules of `[memory.embeddings]`: an http(s) base URL, a model name, sane sizes.
//!
//! Checks only: this file must never contact the service or print the API key.

use crate::config::{Config, Problems};

/// Adds a problem per bad `[memory.embeddings]` value.
pub fn check_config(cfg: &Config, p: &mut Problems) {
    let Some(e) = &cfg.memory.embeddings else {
        return;
    };
    let url = e.base_url.trim();
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        p.add(
            "memory.embeddings.base_url",
            "must be an http(s) URL of an OpenAI-compatible API, e.g. https://api.openai.com/v1 or http://127.0.0.1:11434/v1 (Ollama)",
        );
    }
    if e.model.trim().is_empty() {
        p.add(
            "memory.embeddings.model",
            "must name an embedding model, e.g. text-embedding-3-small or nomic-embed-text",
        );
    }
    if let Some(d) = e.dimensions {
        if !(8..=8192).contains(&d) {
            p.add("memory.embeddings.dimensions", "must be between 8 and 8192, or left out to take the model's own");
        }
    }
    if !(1..=2048).contains(&e.batch_size) {
        p.add("memory.embeddings.batch_size", "must be between 1 and 2048 (the default is 64)");
    }
    if !(-1.0..=1.0).contains(&e.min_similarity) {
        p.add("memory.embeddings.min_similarity", "must be a cosine similarity between -1 and 1 (the default is 0.3)");
    }
    if e.timeout_secs == 0 {
        p.add("memory.embeddings.timeout_secs", "must be at least 1");
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{Config, EmbeddingsConfig, Problems};

    #[test]
    fn each_bad_value_is_named() {
        let good = EmbeddingsConfig { base_url: "http://127.0.0.1:11434/v1".into(), ..EmbeddingsConfig::default() };
        let cases: Vec<(EmbeddingsConfig, &[&str])> = vec![
            (good.clone(), &[]),
            (EmbeddingsConfig { base_url: "127.0.0.1:11434".into(), ..good.clone() }, &["memory.embeddings.base_url"]),
            (EmbeddingsConfig { model: " ".into(), ..good.clone() }, &["memory.embeddings.model"]),
            (EmbeddingsConfig { dimensions: Some(4), ..good.clone() }, &["memory.embeddings.dimensions"]),
            (EmbeddingsConfig { dimensions: Some(1536), ..good.clone() }, &[]),
            (EmbeddingsConfig { batch_size: 0, ..good.clone() }, &["memory.embeddings.batch_size"]),
            (EmbeddingsConfig { min_similarity: 2.0, ..good.clone() }, &["memory.embeddings.min_similarity"]),
            (EmbeddingsConfig { timeout_secs: 0, ..good.clone() }, &["memory.embeddings.timeout_secs"]),
        ];
        for (e, want) in cases {
            let mut cfg = Config::default();
            cfg.memory.embeddings = Some(e.clone());
            let mut p = Problems::default();
            super::check_config(&cfg, &mut p);
            let keys: Vec<String> =
                p.into_lines().iter().map(|l| l.split(':').next().unwrap_or_default().to_string()).collect();
            assert_eq!(keys, *want, "{e:?}");
        }
    }
}
