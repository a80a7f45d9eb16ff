//! `[permissions]` validation (each problem names its key) and the parsed shape of a context.
//! Parsing only: it never reads a file or the process environment.

use crate::config::{parse_str, ContextKind, Env, Mode};

fn problems(text: &str) -> Vec<String> {
    let config = parse_str(text, "butler.toml", &Env::from_pairs(Vec::<(String, String)>::new()))
        .unwrap_or_else(|e| panic!("{text}: {e}"));
    match crate::app::check_config(&config) {
        Ok(()) => Vec::new(),
        Err(crate::config::ConfigError::Invalid { problems, .. }) => problems.into_iter().map(|p| p.key).collect(),
        Err(e) => panic!("{text}: {e}"),
    }
}

#[test]
fn permissions_validation_names_the_key() {
    // (file, keys of its problems; empty = valid)
    let cases: &[(&str, &[&str])] = &[
        ("[permissions]\nmode = \"plan\"", &[]),
        ("[permissions]\napproval_timeout_secs = 0", &["permissions.approval_timeout_secs"]),
        ("[permissions]\ndenied_tools = [\"shell*\", \"\"]", &["permissions.denied_tools[1]"]),
        ("[permissions]\nallowed_tools = [\" \"]", &["permissions.allowed_tools[0]"]),
        ("[permissions]\nallow_paths = [\"~/notes/[ab\"]", &["permissions.allow_paths[0]"]),
        ("[permissions]\ndeny_paths = [\"\"]", &["permissions.deny_paths[0]"]),
        ("[permissions]\ndenied_commands = [\"*rm -rf*\", \"\"]", &["permissions.denied_commands[1]"]),
        ("[permissions]\napprovers = []", &["permissions.approvers"]),
        ("[permissions]\ntrusted_hosts = [\"api.example.com\", \"*.corp.example\", \"10.0.0.5\"]", &[]),
        (
            "[permissions]\ntrusted_hosts = [\"https://api.example.com\", \"ok.example\", \"a b\"]",
            &["permissions.trusted_hosts[0]", "permissions.trusted_hosts[2]"],
        ),
        (
            "[permissions]\napprovers = [\"requester\", \"role:owner\", \"role:member\", \"role:guest\", \
             \"user:u_123\", \"slack:U2CERLKJA\", \"telegram:123456789\"]",
            &[],
        ),
        ("[permissions]\napprovers = [\"role:admin\"]", &["permissions.approvers[0]"]),
        ("[permissions]\napprovers = [\"user:\"]", &["permissions.approvers[0]"]),
        ("[permissions]\napprovers = [\"alice\"]", &["permissions.approvers[0]"]),
        (
            "[permissions]\napprovers = [\"owner\", \"Slack:U1\"]",
            &["permissions.approvers[0]", "permissions.approvers[1]"],
        ),
        ("[[permissions.contexts]]\nchannel = \"telegram\"\nkind = \"group\"\nrole = \"guest\"\nmode = \"plan\"", &[]),
        ("[[permissions.contexts]]\nrole = \"admin\"\nmode = \"plan\"", &["permissions.contexts[0].role"]),
        ("[[permissions.contexts]]\nchannel = \"\"\nmode = \"plan\"", &["permissions.contexts[0].channel"]),
        ("[[permissions.contexts]]\nchannel = \"Telegram\"\nmode = \"plan\"", &["permissions.contexts[0].channel"]),
        ("[[permissions.contexts]]\nkind = \"dm\"", &["permissions.contexts[0]"]),
        ("[[permissions.contexts]]\napprovers = [\"role:boss\"]", &["permissions.contexts[0].approvers[0]"]),
        ("[[permissions.contexts]]\napprovers = []", &["permissions.contexts[0].approvers"]),
    ];
    for (text, want) in cases {
        assert_eq!(problems(text), want.iter().map(|s| s.to_string()).collect::<Vec<_>>(), "{text}");
    }
}

#[test]
fn a_context_entry_parses_and_unknown_keys_or_values_are_errors() {
    let text = "[permissions]\nmode = \"full_auto\"\n[[permissions.contexts]]\nkind = \"dm\"\nrole = \"owner\"\n\
                approvers = [\"role:owner\"]\n";
    let config = parse_str(text, "butler.toml", &Env::from_pairs(Vec::<(String, String)>::new())).unwrap();
    assert_eq!(config.permissions.mode, Mode::FullAuto);
    let c = &config.permissions.contexts[0];
    assert_eq!(
        (c.kind, c.role.as_deref(), c.mode, c.channel.as_deref()),
        (Some(ContextKind::Dm), Some("owner"), None, None)
    );
    for bad in [
        "[[permissions.contexts]]\nkind = \"private\"\nmode = \"plan\"",
        "[[permissions.contexts]]\nmode = \"yolo\"",
        "[[permissions.contexts]]\nusers = [\"x\"]\nmode = \"plan\"",
        "[permissions]\nmode = \"auto\"",
    ] {
        assert!(parse_str(bad, "butler.toml", &Env::from_pairs(Vec::<(String, String)>::new())).is_err(), "{bad}");
    }
}
