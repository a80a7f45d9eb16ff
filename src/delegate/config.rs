//! The rules of `[agent.delegation]` and `[[agent.archetypes]]`: each problem names its key and
//! says what to do.

use crate::config::{Config, Problems, KNOWN_TIERS};
use crate::permissions::glob_match;
use std::collections::BTreeSet;

/// Adds a problem for each bad value of `[agent.delegation]` and `[[agent.archetypes]]`.
pub fn check_config(cfg: &Config, p: &mut Problems) {
    let d = &cfg.agent.delegation;
    if d.max_depth > 8 {
        p.add("agent.delegation.max_depth", "must be 8 or less (0 turns delegation off); the default is 3");
    }
    p.positive("agent.delegation.max_parallel", d.max_parallel);
    p.positive("agent.delegation.max_iterations", d.max_iterations);
    p.positive("agent.delegation.timeout_secs", d.timeout_secs);
    p.positive("agent.delegation.max_background", d.max_background);
    if d.max_model_calls_per_message == 0 {
        p.add(
            "agent.delegation.max_model_calls_per_message",
            "must be more than 0 (it caps the model calls one message may cause, helpers included); the default is 200",
        );
    }
    if d.max_helpers_per_message == 0 {
        p.add(
            "agent.delegation.max_helpers_per_message",
            "must be more than 0 (to turn helpers off, set max_depth = 0); the default is 32",
        );
    }
    let mut seen = BTreeSet::new();
    for (i, a) in cfg.agent.archetypes.iter().enumerate() {
        let key = |k: &str| format!("agent.archetypes[{i}].{k}");
        let name_ok = !a.name.is_empty()
            && a.name.len() <= 64
            && a.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !name_ok {
            p.add(key("name"), "must be 1-64 letters, digits, `_` or `-` (e.g. researcher)");
        } else if !seen.insert(a.name.as_str()) {
            p.add(key("name"), format!("`{}` is used by an earlier archetype; names must be unique", a.name));
        }
        if a.prompt.trim().is_empty() {
            p.add(key("prompt"), "must say what this kind of helper does (its instructions)");
        }
        if let Some(tier) = &a.tier {
            if !cfg.llm.tiers.contains_key(tier) && !KNOWN_TIERS.contains(&tier.as_str()) {
                p.add(
                    key("tier"),
                    format!("`{tier}` is not a tier: use worker, chat, reasoning or a name under [llm.tiers]"),
                );
            }
        }
        if let Some(tools) = &a.tools {
            if tools.iter().any(|t| t.trim().is_empty()) {
                p.add(key("tools"), "a tool name must not be empty");
            }
        }
    }
}

/// The warnings about `[[agent.archetypes]] tools`: an entry (a name or a glob: `*`, `?`,
/// `[a-z]`) that matches none of the agent's own tools (`own`) and cannot name a configured MCP
/// server's (`<server>__<tool>`, or a pattern starting with a wildcard while a server is
/// configured) gives that helper nothing, which is almost always a typo. Each names its key.
pub fn archetype_tool_warnings(cfg: &Config, own: &[String]) -> Vec<String> {
    let servers: Vec<String> = cfg.mcp.servers.iter().map(|s| format!("{}__", s.name)).collect();
    let mut out = Vec::new();
    for (i, a) in cfg.agent.archetypes.iter().enumerate() {
        for (k, entry) in a.tools.iter().flatten().enumerate() {
            let own_hit = own.iter().any(|t| glob_match(entry, t));
            let mcp_hit = servers.iter().any(|prefix| entry.starts_with(prefix.as_str()))
                || (!servers.is_empty() && entry.starts_with(['*', '?', '[']));
            if !own_hit && !mcp_hit {
                let mut names: Vec<&str> = own.iter().map(String::as_str).collect();
                names.sort();
                out.push(format!(
                    "agent.archetypes[{i}].tools[{k}]: `{entry}` matches no tool, so `{}` helpers never get it; \
                     the tools are {}{}",
                    a.name,
                    names.join(", "),
                    if servers.is_empty() { "" } else { ", and each MCP server's as <server>__<tool>" },
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ArchetypeConfig, Config};

    /// The keys of every problem of `cfg` (config's own checks and this one).
    fn problems(cfg: &Config) -> Vec<String> {
        let owners = crate::config::OwnerChecks { delegation: check_config, ..crate::config::OwnerChecks::NONE };
        match cfg.validate_with(&owners) {
            Ok(()) => vec![],
            Err(crate::config::ConfigError::Invalid { problems, .. }) => problems.into_iter().map(|p| p.key).collect(),
            Err(e) => panic!("unexpected {e}"),
        }
    }

    fn archetype(name: &str, tier: Option<&str>, prompt: &str) -> ArchetypeConfig {
        ArchetypeConfig { name: name.into(), tier: tier.map(String::from), tools: None, prompt: prompt.into() }
    }

    #[test]
    fn bad_values_name_their_key() {
        type Tune = fn(&mut Config);
        let cases: Vec<(Tune, Vec<&str>)> = vec![
            (|_| {}, vec![]),
            (|c| c.agent.delegation.max_depth = 9, vec!["agent.delegation.max_depth"]),
            (|c| c.agent.delegation.max_depth = 0, vec![]),
            (|c| c.agent.delegation.max_parallel = 0, vec!["agent.delegation.max_parallel"]),
            (|c| c.agent.delegation.timeout_secs = 0, vec!["agent.delegation.timeout_secs"]),
            (
                |c| c.agent.delegation.max_model_calls_per_message = 0,
                vec!["agent.delegation.max_model_calls_per_message"],
            ),
            (|c| c.agent.delegation.max_helpers_per_message = 0, vec!["agent.delegation.max_helpers_per_message"]),
            (|c| c.agent.delegation.max_model_calls_per_message = 1, vec![]),
            (|c| c.agent.archetypes = vec![archetype("a b", None, "p")], vec!["agent.archetypes[0].name"]),
            (
                |c| c.agent.archetypes = vec![archetype("r", None, "p"), archetype("r", None, "p")],
                vec!["agent.archetypes[1].name"],
            ),
            (|c| c.agent.archetypes = vec![archetype("r", None, " ")], vec!["agent.archetypes[0].prompt"]),
            (|c| c.agent.archetypes = vec![archetype("r", Some("huge"), "p")], vec!["agent.archetypes[0].tier"]),
            (|c| c.agent.archetypes = vec![archetype("r", Some("reasoning"), "p")], vec![]),
        ];
        for (i, (tune, want)) in cases.into_iter().enumerate() {
            let mut cfg = Config::default();
            tune(&mut cfg);
            assert_eq!(problems(&cfg), want, "case {i}");
        }
    }

    #[test]
    fn archetype_tools_that_match_nothing_are_named() {
        let own: Vec<String> = ["now", "recall", "web_fetch", "web_search", "file_read"].map(String::from).to_vec();
        // (archetype tools, MCP servers, warned entries)
        type Case = (&'static [&'static str], &'static [&'static str], &'static [&'static str]);
        let cases: &[Case] = &[
            (&["now", "recall"], &[], &[]),
            (&["web_*"], &[], &[]),
            (&["file_?ead"], &[], &[]),
            (&["web_serch"], &[], &["web_serch"]),
            (&["now", "shel*", "recal"], &[], &["shel*", "recal"]),
            (&["github__*"], &[], &["github__*"]),
            (&["github__*", "github__issues"], &["github"], &[]),
            (&["gitlab__*"], &["github"], &["gitlab__*"]),
            (&["*search*"], &["github"], &[]),
            (&["*calendar*"], &[], &["*calendar*"]),
        ];
        for (tools, servers, warned) in cases {
            let mut cfg = Config::default();
            let mut a = archetype("scout", None, "p");
            a.tools = Some(tools.iter().map(|t| t.to_string()).collect());
            cfg.agent.archetypes = vec![a];
            cfg.mcp.servers = servers
                .iter()
                .map(|n| crate::config::McpServerConfig { name: n.to_string(), ..Default::default() })
                .collect();
            let got = archetype_tool_warnings(&cfg, &own);
            assert_eq!(got.len(), warned.len(), "{tools:?}: {got:#?}");
            for (line, entry) in got.iter().zip(*warned) {
                let k = tools.iter().position(|t| t == entry).unwrap();
                assert!(
                    line.starts_with(&format!("agent.archetypes[0].tools[{k}]: `{entry}` matches no tool")),
                    "{line}"
                );
                assert!(line.contains("`scout` helpers never get it") && line.contains("now, recall"), "{line}");
            }
        }
    }
}
