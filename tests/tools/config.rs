//! `[tools]` in the config: which tools `builtin_tools` registers, and the validation rules
//! (each naming its key).

use butler::config::{parse_str, Config, ConfigError, Env};
use butler::tools::builtin_tools;

fn parse(text: &str) -> Config {
    parse_str(text, "config/butler.toml", &Env::from_pairs(Vec::<(String, String)>::new())).unwrap()
}

#[test]
fn registration_follows_the_config() {
    let base = ["now", "recall", "remember", "forget", "conversation_search"];
    let cases: &[(&str, &[&str], &[&str])] = &[
        // (config, present, absent)
        (
            "",
            &["web_fetch", "file_read", "file_list", "file_write", "file_edit"],
            &["shell", "http_get", "http_request", "send_message"],
        ),
        (
            "[tools.web_fetch]\nenabled = false\n[tools.files]\nenabled = false",
            &[],
            &["web_fetch", "file_read", "file_list", "file_write", "file_edit"],
        ),
        ("[tools.shell]\nenabled = true", &["shell"], &[]),
        ("[tools.http_request]\nallowed_hosts = [\"api.github.com\"]", &["http_get", "http_request"], &[]),
        ("[tools.send_message]\ntargets = [\"telegram:-100123\"]", &["send_message"], &[]),
    ];
    for (text, present, absent) in cases {
        let cfg = parse(text);
        butler::app::check_config(&cfg).unwrap();
        let tools = builtin_tools(&cfg, &Default::default());
        let names = tools.names();
        for name in base.iter().chain(present.iter()) {
            assert!(names.contains(name), "{text:?}: {name} missing from {names:?}");
        }
        for name in *absent {
            assert!(!names.contains(name), "{text:?}: {name} should be off, got {names:?}");
        }
    }
}

#[test]
fn memory_tools_and_conversation_search_follow_memory_enabled() {
    // (config, whether they are registered)
    for (text, on) in [("", true), ("[memory]\nenabled = true", true), ("[memory]\nenabled = false", false)] {
        let tools = builtin_tools(&parse(text), &Default::default());
        let names = tools.names();
        for name in ["remember", "recall", "forget", "conversation_search"] {
            assert_eq!(names.contains(&name), on, "{text:?}: {name} in {names:?}");
        }
        if let Some(tool) = tools.get("conversation_search") {
            assert!(tool.spec().read_only, "conversation_search runs without asking");
        }
    }
}

#[test]
fn validation_names_the_key() {
    let cases: &[(&str, Option<&str>)] = &[
        ("[tools]\nworkspace_dir = \" \"", Some("tools.workspace_dir")),
        ("[tools.web_fetch]\nmax_bytes = 0", Some("tools.web_fetch.max_bytes")),
        ("[tools.web_fetch]\ntimeout_secs = 0", Some("tools.web_fetch.timeout_secs")),
        ("[tools.web_fetch]\nmax_redirects = 0", None),
        ("[tools.http_request]\nmax_bytes = 0", Some("tools.http_request.max_bytes")),
        ("[tools.http_request]\ntimeout_secs = 0", Some("tools.http_request.timeout_secs")),
        ("[tools.shell]\ntimeout_secs = 0", Some("tools.shell.timeout_secs")),
        ("[tools.shell]\nmax_output_bytes = 0", Some("tools.shell.max_output_bytes")),
        ("[tools.files]\nmax_read_bytes = 0", Some("tools.files.max_read_bytes")),
        ("[tools.files]\nmax_write_bytes = 0", Some("tools.files.max_write_bytes")),
        ("[tools.http_request]\nallowed_hosts = [\"api.github.com\", \"*.example.com\"]", None),
        (
            "[tools.http_request]\nallowed_hosts = [\"https://api.github.com\"]",
            Some("tools.http_request.allowed_hosts[0]"),
        ),
        (
            "[tools.http_request]\nallowed_hosts = [\"ok.com\", \"x.com:443\"]",
            Some("tools.http_request.allowed_hosts[1]"),
        ),
        ("[tools.http_request]\nallowed_hosts = [\"*\"]", Some("tools.http_request.allowed_hosts[0]")),
        ("[tools.http_request]\nallowed_hosts = [\"169.254.169.254\"]", Some("tools.http_request.allowed_hosts[0]")),
        ("[tools.http_request]\nallowed_hosts = [\"192.168.1.10\"]", Some("tools.http_request.allowed_hosts[0]")),
        ("[tools.http_request]\nallowed_hosts = [\"192.168.1.10\"]\nallow_private_addresses = true", None),
        // Host names the guard never fetches are refused at load too, whatever the spelling.
        (
            "[tools.http_request]\nallowed_hosts = [\"api.github.com\", \"metadata.google.internal\"]",
            Some("tools.http_request.allowed_hosts[1]"),
        ),
        (
            "[tools.http_request]\nallowed_hosts = [\"Metadata.Google.Internal\"]\nallow_private_addresses = true",
            Some("tools.http_request.allowed_hosts[0]"),
        ),
        ("[tools.http_request]\nallowed_hosts = [\"metadata.goog\"]", Some("tools.http_request.allowed_hosts[0]")),
        ("[tools.http_request]\nallowed_hosts = [\"*.internal\"]", Some("tools.http_request.allowed_hosts[0]")),
        ("[tools.http_request]\nallowed_hosts = [\"localhost\"]", Some("tools.http_request.allowed_hosts[0]")),
        ("[tools.http_request]\nallowed_hosts = [\"metadata.example.com\"]", None),
        (
            "[tools.send_message]\ntargets = [\"telegram:-1\", \"slack:C1/t\", \"telegram:-1\"]",
            Some("tools.send_message.targets[2]"),
        ),
    ];
    for (text, want) in cases {
        let got = butler::app::check_config(&parse(text));
        match (got, want) {
            (Ok(()), None) => {}
            (Err(ConfigError::Invalid { problems, .. }), Some(key)) => {
                let keys: Vec<&str> = problems.iter().map(|p| p.key.as_str()).collect();
                assert_eq!(keys, vec![*key], "{text}");
            }
            (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
        }
    }
    // A target that is not channel:id[/thread] does not even parse.
    let bad = parse_str(
        "[tools.send_message]\ntargets = [\"nochannel\"]",
        "config/butler.toml",
        &Env::from_pairs(Vec::<(String, String)>::new()),
    );
    assert!(bad.unwrap_err().to_string().contains("targets"));
}
