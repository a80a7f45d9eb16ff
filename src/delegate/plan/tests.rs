//! The plan of a `delegate` call, as a table: tier choice, tool intersection, depth, errors.

use super::*;
use crate::config::{AgentConfig, ArchetypeConfig};

fn agent(max_depth: u32) -> AgentConfig {
    let mut a = AgentConfig::default();
    a.delegation.max_depth = max_depth;
    a.archetypes = vec![
        ArchetypeConfig {
            name: "researcher".into(),
            tier: None,
            tools: Some(vec!["web_fetch".into(), "http_get".into(), "memory_search".into(), "delegate".into()]),
            prompt: "You research and report facts with sources.".into(),
        },
        ArchetypeConfig {
            name: "thinker".into(),
            tier: Some("reasoning".into()),
            tools: None,
            prompt: "Think.".into(),
        },
        ArchetypeConfig {
            name: "scout".into(),
            tier: None,
            tools: Some(vec!["many__*".into(), "n?w".into()]),
            prompt: "Look around.".into(),
        },
    ];
    a
}

fn args(v: serde_json::Value) -> DelegateArgs {
    serde_json::from_value(v).unwrap()
}

#[test]
fn plans_table() {
    let parent: Vec<String> = ["delegate", "http_get", "many__a", "many__b", "now", "shell", "web_fetch"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    // (call, depth, max_depth) -> (tier, tools) or error
    type Want = Result<(&'static str, Vec<&'static str>), PlanError>;
    let cases: Vec<(serde_json::Value, u32, u32, Want)> = vec![
        (
            json!({"task": "t"}),
            0,
            3,
            Ok(("worker", vec!["delegate", "http_get", "many__a", "many__b", "now", "shell", "web_fetch"])),
        ),
        // The archetype's tools intersect the parent's (memory_search is not the parent's).
        (
            json!({"task": "t", "archetype": "researcher"}),
            0,
            3,
            Ok(("worker", vec!["delegate", "http_get", "web_fetch"])),
        ),
        // The call's tools intersect both.
        (
            json!({"task": "t", "archetype": "researcher", "tools": ["web_fetch", "shell"]}),
            0,
            3,
            Ok(("worker", vec!["web_fetch"])),
        ),
        // An archetype's entries are globs (an MCP server's tools by `<server>__*`).
        (json!({"task": "t", "archetype": "scout"}), 0, 3, Ok(("worker", vec!["many__a", "many__b", "now"]))),
        (json!({"task": "t", "archetype": "scout", "tools": ["many__b"]}), 0, 3, Ok(("worker", vec!["many__b"]))),
        // A tool the parent lacks is never given.
        (json!({"task": "t", "tools": ["memory_forget", "now"]}), 0, 3, Ok(("worker", vec!["now"]))),
        // The archetype's tier, and the call's over it.
        (
            json!({"task": "t", "archetype": "thinker"}),
            0,
            3,
            Ok(("reasoning", vec!["delegate", "http_get", "many__a", "many__b", "now", "shell", "web_fetch"])),
        ),
        (
            json!({"task": "t", "archetype": "thinker", "tier": "chat"}),
            0,
            3,
            Ok(("chat", vec!["delegate", "http_get", "many__a", "many__b", "now", "shell", "web_fetch"])),
        ),
        // A child at the depth limit gets no `delegate`.
        (
            json!({"task": "t"}),
            2,
            3,
            Ok(("worker", vec!["http_get", "many__a", "many__b", "now", "shell", "web_fetch"])),
        ),
        (
            json!({"task": "t"}),
            1,
            3,
            Ok(("worker", vec!["delegate", "http_get", "many__a", "many__b", "now", "shell", "web_fetch"])),
        ),
        (
            json!({"task": "t"}),
            0,
            1,
            Ok(("worker", vec!["http_get", "many__a", "many__b", "now", "shell", "web_fetch"])),
        ),
        (json!({"task": "  "}), 0, 3, Err(PlanError::EmptyTask)),
        (json!({"task": "t", "background": true}), 1, 3, Err(PlanError::NestedBackground)),
        (
            json!({"task": "t", "archetype": "poet"}),
            0,
            3,
            Err(PlanError::UnknownArchetype("poet".into(), "researcher, thinker, scout".into())),
        ),
    ];
    for (call, depth, max_depth, want) in cases {
        let got =
            plan(&agent(max_depth), args(call.clone()), depth, &parent).map(|p| (p.tier.clone(), p.tools.clone()));
        let want = want.map(|(t, tools)| (t.to_string(), tools.into_iter().map(String::from).collect::<Vec<_>>()));
        assert_eq!(got, want, "{call} at depth {depth} of {max_depth}");
    }
}

#[test]
fn the_spec_lists_archetypes_and_the_child_prompt_carries_the_archetype() {
    let a = agent(3);
    let s = spec(&a);
    assert!(s.read_only);
    assert!(s.description.contains("`researcher` (You research and report facts with sources.)"), "{}", s.description);
    assert_eq!(s.parameters["properties"]["archetype"]["enum"], json!(["researcher", "thinker", "scout"]));
    let p = plan(&a, args(json!({"task": "find x", "archetype": "researcher"})), 0, &["now".into()]).unwrap();
    let prompt = child_prompt("Butler", &p);
    assert!(prompt.starts_with("You are a helper of Butler") && prompt.ends_with("with sources."), "{prompt}");
}
