//! The price book shipped with Butler (`book.toml`, compiled in): list prices of the common
//! hosted models, found by model name the way people and routers spell it (`gpt-4o-2024-08-06`,
//! `anthropic/claude-3.5-sonnet`, `mistral-large-latest`, `deepseek/deepseek-chat:free`).
//!
//! Data and lookups only: it must never read the network or a file at run time, and the
//! config's prices are applied over it elsewhere ([`super::PriceBook`]).

use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::OnceLock;

const BOOK: &str = include_str!("book.toml");

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    input: f64,
    output: f64,
    #[serde(default)]
    cache_read: f64,
    #[serde(default)]
    cache_write: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    models: BTreeMap<String, Entry>,
}

/// One entry's US dollars per million tokens, by kind (`super::Prices` is built from it).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Rates {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

/// The shipped entries by normalized name.
fn entries() -> &'static BTreeMap<String, Rates> {
    static PARSED: OnceLock<BTreeMap<String, Rates>> = OnceLock::new();
    PARSED.get_or_init(|| {
        // The file is compiled in and a unit test parses it: failing here is a build defect.
        let file: File = toml::from_str(BOOK).unwrap_or_else(|e| panic!("src/llm/book.toml: {e}"));
        file.models
            .into_iter()
            .map(|(name, e)| {
                let rates =
                    Rates { input: e.input, output: e.output, cache_read: e.cache_read, cache_write: e.cache_write };
                (normalize(&name), rates)
            })
            .collect()
    })
}

/// The line of the book that says where its prices come from and when they were read.
pub fn source() -> &'static str {
    BOOK.lines().find_map(|l| l.strip_prefix("# source: ")).unwrap_or("unknown")
}

/// A model name as the book keys it: lower case, no `vendor/` prefix, no `:tag`, dots as dashes.
fn normalize(model: &str) -> String {
    let name = model.trim().to_ascii_lowercase();
    let name = name.rsplit('/').next().unwrap_or(&name);
    let name = name.split(':').next().unwrap_or(name);
    name.replace('.', "-")
}

/// The book's prices for `model`: the longest entry that is its whole normalized name or its
/// start followed by `-` (a date or version suffix). An OpenRouter `:free` model costs 0.
/// `None`: the book does not know it.
pub fn lookup(model: &str) -> Option<Rates> {
    if model.trim().to_ascii_lowercase().ends_with(":free") {
        return Some(Rates::default());
    }
    let name = normalize(model);
    if name.is_empty() {
        return None;
    }
    entries()
        .iter()
        .filter(|(key, _)| name.strip_prefix(key.as_str()).is_some_and(|rest| rest.is_empty() || rest.starts_with('-')))
        .max_by_key(|(key, _)| key.len())
        .map(|(_, prices)| *prices)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_book_parses_and_every_entry_is_priced() {
        let all = entries();
        assert!(all.len() >= 40, "{} entries", all.len());
        for (name, p) in all {
            assert!(p.input > 0.0 && p.output > 0.0, "{name}: {p:?}");
            assert!(p.output >= p.input || name.starts_with("ministral"), "{name}: output is dearer: {p:?}");
        }
        assert!(source().contains("20"), "the source line carries a date: {}", source());
    }

    #[test]
    fn models_are_found_the_way_people_and_routers_name_them() {
        // (model name as configured or answered, (input, output) or None)
        let cases: &[(&str, Option<(f64, f64)>)] = &[
            ("gpt-4o", Some((2.5, 10.0))),
            ("gpt-4o-2024-08-06", Some((2.5, 10.0))),
            ("gpt-4o-mini", Some((0.15, 0.6))),
            ("gpt-4o-mini-2024-07-18", Some((0.15, 0.6))),
            ("GPT-4.1", Some((2.0, 8.0))),
            ("gpt-4.1-mini", Some((0.4, 1.6))),
            ("openai/gpt-4.1-nano", Some((0.1, 0.4))),
            ("claude-3-5-sonnet-20241022", Some((3.0, 15.0))),
            ("anthropic/claude-3.5-sonnet", Some((3.0, 15.0))),
            ("claude-sonnet-4-5-20250929", Some((3.0, 15.0))),
            ("anthropic/claude-sonnet-4.5", Some((3.0, 15.0))),
            ("claude-opus-4-1-20250805", Some((15.0, 75.0))),
            ("claude-haiku-4-5", Some((1.0, 5.0))),
            ("gemini-2.5-flash", Some((0.3, 2.5))),
            ("google/gemini-2.5-flash-lite", Some((0.1, 0.4))),
            ("gemini-2.5-pro-preview-06-05", Some((1.25, 10.0))),
            ("mistral-large-latest", Some((2.0, 6.0))),
            ("mistralai/mistral-small-3.1-24b-instruct", Some((0.1, 0.3))),
            ("deepseek-chat", Some((0.28, 0.42))),
            ("deepseek/deepseek-chat-v3.1", Some((0.28, 0.42))),
            ("o3", Some((2.0, 8.0))),
            ("o3-mini-2025-01-31", Some((1.1, 4.4))),
            ("o4-mini", Some((1.1, 4.4))),
            ("deepseek/deepseek-chat:free", Some((0.0, 0.0))),
            // Not in the book: local and unknown models, and names that only look alike.
            ("llama3.1", None),
            ("qwen2.5:7b", None),
            ("gpt-4o1", None),
            ("o30", None),
            ("", None),
            ("fake-model", None),
        ];
        for (model, want) in cases {
            let got = lookup(model).map(|p| (p.input, p.output));
            assert_eq!(got, *want, "{model:?}");
        }
    }

    #[test]
    fn anthropic_entries_price_cache_writes_and_reads() {
        let p = lookup("claude-sonnet-4-5").unwrap();
        assert_eq!((p.cache_read, p.cache_write), (0.3, 3.75));
        assert_eq!(lookup("gpt-4o").unwrap().cache_write, 0.0);
    }
}
