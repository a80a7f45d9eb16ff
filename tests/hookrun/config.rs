//! `[[hooks]]` in the configuration: what parses, what validation refuses (naming the key), and
//! overrides by entry number. They never read the process environment: each case has its own.

use butler::config::{parse_str, ConfigError, Env, HookEvent, HookKind};

/// The problem keys of `text` with `vars`, or the parse error's text.
fn problems(text: &str, vars: &[(&str, &str)]) -> Result<Vec<String>, String> {
    let config = parse_str(text, "hooks.toml", &Env::from_pairs(vars.iter().copied())).map_err(|e| e.to_string())?;
    match config.validate() {
        Ok(()) => Ok(Vec::new()),
        Err(ConfigError::Invalid { problems, .. }) => Ok(problems.into_iter().map(|p| p.key).collect()),
        Err(e) => Err(e.to_string()),
    }
}

fn no_env() -> Env {
    Env::from_pairs(Vec::<(String, String)>::new())
}

#[test]
fn hook_validation() {
    let cmd = "[[hooks]]\nevent = \"pre_tool_use\"\ntype = \"command\"\ncommand = \"./guard.sh\"\n";
    let http = "[[hooks]]\nevent = \"post_tool_use\"\ntype = \"http\"\nurl = \"https://audit.example.com/x\"\n";
    // (TOML, overrides, problem keys)
    type Case = (String, Vec<(&'static str, &'static str)>, Vec<&'static str>);
    let cases: Vec<Case> = vec![
        (String::new(), vec![], vec![]),
        (cmd.into(), vec![], vec![]),
        (http.into(), vec![], vec![]),
        (format!("{cmd}{http}"), vec![], vec![]),
        (format!("{cmd}matcher = \"file_*\"\ntimeout_secs = 3600\nblock_on_failure = true\n"), vec![], vec![]),
        ("[[hooks]]\nevent = \"session_start\"\ntype = \"command\"\n".into(), vec![], vec!["hooks[0].command"]),
        (
            "[[hooks]]\nevent = \"session_end\"\ntype = \"command\"\ncommand = \"  \"\n".into(),
            vec![],
            vec!["hooks[0].command"],
        ),
        ("[[hooks]]\nevent = \"pre_compact\"\ntype = \"http\"\n".into(), vec![], vec!["hooks[0].url"]),
        (format!("{cmd}{http}").replace("https://", "ftp://"), vec![], vec!["hooks[1].url"]),
        (format!("{cmd}url = \"https://x.example\"\n"), vec![], vec!["hooks[0].url"]),
        (format!("{http}command = \"true\"\n"), vec![], vec!["hooks[0].command"]),
        (format!("{cmd}timeout_secs = 0\n"), vec![], vec!["hooks[0].timeout_secs"]),
        (format!("{cmd}timeout_secs = 3601\n"), vec![], vec!["hooks[0].timeout_secs"]),
        (format!("{cmd}matcher = \"\"\n"), vec![], vec!["hooks[0].matcher"]),
        (cmd.into(), vec![("BUTLER_HOOKS__0__TIMEOUT_SECS", "0")], vec!["hooks[0].timeout_secs"]),
        (format!("{cmd}{http}"), vec![("BUTLER_HOOKS__1__URL", "gopher://x")], vec!["hooks[1].url"]),
        // `sandbox` is for command hooks; `network` only with it.
        (format!("{cmd}sandbox = true\n"), vec![], vec![]),
        (format!("{cmd}sandbox = true\nnetwork = true\n"), vec![], vec![]),
        (format!("{cmd}sandbox = false\nnetwork = false\n"), vec![], vec![]),
        (format!("{http}sandbox = true\n"), vec![], vec!["hooks[0].sandbox"]),
        (format!("{cmd}network = true\n"), vec![], vec!["hooks[0].network"]),
        (cmd.into(), vec![("BUTLER_HOOKS__0__NETWORK", "true")], vec!["hooks[0].network"]),
        (cmd.into(), vec![("BUTLER_HOOKS__0__SANDBOX", "true"), ("BUTLER_HOOKS__0__NETWORK", "true")], vec![]),
    ];
    for (text, vars, expected) in cases {
        let got = problems(&text, &vars).unwrap_or_else(|e| panic!("{text}\n{vars:?}: {e}"));
        assert_eq!(got, expected, "{text}\n{vars:?}");
    }
}

#[test]
fn hook_keys_parse_with_their_defaults_and_overrides() {
    let text = "[[hooks]]\nevent = \"pre_tool_use\"\ntype = \"command\"\ncommand = \"./guard.sh\"\n";
    let vars = [("BUTLER_HOOKS__0__MATCHER", "shell"), ("BUTLER_HOOKS__0__BLOCK_ON_FAILURE", "true")];
    let config = parse_str(text, "hooks.toml", &Env::from_pairs(vars)).unwrap();
    let hook = &config.hooks[0];
    assert_eq!((hook.event, hook.kind), (HookEvent::PreToolUse, HookKind::Command));
    assert_eq!((hook.matcher.as_str(), hook.timeout_secs, hook.block_on_failure), ("shell", 5, true));
    let defaults = parse_str(text, "hooks.toml", &no_env()).unwrap();
    assert_eq!((defaults.hooks[0].matcher.as_str(), defaults.hooks[0].block_on_failure), ("*", false));
    // Hooks are the operator's own commands: unsandboxed unless asked.
    assert_eq!((defaults.hooks[0].sandbox, defaults.hooks[0].network), (false, false));
    let vars = [("BUTLER_HOOKS__0__SANDBOX", "true")];
    assert!(parse_str(text, "hooks.toml", &Env::from_pairs(vars)).unwrap().hooks[0].sandbox);
    // Unknown keys and events are errors that name them.
    for (bad, fragment) in [("timeout = 5\n", "timeout"), ("event = \"pre_tool\"\n", "pre_tool")] {
        let text = format!("[[hooks]]\ntype = \"command\"\ncommand = \"x\"\n{bad}");
        let text = if bad.starts_with("event") { text } else { format!("{text}event = \"pre_tool_use\"\n") };
        let err = parse_str(&text, "hooks.toml", &no_env()).unwrap_err();
        assert!(err.to_string().contains(fragment), "{text}: {err}");
    }
}
