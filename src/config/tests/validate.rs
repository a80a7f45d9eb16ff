//! Validation rules (one case per rule) and the masked print. Secrets used here are fake
//! markers; the tests never touch the process environment.

use super::parse;
use crate::config::{Config, ConfigError};

#[test]
fn the_default_config_is_valid() {
    Config::default().validate().unwrap();
    parse("", &[]).unwrap().validate().unwrap();
}

#[test]
fn validation_errors_name_the_key() {
    // (file, expected key of the one problem; None = valid)
    let cases: &[(&str, Option<&str>)] = &[
        ("[server]\nlisten = \"localhost:8080\"", Some("server.listen")),
        ("[server]\nlisten = \"[::1]:8080\"", None),
        ("[server]\nmax_body_bytes = 1023", Some("server.max_body_bytes")),
        ("[server]\nmax_body_bytes = 1024", None),
        ("[server]\nheader_timeout_secs = 0", Some("server.header_timeout_secs")),
        ("[server]\nbody_timeout_secs = 0", Some("server.body_timeout_secs")),
        ("[server]\nmax_connections = 0", Some("server.max_connections")),
        ("[server]\nmax_connections = 1\nheader_timeout_secs = 1\nbody_timeout_secs = 1", None),
        ("[server]\nmax_connections_per_client = 0", Some("server.max_connections_per_client")),
        ("[server]\nallowed_hosts = [\"butler.example.com\", \"chat.local:8443\"]", None),
        ("[server]\nallowed_hosts = [\"https://butler.example.com\"]", Some("server.allowed_hosts[0]")),
        ("[server]\nallowed_hosts = [\"ok.example\", \"a/b\"]", Some("server.allowed_hosts[1]")),
        ("[server]\ntrusted_proxies = [\"10.0.0.0/8\", \"::1\"]", None),
        ("[server]\ntrusted_proxies = [\"proxy.local\"]", Some("server.trusted_proxies[0]")),
        ("[server]\npublic_url = \"https://butler.example.com/\"", None),
        ("[server]\npublic_url = \"butler.example.com\"", Some("server.public_url")),
        ("[database]\nurl = \"mysql://u:pw-db@h/db\"", Some("database.url")),
        ("[database]\nurl = \"data/butler.db\"", Some("database.url")),
        ("[database]\nurl = \"postgres://u:p@h/db\"", None),
        ("[database]\nurl = \"postgresql://h/db\"", None),
        ("[database]\nmax_connections = 0", Some("database.max_connections")),
        ("[redis]\nurl = \"http://127.0.0.1:6379\"", Some("redis.url")),
        ("[redis]\nurl = \"rediss://:p@h:6380\"", None),
        ("[llm]\nbase_url = \"api.openai.com/v1\"", Some("llm.base_url")),
        ("[llm]\nconnect_timeout_secs = 0", Some("llm.connect_timeout_secs")),
        ("[llm]\nfirst_byte_timeout_secs = 0", Some("llm.first_byte_timeout_secs")),
        ("[llm]\nidle_timeout_secs = 0", Some("llm.idle_timeout_secs")),
        ("[llm]\nmax_tokens = 0", Some("llm.max_tokens")),
        ("[llm]\nmax_tokens = 8000\ncontext_window = 8000", Some("llm.max_tokens")),
        ("[llm]\ncontext_window = 0\nmax_tokens = 1", Some("llm.context_window")),
        ("[llm]\ninput_price_per_mtok = -1.0", Some("llm.input_price_per_mtok")),
        ("[llm]\noutput_price_per_mtok = nan", Some("llm.output_price_per_mtok")),
        ("[[llm.fallback]]\nprovider = \"openai\"\nmodel = \" \"", Some("llm.fallback[0].model")),
        ("[[llm.fallback]]\nprovider = \"openai\"\nmodel = \"m\"\nbase_url = \"x\"", Some("llm.fallback[0].base_url")),
        ("[server]\nlisten = \"0.0.0.0:8080\"", Some("channels.web.token")),
        ("[server]\nlisten = \"192.168.1.5:8080\"", Some("channels.web.token")),
        ("[server]\nlisten = \"0.0.0.0:8080\"\n[channels.web]\ntoken = \"t\"", None),
        ("[server]\nlisten = \"0.0.0.0:8080\"\n[channels.web]\ntokens = { alice = \"t\" }", None),
        ("[server]\nlisten = \"0.0.0.0:8080\"\n[channels.web]\nenabled = false", None),
        ("[channels.web]\ntoken = \"\"", Some("channels.web.token")),
        ("[channels.web]\ntokens = { alice = \" \" }", Some("channels.web.tokens.alice")),
        ("[channels.web]\ntokens = { \"bad name\" = \"t\" }", Some("channels.web.tokens.\"bad name\"")),
        ("[channels.web]\ntokens = { alice = \"same\", bob = \"same\" }", Some("channels.web.tokens.bob")),
        ("[channels.web]\ntoken = \"same\"\ntokens = { bob = \"same\" }", Some("channels.web.tokens.bob")),
        ("[channels.web]\ntoken = \"a\"\ntokens = { owner = \"b\" }", Some("channels.web.tokens.owner")),
        ("[agent]\nname = \"\"", Some("agent.name")),
        ("[agent]\ntimezone = \"Mars/Olympus\"", Some("agent.timezone")),
        ("[agent]\ntimezone = \"Europe/Berlin\"", None),
        ("[memory]\nrecall_limit = 0", Some("memory.recall_limit")),
        ("[limits]\nmax_iterations = 0", Some("limits.max_iterations")),
        ("[limits]\ntool_timeout_secs = 0", Some("limits.tool_timeout_secs")),
        ("[limits]\nmax_tool_result_chars = 0", Some("limits.max_tool_result_chars")),
        ("[limits]\nsession_mailbox = 0", Some("limits.session_mailbox")),
        ("[limits]\nsession_idle_secs = 0", Some("limits.session_idle_secs")),
        ("[limits]\nhistory_messages = 0", Some("limits.history_messages")),
        ("[limits]\nmax_event_attempts = 0", Some("limits.max_event_attempts")),
    ];
    for (text, want) in cases {
        let config = parse(text, &[]).unwrap_or_else(|e| panic!("{text}: {e}"));
        match (config.validate(), want) {
            (Ok(()), None) => {}
            (Err(ConfigError::Invalid { problems, .. }), Some(key)) => {
                let keys: Vec<&str> = problems.iter().map(|p| p.key.as_str()).collect();
                assert_eq!(keys, [*key], "{text}");
            }
            (got, _) => panic!("{text}: got {got:?}, want a problem at {want:?}"),
        }
    }
}

#[test]
fn validation_messages_say_what_to_do_and_hide_urls() {
    let config = parse(
        "[server]\nlisten = \"0.0.0.0:8080\"\n[database]\nurl = \"mysql://u:pw-db@h/db\"\n[redis]\nurl = \"pw-redis@h\"",
        &[],
    )
    .unwrap();
    let msg = config.validate().unwrap_err().to_string();
    for fragment in [
        "config: 3 problems",
        "`database.url`: has the unsupported scheme `mysql://`",
        "`redis.url`",
        "open",
        "set [channels.web] token",
        "127.0.0.1",
    ] {
        assert!(msg.contains(fragment), "{msg:?} lacks {fragment:?}");
    }
    assert!(!msg.contains("pw-db") && !msg.contains("pw-redis"), "{msg}");
}

const SECRET_FILE: &str = r#"
[database]
url = "postgres://butler:${PGPASS}@db:5432/butler?sslmode=require&sslpassword=file-secret-sslpw"

[redis]
url = "redis://:file-secret-redis@127.0.0.1:6379"

[llm]
api_key = "file-secret-llm"
model = "m"

[[llm.fallback]]
provider = "anthropic"
model = "c"
api_key = "${FB_KEY}"

[channels.web]
token = "${WEB_TOKEN}"
tokens = { alice = "file-secret-alice" }
"#;

const SECRETS: &[&str] = &[
    "env-secret-pg",
    "file-secret-sslpw",
    "file-secret-redis",
    "file-secret-llm",
    "env-secret-fb",
    "env-secret-web",
    "file-secret-alice",
    "override-secret-bob",
    "override-secret-fallback",
    "override-secret-llm",
];

fn secret_env() -> Vec<(&'static str, &'static str)> {
    vec![
        ("PGPASS", "env-secret-pg"),
        ("FB_KEY", "env-secret-fb"),
        ("WEB_TOKEN", "env-secret-web"),
        ("BUTLER_CHANNELS__WEB__TOKENS__BOB", "override-secret-bob"),
        ("BUTLER_LLM__FALLBACK__0__API_KEY", "override-secret-fallback"),
    ]
}

#[test]
fn masked_output_hides_every_secret() {
    let config = parse(SECRET_FILE, &secret_env()).unwrap();
    // The secrets really are loaded...
    assert_eq!(config.llm.fallback[0].api_key.as_ref().unwrap().expose(), "override-secret-fallback");
    assert_eq!(config.channels.web.tokens["bob"].expose(), "override-secret-bob");
    // ...and never shown.
    let out = config.to_masked_toml();
    for secret in SECRETS {
        assert!(!out.contains(secret), "{secret} shown in:\n{out}");
    }
    for shown in [
        "url = \"postgres://butler:***@db:5432/butler?sslmode=require&sslpassword=***\"",
        "url = \"redis://:***@127.0.0.1:6379\"",
        "api_key = \"********\"",
        "token = \"********\"",
        "alice = \"********\"",
        "bob = \"********\"",
        "model = \"m\"",
        "listen = \"127.0.0.1:8080\"",
    ] {
        assert!(out.contains(shown), "{shown:?} missing from:\n{out}");
    }
    // Debug output masks them too.
    let debug = format!("{config:?}");
    for secret in SECRETS {
        assert!(!debug.contains(secret), "{secret} in Debug");
    }
}

#[test]
fn masked_output_is_a_complete_config_that_parses_back() {
    let config = parse(SECRET_FILE, &secret_env()).unwrap();
    let again = parse(&config.to_masked_toml(), &[]).unwrap();
    assert_eq!(again.to_masked_toml(), config.to_masked_toml());
    let defaults = Config::default().to_masked_toml();
    for section in ["[server]", "[database]", "[llm]", "[channels.web]", "[access]", "[agent]", "[memory]", "[limits]"]
    {
        assert!(defaults.contains(section), "{section} missing from:\n{defaults}");
    }
    assert!(defaults.contains("url = \"sqlite://data/butler.db\""), "{defaults}");
}

#[test]
fn error_messages_never_show_secrets() {
    // Every case fails after a secret has been read from the file, a variable or an override.
    let cases: &[(&str, &[(&str, &str)])] = &[
        ("[llm]\napi_key = \"file-secret-llm\"\nbse_url = \"x\"", &[]),
        (
            "[channels.web]\ntoken = \"${WEB_TOKEN}\"\n[server]\nmax_body_bytes = \"x\"",
            &[("WEB_TOKEN", "env-secret-web")],
        ),
        ("", &[("BUTLER_CHANNELS__WEB__TOKENS", "override-secret-bob")]),
        ("", &[("BUTLER_LLM__API_KEY__X", "override-secret-fallback")]),
        ("", &[("BUTLER_LLM__API_KEY", "override-secret-llm"), ("BUTLER_LLM__MAX_TOKENS", "x")]),
        ("[channels.web]\ntokens = { alice = \"file-secret-alice\", \"a b\" = \"file-secret-llm\" }", &[]),
    ];
    for (text, vars) in cases {
        let msg = match parse(text, vars) {
            Err(e) => e.to_string(),
            Ok(c) => c.validate().expect_err(text).to_string(),
        };
        for secret in SECRETS {
            assert!(!msg.contains(secret), "{secret} in {msg:?}");
        }
    }
}

#[test]
fn trigger_problems_name_the_key() {
    const SRC: &str = "[[triggers]]\nname = \"github\"\nsecret = \"s\"\n";
    // (file, expected keys of the problems; empty = valid)
    let cases: &[(String, &[&str])] = &[
        (SRC.to_string(), &[]),
        (format!("{SRC}default = \"notify\"\ntarget = \"web:alerts\""), &[]),
        (format!("{SRC}default = \"notify\""), &["triggers[0].target"]),
        (format!("{SRC}default = \"notify\"\ntarget = \"alerts\""), &["triggers[0].target"]),
        (format!("{SRC}default = \"agent\"\ntarget = \"web:alice\""), &["triggers[0].conversation"]),
        (format!("{SRC}default = \"agent\"\ntarget = \"web:alice\"\nconversation = \"web:a\""), &[]),
        (format!("{SRC}default = \"agent\"\nconversation = \"web:a\""), &["triggers[0].target"]),
        ("[[triggers]]\nname = \"GitHub\"\nsecret = \"s\"".into(), &["triggers[0].name"]),
        ("[[triggers]]\nname = \"a/b\"\nsecret = \"s\"".into(), &["triggers[0].name"]),
        (format!("{SRC}{SRC}"), &["triggers[1].name"]),
        ("[[triggers]]\nname = \"x\"\nsecret = \" \"".into(), &["triggers[0].secret"]),
        (
            format!("{SRC}rate_limit_per_minute = 0\nmax_payload_chars = 0"),
            &["triggers[0].rate_limit_per_minute", "triggers[0].max_payload_chars"],
        ),
        (
            format!("{SRC}[[triggers.rules]]\nwhen = {{ \"headers.x-github-event\" = \"push\" }}\naction = \"drop\""),
            &[],
        ),
        (format!("{SRC}[[triggers.rules]]\naction = \"notify\""), &["triggers[0].rules[0].target"]),
        (format!("{SRC}target = \"web:alerts\"\n[[triggers.rules]]\naction = \"notify\""), &[]),
        (format!("{SRC}[[triggers.rules]]\naction = \"notify\"\ntarget = \"telegram:-100123/7\""), &[]),
        (
            format!("{SRC}[[triggers.rules]]\naction = \"agent\"\ntarget = \"web:alice\""),
            &["triggers[0].rules[0].conversation"],
        ),
        (
            format!("{SRC}conversation = \"web:gh\"\n[[triggers.rules]]\naction = \"agent\"\ntarget = \"web:alice\""),
            &[],
        ),
        (
            format!("{SRC}[[triggers.rules]]\nwhen = {{ \"x-github-event\" = \"push\" }}\naction = \"drop\""),
            &["triggers[0].rules[0].when.\"x-github-event\""],
        ),
        (
            format!("{SRC}[[triggers.rules]]\nwhen = {{ \"body.\" = \"x\" }}\naction = \"drop\""),
            &["triggers[0].rules[0].when.\"body.\""],
        ),
        (
            format!(
                "{SRC}[[triggers.rules]]\nwhen = {{ \"body.a\" = {{ b = 1 }}, \"body.c\" = [] }}\naction = \"drop\""
            ),
            &["triggers[0].rules[0].when.\"body.a\"", "triggers[0].rules[0].when.\"body.c\""],
        ),
        (format!("{SRC}[[triggers.rules]]\nwhen = {{ \"body.n\" = [1, \"two\", true] }}\naction = \"drop\""), &[]),
    ];
    for (text, want) in cases {
        let config = parse(text, &[]).unwrap_or_else(|e| panic!("{text}: {e}"));
        let keys: Vec<String> = match config.validate() {
            Ok(()) => vec![],
            Err(ConfigError::Invalid { problems, .. }) => problems.into_iter().map(|p| p.key).collect(),
            Err(e) => panic!("{text}: {e}"),
        };
        assert_eq!(keys, *want, "{text}");
    }
}

#[test]
fn the_full_check_keeps_the_order_of_the_sections() {
    // One problem in each section, written in another order than the checks run: config's own
    // checks and the components' (permissions, tools, schedules) interleave by section.
    let text = "[[schedules]]\nname = \"b\"\ncron = \"0 8 * *\"\nprompt = \"p\"\ntarget = \"web:b\"\n\
                [channels.telegram]\ntoken = \" \"\n\
                [tools]\nworkspace_dir = \" \"\n\
                [[hooks]]\nevent = \"pre_tool_use\"\ntype = \"command\"\ncommand = \" \"\n\
                [permissions]\napproval_timeout_secs = 0\n\
                [[triggers]]\nname = \"x\"\nsecret = \" \"\n\
                [limits]\nmax_iterations = 0\n\
                [server]\nmax_body_bytes = 1\n";
    let config = parse(text, &[]).unwrap_or_else(|e| panic!("{e}"));
    let keys = |r: Result<(), ConfigError>| match r {
        Err(ConfigError::Invalid { problems, .. }) => problems.into_iter().map(|p| p.key).collect::<Vec<_>>(),
        other => panic!("{other:?}"),
    };
    let all = [
        "server.max_body_bytes",
        "limits.max_iterations",
        "triggers[0].secret",
        "permissions.approval_timeout_secs",
        "hooks[0].command",
        "tools.workspace_dir",
        "channels.telegram.token",
        "schedules[0].cron",
    ];
    assert_eq!(keys(crate::app::check_config(&config)), all);
    // `validate` alone checks only the sections config owns (a platform channel's section is
    // its channel's, checked through the registry).
    let own: Vec<&str> = all
        .into_iter()
        .filter(|k| !["permissions.", "tools.", "schedules[", "channels.telegram"].iter().any(|s| k.starts_with(s)))
        .collect();
    assert_eq!(keys(config.validate()), own);
}
