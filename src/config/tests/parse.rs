//! Parsing: `${VAR}`, env overrides, unknown keys, wrong types, syntax errors, LLM env defaults.
//! Every environment is an `Env` built per case; these tests never touch the process environment.

use super::{env, parse, parse_err, Vars};
use crate::config::{Config, ConfigError, ProviderKind};

fn assert_has(msg: &str, fragments: &[&str]) {
    for f in fragments {
        assert!(msg.contains(f), "{msg:?} lacks {f:?}");
    }
}

#[test]
fn interpolation_reads_the_environment() {
    // (value written in the file, environment, expected agent.instructions)
    let cases: &[(&str, Vars, &str)] = &[
        ("${A}", &[("A", "x")], "x"),
        ("pre-${A}-post", &[("A", "x")], "pre-x-post"),
        ("${A}${B}", &[("A", "1"), ("B", "2")], "12"),
        ("$${A}", &[("A", "x")], "${A}"),
        ("$${A} and ${A}", &[("A", "x")], "${A} and x"),
        ("costs $5, $HOME stays", &[("HOME", "/root")], "costs $5, $HOME stays"),
        ("${A:-fallback}", &[], "fallback"),
        ("${A:-fallback}", &[("A", "")], "fallback"),
        ("${A:-fallback}", &[("A", "set")], "set"),
        ("${A:-}", &[], ""),
        ("${A:-a:-b}", &[], "a:-b"),
        ("${A}", &[("A", "")], ""),
        ("no dollar", &[], "no dollar"),
    ];
    for (value, vars, want) in cases {
        let text = format!("[agent]\ninstructions = {value:?}\n");
        let config = parse(&text, vars).unwrap_or_else(|e| panic!("{value}: {e}"));
        assert_eq!(config.agent.instructions.as_deref(), Some(*want), "{value} with {vars:?}");
    }
}

#[test]
fn interpolation_reaches_arrays_tables_and_arrays_of_tables() {
    let text = r#"
        [access]
        owners = ["${OWNER}"]
        [channels.web]
        tokens = { alice = "${ALICE}" }
        [[llm.fallback]]
        provider = "anthropic"
        model = "${FB_MODEL}"
        api_key = "${FB_KEY}"
    "#;
    let vars = [("OWNER", "web:alice"), ("ALICE", "t-a"), ("FB_MODEL", "claude"), ("FB_KEY", "k")];
    let config = parse(text, &vars).unwrap();
    assert_eq!(config.access.owners[0].to_string(), "web:alice");
    assert_eq!(config.channels.web.tokens["alice"].expose(), "t-a");
    assert_eq!(config.llm.fallback[0].model, "claude");
    assert_eq!(config.llm.fallback[0].api_key.as_ref().unwrap().expose(), "k");
}

#[test]
fn interpolation_errors_name_the_variable_the_key_and_the_file() {
    let cases: &[(&str, &[&str])] = &[
        ("[agent]\nname = \"${NOPE}\"", &["config/butler.toml", "`agent.name`", "${NOPE}", "NOPE is not set"]),
        (
            "[[llm.fallback]]\nprovider = \"openai\"\nmodel = \"m\"\napi_key = \"${FB}\"",
            &["`llm.fallback[0].api_key`", "FB is not set", "${FB:-default}"],
        ),
        ("[access]\nowners = [\"web:a\", \"${WHO}\"]", &["`access.owners[1]`", "WHO"]),
        ("[agent]\nname = \"${OPEN\"", &["`agent.name`", "without a closing `}`"]),
        ("[agent]\nname = \"${sk-pasted-secret}\"", &["`agent.name`", "must be letters"]),
        ("[agent]\nname = \"${}\"", &["`agent.name`", "must be letters"]),
    ];
    for (text, fragments) in cases {
        let msg = parse_err(text, &[]);
        assert_has(&msg, fragments);
        assert!(!msg.contains("sk-pasted-secret"), "{msg}");
    }
    assert!(matches!(parse("[agent]\nname = \"${NOPE}\"", &[]), Err(ConfigError::MissingVar { .. })));
}

#[test]
fn overrides_set_keys_of_every_type() {
    type Check = fn(&Config) -> bool;
    let cases: &[(&str, Vars, Check)] = &[
        ("", &[("BUTLER_LLM__BASE_URL", "http://127.0.0.1:11434/v1")], |c| {
            c.llm.base_url.as_deref() == Some("http://127.0.0.1:11434/v1")
        }),
        ("", &[("BUTLER_SERVER__MAX_BODY_BYTES", "2048")], |c| c.server.max_body_bytes == 2048),
        ("", &[("BUTLER_MEMORY__ENABLED", "false")], |c| !c.memory.enabled),
        ("", &[("BUTLER_LLM__INPUT_PRICE_PER_MTOK", "2.5")], |c| c.llm.input_price_per_mtok == Some(2.5)),
        ("", &[("BUTLER_LLM__PROVIDER", "anthropic")], |c| c.llm.provider == ProviderKind::Anthropic),
        ("", &[("BUTLER_CHANNELS__WEB__TOKEN", "abc")], |c| {
            c.channels.web.token.as_ref().map(|t| t.expose()) == Some("abc")
        }),
        ("", &[("BUTLER_CHANNELS__WEB__TOKEN", "123456")], |c| {
            c.channels.web.token.as_ref().map(|t| t.expose()) == Some("123456")
        }),
        ("", &[("BUTLER_CHANNELS__WEB__TOKEN", "12#34")], |c| {
            c.channels.web.token.as_ref().map(|t| t.expose()) == Some("12#34")
        }),
        ("", &[("BUTLER_CHANNELS__WEB__TOKENS__ALICE", "t")], |c| c.channels.web.tokens["alice"].expose() == "t"),
        ("", &[("BUTLER_ACCESS__OWNERS", r#"["web:alice", "telegram:1"]"#)], |c| c.access.owners.len() == 2),
        ("", &[("BUTLER_ACCESS__OWNERS", "web:alice, telegram:1")], |c| c.access.owners.len() == 2),
        ("", &[("BUTLER_ACCESS__ALLOW", "web:bob")], |c| c.access.allow[0].to_string() == "web:bob"),
        ("", &[("BUTLER_REDIS__URL", "redis://127.0.0.1:6379")], |c| c.redis.is_some()),
        ("", &[("BUTLER_AGENT__NAME", "\"Quoted\"")], |c| c.agent.name == "Quoted"),
        ("", &[("BUTLER_AGENT__NAME", "2024-01-01")], |c| c.agent.name == "2024-01-01"),
        ("", &[("BUTLER_AGENT__NAME", "true")], |c| c.agent.name == "true"),
        ("", &[("BUTLER_AGENT__NAME", "${X}")], |c| c.agent.name == "${X}"),
        ("", &[("BUTLER_AGENT__INSTRUCTIONS", "be brief")], |c| c.agent.instructions.as_deref() == Some("be brief")),
        ("[llm]\nmodel = \"file\"", &[("BUTLER_LLM__MODEL", "env")], |c| c.llm.model == "env"),
        ("[[llm.fallback]]\nprovider = \"openai\"\nmodel = \"a\"", &[("BUTLER_LLM__FALLBACK__0__MODEL", "b")], |c| {
            c.llm.fallback[0].model == "b"
        }),
        ("[agent]\nname = \"F\"", &[("BUTLER_CONFIG", "x.toml"), ("BUTLER_MODEL", "m"), ("BUTLER_LOG", "1")], |c| {
            c.agent.name == "F" && c.llm.model.is_empty()
        }),
    ];
    for (file, vars, check) in cases {
        let config = parse(file, vars).unwrap_or_else(|e| panic!("{vars:?}: {e}"));
        assert!(check(&config), "{file:?} with {vars:?}");
    }
}

#[test]
fn override_errors_name_the_variable() {
    let cases: &[(&str, (&str, &str), &[&str])] = &[
        (
            "",
            ("BUTLER_LLM__BSE_URL", "x"),
            &["BUTLER_LLM__BSE_URL", "unknown key `llm.bse_url`", "BUTLER_LLM__BASE_URL"],
        ),
        ("", ("BUTLER_NOPE__X", "1"), &["BUTLER_NOPE__X", "unknown key `nope`"]),
        (
            "",
            ("BUTLER_SERVER__MAX_BODY_BYTES", "big"),
            &["BUTLER_SERVER__MAX_BODY_BYTES", "`server.max_body_bytes`", "usize"],
        ),
        (
            "",
            ("BUTLER_SERVER__LISTEN__PORT", "1"),
            &["BUTLER_SERVER__LISTEN__PORT", "`server.listen`", "expected a string"],
        ),
        (
            "[server]\nlisten = \"127.0.0.1:1\"",
            ("BUTLER_SERVER__LISTEN__PORT", "1"),
            &["BUTLER_SERVER__LISTEN__PORT", "`server.listen` is a single value"],
        ),
        ("", ("BUTLER_LLM____MODEL", "x"), &["BUTLER_LLM____MODEL", "empty"]),
        ("", ("BUTLER_LLM__FALLBACK__0__MODEL", "x"), &["BUTLER_LLM__FALLBACK__0__MODEL", "`llm.fallback`"]),
        (
            "[[llm.fallback]]\nprovider = \"openai\"\nmodel = \"a\"",
            ("BUTLER_LLM__FALLBACK__3__MODEL", "x"),
            &["BUTLER_LLM__FALLBACK__3__MODEL", "index from 0 to 0"],
        ),
        ("", ("BUTLER_ACCESS__OWNERS", "nobody"), &["BUTLER_ACCESS__OWNERS", "`access.owners[0]`"]),
        ("", ("BUTLER_LLM__PROVIDER", "openia"), &["BUTLER_LLM__PROVIDER", "unknown variant"]),
    ];
    for (file, var, fragments) in cases {
        let msg = parse_err(file, &[*var]);
        assert_has(&msg, fragments);
        assert!(!msg.contains("s3cr3t"), "{msg}");
    }
    assert!(matches!(parse("", &[("BUTLER_LLM__BSE_URL", "x")]), Err(ConfigError::UnknownOverride { .. })));
}

#[test]
fn unknown_keys_name_the_key_path_and_the_file() {
    let cases: &[(&str, &str, Option<usize>, Option<&str>)] = &[
        ("[sever]\nlisten = \"x\"", "sever", Some(1), Some("server")),
        ("nonsense = 1", "nonsense", Some(1), None),
        ("[llm]\nmodel = \"m\"\nbse_url = \"x\"", "llm.bse_url", Some(3), Some("llm.base_url")),
        ("server = { listn = \"x\" }", "server.listn", Some(1), Some("server.listen")),
        ("[channels.web]\ntokn = \"x\"", "channels.web.tokn", Some(2), Some("channels.web.token")),
        (
            "[[llm.fallback]]\nprovider = \"openai\"\nmodel = \"a\"\n\n[[llm.fallback]]\nprovider = \"openai\"\nmodle = \"b\"",
            "llm.fallback[1].modle",
            Some(7),
            Some("llm.fallback[1].model"),
        ),
    ];
    for (text, key, line, suggestion) in cases {
        match parse(text, &[]) {
            Err(ConfigError::UnknownKey { file, key: k, line: l, suggestion: s }) => {
                assert_eq!((file.as_str(), k.as_str(), l), ("config/butler.toml", *key, *line), "{text}");
                assert_eq!(s.as_deref(), *suggestion, "{text}");
            }
            other => panic!("{text}: {other:?}"),
        }
    }
    let msg = parse_err("[llm]\nbse_url = \"x\"", &[]);
    assert!(msg.starts_with("config/butler.toml: unknown key `llm.bse_url`"), "{msg}");
    assert!(msg.contains("did you mean `llm.base_url`"), "{msg}");
}

#[test]
fn wrong_types_name_the_key() {
    let cases: &[(&str, &[&str])] = &[
        (
            "[server]\nmax_body_bytes = \"big\"",
            &[
                "config/butler.toml: bad value for `server.max_body_bytes` (line 2)",
                "invalid type: string \"big\", expected usize",
            ],
        ),
        ("[limits]\nmax_iterations = -1", &["`limits.max_iterations`", "expected u32"]),
        ("[memory]\nenabled = \"yes\"", &["`memory.enabled`", "expected a boolean"]),
        ("[llm]\nprovider = \"openia\"", &["`llm.provider`", "unknown variant `openia`"]),
        ("[access]\nowners = [\"web:a\", \"alice\"]", &["`access.owners[1]`", "channel:id"]),
        ("server = 5", &["bad value for `server`"]),
        ("[channels.web]\ntoken = 987654", &["`channels.web.token`", "invalid type: integer, expected a string"]),
        (
            "[channels.web]\ntokens = \"supersecret\"",
            &["`channels.web.tokens`", "invalid type: string, expected a map"],
        ),
        ("[agent]\nname = 42", &["`agent.name`", "expected a string"]),
        ("[[llm.fallback]]\nprovider = \"openai\"", &["missing key `llm.fallback[0].model`", "(line 1)"]),
    ];
    for (text, fragments) in cases {
        let msg = parse_err(text, &[]);
        assert_has(&msg, fragments);
        assert!(!msg.contains("987654") && !msg.contains("supersecret"), "{msg}");
    }
}

#[test]
fn syntax_errors_have_line_and_column_but_not_the_line_text() {
    let cases: &[(&str, &str)] = &[
        ("[server\nlisten = \"x\"", "config/butler.toml:1:"),
        ("[llm]\nmodel = \"m\"\napi_key = sk-live-secret\n", "config/butler.toml:3:"),
        ("[llm]\napi_key = \"sk-live-secret\n", "config/butler.toml:2:"),
        ("[llm]\nmodel = \"a\"\nmodel = \"b\"", "config/butler.toml:3:"),
    ];
    for (text, prefix) in cases {
        let err = parse(text, &[]).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, ConfigError::Syntax { .. }), "{msg}");
        assert!(msg.starts_with(prefix) && msg.contains("TOML syntax error"), "{msg}");
        assert!(!msg.contains("sk-live-secret"), "{msg}");
    }
}

#[test]
fn llm_comes_from_the_environment_when_unset() {
    // (file, environment, expected provider, base_url, model, api key)
    type Want = (ProviderKind, Option<&'static str>, &'static str, Option<&'static str>);
    use ProviderKind::{Anthropic, Openai};
    let cases: &[(&str, Vars, Want)] = &[
        ("", &[], (Openai, None, "", None)),
        ("", &[("OPENAI_API_KEY", "ok")], (Openai, None, "gpt-4o-mini", Some("ok"))),
        ("", &[("OPENAI_API_KEY", "ok"), ("BUTLER_MODEL", "gpt-4.1")], (Openai, None, "gpt-4.1", Some("ok"))),
        (
            "",
            &[("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1"), ("BUTLER_MODEL", "llama3.1")],
            (Openai, Some("http://127.0.0.1:11434/v1"), "llama3.1", None),
        ),
        ("", &[("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1")], (Openai, Some("http://127.0.0.1:8000/v1"), "", None)),
        ("", &[("ANTHROPIC_API_KEY", "ak")], (Anthropic, None, "claude-sonnet-4-5", Some("ak"))),
        (
            "",
            &[("ANTHROPIC_API_KEY", "ak"), ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/"), ("BUTLER_MODEL", "c")],
            (Anthropic, Some("http://127.0.0.1:9/"), "c", Some("ak")),
        ),
        ("", &[("OPENAI_API_KEY", "ok"), ("ANTHROPIC_API_KEY", "ak")], (Openai, None, "gpt-4o-mini", Some("ok"))),
        (
            "[llm]\nprovider = \"anthropic\"",
            &[("OPENAI_API_KEY", "ok"), ("ANTHROPIC_API_KEY", "ak")],
            (Anthropic, None, "claude-sonnet-4-5", Some("ak")),
        ),
        ("[llm]\nprovider = \"anthropic\"", &[("OPENAI_API_KEY", "ok")], (Anthropic, None, "", None)),
        (
            "",
            &[("OPENAI_API_KEY", ""), ("ANTHROPIC_API_KEY", "ak")],
            (Anthropic, None, "claude-sonnet-4-5", Some("ak")),
        ),
        ("", &[("BUTLER_MODEL", "m")], (Openai, None, "", None)),
        ("[llm]\nmodel = \"file\"", &[("OPENAI_API_KEY", "ok")], (Openai, None, "file", None)),
        ("", &[("BUTLER_LLM__MODEL", "ovr"), ("OPENAI_API_KEY", "ok")], (Openai, None, "ovr", None)),
        (
            "[llm]\nbase_url = \"http://127.0.0.1:8081/v1\"",
            &[("OPENAI_API_KEY", "ok")],
            (Openai, Some("http://127.0.0.1:8081/v1"), "", None),
        ),
        // An endpoint from the file or an override still takes its model from BUTLER_MODEL.
        (
            "",
            &[("BUTLER_LLM__BASE_URL", "http://127.0.0.1:11434/v1"), ("BUTLER_MODEL", "llama3.1")],
            (Openai, Some("http://127.0.0.1:11434/v1"), "llama3.1", None),
        ),
        (
            "[llm]\nbase_url = \"http://127.0.0.1:8081/v1\"",
            &[("BUTLER_MODEL", "qwen")],
            (Openai, Some("http://127.0.0.1:8081/v1"), "qwen", None),
        ),
        (
            "[llm]\nmodel = \"file\"\nbase_url = \"http://h/v1\"",
            &[("BUTLER_MODEL", "env")],
            (Openai, Some("http://h/v1"), "file", None),
        ),
    ];
    for (file, vars, (provider, base_url, model, key)) in cases {
        let llm = parse(file, vars).unwrap().llm;
        let got = (llm.provider, llm.base_url.as_deref(), llm.model.as_str(), llm.api_key.as_ref().map(|k| k.expose()));
        assert_eq!(got, (*provider, *base_url, *model, *key), "{file:?} with {:?}", env(vars));
    }
}

#[test]
fn the_data_dir_holds_the_database_and_the_workspaces_unless_the_config_says() {
    // (file, environment, database url, workspace dir)
    let cases: &[(&str, Vars, &str, &str)] = &[
        ("", &[], "sqlite://data/butler.db", "data/workspaces"),
        (
            "",
            &[("HOME", "/home/u")],
            "sqlite:///home/u/.local/share/butler/butler.db",
            "/home/u/.local/share/butler/workspaces",
        ),
        (
            "",
            &[("HOME", "/home/u"), ("XDG_DATA_HOME", "/xdg")],
            "sqlite:///xdg/butler/butler.db",
            "/xdg/butler/workspaces",
        ),
        // A relative XDG_DATA_HOME is invalid by the spec and ignored.
        (
            "",
            &[("HOME", "/home/u"), ("XDG_DATA_HOME", "rel")],
            "sqlite:///home/u/.local/share/butler/butler.db",
            "/home/u/.local/share/butler/workspaces",
        ),
        (
            "",
            &[("HOME", "/home/u"), ("XDG_DATA_HOME", "/xdg"), ("BUTLER_DATA_DIR", "/srv/b")],
            "sqlite:///srv/b/butler.db",
            "/srv/b/workspaces",
        ),
        (
            "[database]\nurl = \"postgres://u:p@h/db\"",
            &[("BUTLER_DATA_DIR", "/srv/b")],
            "postgres://u:p@h/db",
            "/srv/b/workspaces",
        ),
        ("[tools]\nworkspace_dir = \"ws\"", &[("BUTLER_DATA_DIR", "/srv/b")], "sqlite:///srv/b/butler.db", "ws"),
        (
            "",
            &[("BUTLER_DATA_DIR", "/srv/b"), ("BUTLER_DATABASE__URL", "sqlite://x.db")],
            "sqlite://x.db",
            "/srv/b/workspaces",
        ),
    ];
    for (file, vars, url, ws) in cases {
        let cfg = parse(file, vars).unwrap();
        assert_eq!((cfg.database.url.expose(), cfg.tools.workspace_dir.as_str()), (*url, *ws), "{file:?} {vars:?}");
    }
}

#[test]
fn the_config_file_is_looked_up_in_the_folder_then_the_users_config_dir() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let user = home.join(".config/butler/butler.toml");
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(&user, "").unwrap();
    let here = dir.path().join("here");
    std::fs::create_dir_all(&here).unwrap();
    let home_s = home.display().to_string();
    let vars = env(&[("HOME", home_s.as_str())]);
    assert_eq!(crate::config::select_file(None, &vars, &here).unwrap(), Some(user.clone()), "the user's file");
    std::fs::create_dir_all(here.join("config")).unwrap();
    std::fs::write(here.join("config/butler.toml"), "").unwrap();
    assert_eq!(
        crate::config::select_file(None, &vars, &here).unwrap(),
        Some(here.join("config/butler.toml")),
        "./config/butler.toml comes first"
    );
    let xdg = dir.path().join("xdg");
    let xdg_s = xdg.display().to_string();
    let with_xdg = env(&[("HOME", home_s.as_str()), ("XDG_CONFIG_HOME", xdg_s.as_str())]);
    assert_eq!(crate::config::user_config_file(&with_xdg), Some(xdg.join("butler/butler.toml")));
    assert_eq!(crate::config::select_file(None, &with_xdg, &dir.path().join("none")).unwrap(), None, "no file there");
}
