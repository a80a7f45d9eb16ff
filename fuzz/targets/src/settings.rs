//! Text an operator (or anyone who can write a skills folder) gives Butler: the config file and
//! a SKILL.md.
//!
//! The config body reads with a fixed environment (never the process's), so an input means the
//! same thing everywhere; it must never touch more of the disk than the checks' own looks at the
//! folders a config names.

use butler::config::{parse_str, Env};
use butler::skills::parse::{check_name, parse_bytes, ParseError, MAX_ALLOWED_TOOLS, MAX_DESCRIPTION, MAX_NAME};

/// The config file: parsed (with `${VAR}` interpolation and `BUTLER_*` overrides from a fixed
/// environment), every check run, then printed masked as `butler config check` does. The masked
/// print must be TOML again (replicas compare configs by parsing it).
pub fn config_toml(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let env = Env::from_pairs([
        ("FUZZ_TOKEN", "fuzz-canary-token-0123456789"),
        ("BUTLER_DATA_DIR", "/nonexistent/butler-fuzz"),
        ("BUTLER_LLM__TIMEOUT_SECS", "30"),
    ]);
    let Ok(cfg) = parse_str(text, "fuzz.toml", &env) else { return };
    let _ = butler::app::check_config(&cfg);
    let masked = cfg.to_masked_toml();
    if let Err(e) = masked.parse::<toml::Table>() {
        panic!("the masked config is not TOML ({e}):\n{masked}");
    }
    let _ = cfg.section_digests();
}

/// A SKILL.md: read in a folder of another name first, then (when that is the only problem) in
/// a folder of its own name, so the whole file is read.
pub fn skill_md(data: &[u8]) {
    let parsed = match parse_bytes(data, "fuzz-skill") {
        Err(ParseError::NameMismatch { name, .. }) => parse_bytes(data, &name),
        other => other,
    };
    let Ok(skill) = parsed else { return };
    assert!(check_name(&skill.name).is_ok() && skill.name.chars().count() <= MAX_NAME, "name {:?}", skill.name);
    assert!(!skill.description.is_empty() && skill.description.chars().count() <= MAX_DESCRIPTION);
    if let Some(tools) = &skill.allowed_tools {
        assert!(tools.len() <= MAX_ALLOWED_TOOLS);
        assert!(tools.iter().all(|t| !t.is_empty() && t.chars().count() <= 64), "{tools:?}");
    }
}
