//! `[llm.tiers.<name>]` and the fallbacks' prices: a tier parses, takes every unset key from
//! `[llm]`, inherits `[llm]`'s API key only while it talks to the same endpoint, and can be set
//! from the environment; bad values name their key.

use super::parse;
use crate::config::{ConfigError, ProviderKind, Secret};

const MAIN: &str = r#"
[llm]
provider = "openai"
base_url = "https://api.openai.com/v1"
api_key = "sk-main"
model = "gpt-4o"
max_tokens = 2000
context_window = 100000
input_price_per_mtok = 2.5
"#;

#[test]
fn a_tier_is_its_own_keys_over_llm() {
    // (tier section, env, want (provider, base_url, api_key, model, max_tokens, context_window, input price))
    type Want = (ProviderKind, &'static str, Option<&'static str>, &'static str, u32, u32, Option<f64>);
    let openai = "https://api.openai.com/v1";
    let cases: &[(&str, super::Vars, Want)] = &[
        (
            "[llm.tiers.worker]\nmodel = \"gpt-4o-mini\"\ninput_price_per_mtok = 0.15",
            &[],
            (ProviderKind::Openai, openai, Some("sk-main"), "gpt-4o-mini", 2000, 100_000, Some(0.15)),
        ),
        (
            "[llm.tiers.worker]\nmax_tokens = 500\ncontext_window = 16000",
            &[],
            (ProviderKind::Openai, openai, Some("sk-main"), "gpt-4o", 500, 16_000, Some(2.5)),
        ),
        // Another endpoint: the main key is not sent there. A tier with its own model never
        // takes [llm]'s prices (another model's): unset, the price book prices it.
        (
            "[llm.tiers.worker]\nbase_url = \"http://127.0.0.1:11434/v1\"\nmodel = \"llama3.1\"",
            &[],
            (ProviderKind::Openai, "http://127.0.0.1:11434/v1", None, "llama3.1", 2000, 100_000, None),
        ),
        (
            "[llm.tiers.worker]\nprovider = \"anthropic\"\nmodel = \"claude-haiku\"",
            &[],
            (ProviderKind::Anthropic, openai, None, "claude-haiku", 2000, 100_000, None),
        ),
        (
            "[llm.tiers.worker]\nprovider = \"anthropic\"\nmodel = \"claude-haiku\"\napi_key = \"sk-ant\"",
            &[],
            (ProviderKind::Anthropic, openai, Some("sk-ant"), "claude-haiku", 2000, 100_000, None),
        ),
        // The same endpoint named again keeps the key.
        (
            "[llm.tiers.worker]\nbase_url = \"https://api.openai.com/v1\"\nprovider = \"openai\"",
            &[],
            (ProviderKind::Openai, openai, Some("sk-main"), "gpt-4o", 2000, 100_000, Some(2.5)),
        ),
        // From the environment, with or without a section in the file.
        (
            "",
            &[("BUTLER_LLM__TIERS__WORKER__MODEL", "env-small"), ("BUTLER_LLM__TIERS__WORKER__MAX_TOKENS", "300")],
            (ProviderKind::Openai, openai, Some("sk-main"), "env-small", 300, 100_000, None),
        ),
        (
            "[llm.tiers.worker]\nmodel = \"file-small\"",
            &[("BUTLER_LLM__TIERS__WORKER__MODEL", "env-small")],
            (ProviderKind::Openai, openai, Some("sk-main"), "env-small", 2000, 100_000, None),
        ),
    ];
    for (section, vars, want) in cases {
        let text = format!("{MAIN}{section}\n");
        let config = parse(&text, vars).unwrap_or_else(|e| panic!("{section}: {e}"));
        config.validate().unwrap_or_else(|e| panic!("{section}: {e}"));
        let t = config.llm.tier("worker").expect("the worker tier");
        let got = (
            t.provider,
            t.base_url.as_deref().unwrap_or_default(),
            t.api_key.as_ref().map(Secret::expose),
            t.model.as_str(),
            t.max_tokens,
            t.context_window,
            t.input_price_per_mtok,
        );
        assert_eq!(got, *want, "{section} {vars:?}");
        assert!(t.tiers.is_empty(), "a tier has no tiers of its own");
        assert!(config.llm.tier("reasoning").is_none(), "only configured tiers exist");
        assert_eq!(config.llm.tier_or_main("reasoning").model, "gpt-4o");
    }
}

#[test]
fn fallback_prices_parse_and_default_to_unknown() {
    let text = format!(
        "{MAIN}[[llm.fallback]]\nprovider = \"anthropic\"\nmodel = \"claude\"\ninput_price_per_mtok = 3.0\n\
         cache_write_price_per_mtok = 3.75\n[[llm.fallback]]\nprovider = \"openai\"\nmodel = \"local\"\n"
    );
    let config = parse(&text, &[("BUTLER_LLM__FALLBACK__1__OUTPUT_PRICE_PER_MTOK", "0.5")]).unwrap();
    config.validate().unwrap();
    let got: Vec<_> = config
        .llm
        .fallback
        .iter()
        .map(|f| (f.model.as_str(), f.input_price_per_mtok, f.output_price_per_mtok, f.cache_write_price_per_mtok))
        .collect();
    assert_eq!(got, [("claude", Some(3.0), None, Some(3.75)), ("local", None, Some(0.5), None)]);
}

#[test]
fn bad_tier_and_fallback_values_name_their_key() {
    // (file after [llm], the key of the one problem)
    let cases: &[(&str, &str)] = &[
        ("[llm.tiers.worker]\nbase_url = \"api.example.com/v1\"", "llm.tiers.worker.base_url"),
        ("[llm.tiers.worker]\nmodel = \" \"", "llm.tiers.worker.model"),
        ("[llm.tiers.worker]\noutput_price_per_mtok = -1.0", "llm.tiers.worker.output_price_per_mtok"),
        ("[llm.tiers.worker]\nmax_tokens = 0", "llm.tiers.worker.max_tokens"),
        ("[llm.tiers.worker]\nidle_timeout_secs = 0", "llm.tiers.worker.idle_timeout_secs"),
        ("[llm.tiers.worker]\ncontext_window = 1000", "llm.tiers.worker.max_tokens"),
        ("[llm.tiers.\"bad name\"]\nmodel = \"m\"", "llm.tiers.bad name"),
        ("[[llm.tiers.worker.fallback]]\nprovider = \"openai\"\nmodel = \"\"", "llm.tiers.worker.fallback[0].model"),
        (
            "[[llm.fallback]]\nprovider = \"openai\"\nmodel = \"m\"\ninput_price_per_mtok = -0.5",
            "llm.fallback[0].input_price_per_mtok",
        ),
        (
            "[[llm.fallback]]\nprovider = \"openai\"\nmodel = \"m\"\ncache_read_price_per_mtok = nan",
            "llm.fallback[0].cache_read_price_per_mtok",
        ),
    ];
    for (section, key) in cases {
        let text = format!("{MAIN}{section}\n");
        let config = parse(&text, &[]).unwrap_or_else(|e| panic!("{section}: {e}"));
        match config.validate() {
            Err(ConfigError::Invalid { problems, .. }) => {
                let keys: Vec<&str> = problems.iter().map(|p| p.key.as_str()).collect();
                assert_eq!(keys, [*key], "{section}");
            }
            other => panic!("{section}: got {other:?}, want a problem at {key}"),
        }
    }
    // An unknown key in a tier is refused by name.
    let err = parse(&format!("{MAIN}[llm.tiers.worker]\nmodle = \"x\"\n"), &[]).unwrap_err().to_string();
    assert!(err.contains("modle"), "{err}");
}
