//! The vault as tables: which header goes to which host, references, redaction, and the
//! config's rules.

use super::*;
use crate::config::{Config, McpServerConfig, Secret, SecretConfig};

fn vault() -> Arc<Vault> {
    let mut cfg = Config::default();
    let dir = std::env::temp_dir().join(format!("butler-vault-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("pypi");
    std::fs::write(&file, "pypi-token-from-a-file\n").unwrap();
    cfg.secrets.insert(
        "github".into(),
        SecretConfig {
            value: Some(Secret::new("ghp_canary0123456789")),
            hosts: vec!["api.github.com".into(), "*.ghe.example.com".into()],
            ..SecretConfig::default()
        },
    );
    cfg.secrets.insert(
        "pypi".into(),
        SecretConfig {
            file: Some(file.display().to_string()),
            hosts: vec!["upload.pypi.org".into()],
            header: "X-Token".into(),
            scheme: String::new(),
            ..SecretConfig::default()
        },
    );
    cfg.secrets.insert(
        "notes".into(),
        SecretConfig { value: Some(Secret::new("notes-server-key-42")), ..SecretConfig::default() },
    );
    cfg.llm.api_key = Some(Secret::new("sk-llm-key-abcdef"));
    let mut server = McpServerConfig { name: "x".into(), command: Some("x".into()), ..Default::default() };
    server.env.insert("TOKEN".into(), Secret::new("secret:notes"));
    server.env.insert("OTHER".into(), Secret::new("mcp-env-literal-999"));
    cfg.mcp.servers.push(server);
    Vault::load(&cfg).unwrap()
}

#[test]
fn headers_go_only_to_their_hosts() {
    let v = vault();
    assert_eq!(v.http_names(), ["github", "pypi"], "notes has no hosts: not for http");
    // (name, host, header or error)
    type Want = Result<(&'static str, &'static str), &'static str>;
    let cases: &[(&str, &str, Want)] = &[
        ("github", "api.github.com", Ok(("Authorization", "Bearer ghp_canary0123456789"))),
        ("github", "API.GitHub.com.", Ok(("Authorization", "Bearer ghp_canary0123456789"))),
        ("github", "x.ghe.example.com", Ok(("Authorization", "Bearer ghp_canary0123456789"))),
        ("github", "ghe.example.com", Err("may only be sent to api.github.com, *.ghe.example.com")),
        ("github", "evil.example", Err("not to `evil.example`")),
        ("github", "api.github.com.evil.example", Err("may only be sent to")),
        ("pypi", "upload.pypi.org", Ok(("X-Token", "pypi-token-from-a-file"))),
        ("notes", "api.github.com", Err("`notes` is not a secret of [secrets]")),
        ("nope", "api.github.com", Err("the secrets are: github, pypi")),
    ];
    for (name, host, want) in cases {
        let got = v.header_for(name, host);
        match (got, want) {
            (Ok((h, val)), Ok((wh, wv))) => assert_eq!((h.as_str(), val.as_str()), (*wh, *wv), "{name} {host}"),
            (Err(e), Err(needle)) => {
                let text = e.to_string();
                assert!(text.contains(needle), "{name} {host}: {text}");
                assert!(!text.contains("ghp_canary") && !text.contains("pypi-token"), "{text}");
            }
            (got, want) => panic!("{name} {host}: {got:?} vs {want:?}"),
        }
    }
}

#[test]
fn references_resolve_and_results_are_redacted() {
    let v = vault();
    assert_eq!(v.resolve("secret:notes").unwrap(), "notes-server-key-42");
    assert_eq!(v.resolve("plain value").unwrap(), "plain value");
    assert!(v.resolve("secret:missing").unwrap_err().to_string().contains("`missing` is not a secret"));
    // (text, redacted)
    let cases = [
        ("token=ghp_canary0123456789!", "token=[secret github]!"),
        ("key sk-llm-key-abcdef and pypi-token-from-a-file", "key [redacted: llm.api_key] and [secret pypi]"),
        ("env OTHER=mcp-env-literal-999", "env OTHER=[redacted: mcp.servers[0].OTHER]"),
        ("TOKEN=notes-server-key-42", "TOKEN=[secret notes]"),
        ("nothing secret here", "nothing secret here"),
    ];
    for (text, want) in cases {
        assert_eq!(v.redact(text), want);
        assert_eq!(v.leaks(text), text != want, "{text}");
    }
    assert!(!format!("{v:?}").contains("ghp_canary"));
}

#[test]
fn bad_entries_name_their_key() {
    type Tune = fn(&mut Config);
    let cases: Vec<(Tune, Vec<&str>)> = vec![
        (|_| {}, vec![]),
        (
            |c| {
                c.secrets
                    .insert("Git Hub".into(), SecretConfig { value: Some(Secret::new("x")), ..Default::default() });
            },
            vec!["secrets.Git Hub"],
        ),
        (
            |c| {
                c.secrets.insert("g".into(), SecretConfig::default());
            },
            vec!["secrets.g.value"],
        ),
        (
            |c| {
                c.secrets.insert(
                    "g".into(),
                    SecretConfig { value: Some(Secret::new("x")), file: Some("/f".into()), ..Default::default() },
                );
            },
            vec!["secrets.g.value"],
        ),
        (
            |c| {
                c.secrets.insert(
                    "g".into(),
                    SecretConfig {
                        value: Some(Secret::new("x")),
                        hosts: vec!["https://x".into()],
                        ..Default::default()
                    },
                );
            },
            vec!["secrets.g.hosts[0]"],
        ),
        (
            |c| {
                c.secrets.insert(
                    "g".into(),
                    SecretConfig { value: Some(Secret::new("x")), header: "bad header".into(), ..Default::default() },
                );
            },
            vec!["secrets.g.header"],
        ),
        (
            |c| {
                let mut s = McpServerConfig { name: "m".into(), command: Some("m".into()), ..Default::default() };
                s.env.insert("T".into(), Secret::new("secret:absent"));
                c.mcp.servers.push(s);
            },
            vec!["mcp.servers[0].env.T"],
        ),
    ];
    for (i, (tune, want)) in cases.into_iter().enumerate() {
        let mut cfg = Config::default();
        tune(&mut cfg);
        let mut p = crate::config::Problems::default();
        check_config(&cfg, &mut p);
        let keys: Vec<String> =
            p.into_lines().into_iter().map(|l| l.split(": ").next().unwrap_or_default().to_string()).collect();
        assert_eq!(keys, want, "case {i}");
    }
}
