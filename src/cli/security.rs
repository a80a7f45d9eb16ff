//! `butler security audit` (and the "security" lines of `doctor`): the deployment checked
//! against the ways Butler is known to be exposed - a public address, anyone
//! allowed in, commands or MCP servers without the sandbox, secrets written in the config file,
//! files others can read, link previews, skills from folders someone else (or the agent) can
//! write - each with what to change. (A budget over a model without a price is refused by the
//! config check itself, so no deployment that starts has one.) `--json` prints
//! the findings for CI; the exit code is 1 when any finding is `high` or `medium`.
//!
//! This must never print a secret (it names keys, never values), never change anything, and
//! never open a connection: it reads the config and the files' modes only.

use crate::config::{AccessPolicy, Config, SandboxMode};
use serde::Serialize;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// One thing to change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// A stable name for CI (`public_without_token`, `open_policy`, ...).
    pub id: &'static str,
    /// `high`, `medium` or `low`.
    pub severity: &'static str,
    /// What is exposed, naming the key or file (never a value).
    pub what: String,
    /// What to change.
    pub fix: String,
}

fn finding(id: &'static str, severity: &'static str, what: String, fix: impl Into<String>) -> Finding {
    Finding { id, severity, what, fix: fix.into() }
}

/// Every finding for `cfg`, read from `file` (the config file, if any).
pub fn audit(cfg: &Config, file: Option<&Path>) -> Vec<Finding> {
    let mut out = Vec::new();
    exposure(cfg, &mut out);
    isolation(cfg, &mut out);
    if let Some(file) = file {
        out.extend(written_secrets(file));
    }
    out.extend(readable_files(cfg, file));
    for (name, section) in &cfg.channels.platforms {
        if section.get("link_previews").and_then(toml::Value::as_bool) == Some(true) {
            out.push(finding(
                "link_previews",
                "low",
                format!("[channels.{name}] link_previews = true: a link the model writes is fetched by the platform's preview service"),
                format!("remove link_previews from [channels.{name}] unless you need the previews"),
            ));
        }
    }
    out.extend(writable_skills(cfg));
    out
}

/// Who can reach Butler: a public address, anyone allowed in.
fn exposure(cfg: &Config, out: &mut Vec<Finding>) {
    // (A public address without a web token is refused by the config check itself.)
    let local = cfg.server.listen.parse::<std::net::SocketAddr>().is_ok_and(|a| a.ip().is_loopback());
    if !local {
        out.push(finding(
            "public_listen",
            "medium",
            format!(
                "[server] listen = \"{}\" is reachable from the network: /metrics, /healthz and the webhook \
                 endpoints answer anyone, and only the tokens guard the web chat and its API, in plain HTTP",
                cfg.server.listen
            ),
            "listen on 127.0.0.1 behind a TLS reverse proxy (deploy/ has one), or firewall the port",
        ));
    }
    if cfg.access.policy == AccessPolicy::Open {
        out.push(finding(
            "open_policy",
            "high",
            "[access] policy = \"open\": anyone who finds the bot can use it, its tools and your budget".into(),
            "use policy = \"pairing\" (the default) or \"allowlist\"",
        ));
    }
}

/// Programs started without the sandbox.
fn isolation(cfg: &Config, out: &mut Vec<Finding>) {
    if cfg.tools.shell.enabled && cfg.tools.shell.sandbox == SandboxMode::None {
        out.push(finding(
            "shell_without_sandbox",
            "high",
            "[tools.shell] is on with sandbox = \"none\": a command reads whatever Butler's user can".into(),
            "install bubblewrap and remove sandbox = \"none\" from [tools.shell]",
        ));
    }
    for (i, s) in cfg.mcp.servers.iter().enumerate() {
        if s.command.is_some() && s.sandbox == SandboxMode::None {
            out.push(finding(
                "mcp_without_sandbox",
                "medium",
                format!(
                    "mcp.servers[{i}] (`{}`) runs with sandbox = \"none\": it reads whatever Butler's user can",
                    s.name
                ),
                format!("remove sandbox = \"none\" from mcp.servers[{i}] and list the folders it needs in `paths`"),
            ));
        }
    }
    if cfg.tools.workspace_quota_mb == 0 && (cfg.tools.shell.enabled || cfg.tools.files.enabled) {
        out.push(finding(
            "no_workspace_quota",
            "low",
            "[tools] workspace_quota_mb = 0: one person's tools can fill the disk".into(),
            "set [tools] workspace_quota_mb (the default is 1024)",
        ));
    }
}

/// Secret-named keys of `file` that hold a value instead of `${VAR}` (names only).
fn written_secrets(file: &Path) -> Vec<Finding> {
    let Ok(text) = std::fs::read_to_string(file) else { return vec![] };
    let Ok(table) = text.parse::<toml::Table>() else { return vec![] };
    let mut keys = Vec::new();
    walk(&toml::Value::Table(table), String::new(), false, &mut keys);
    keys.into_iter()
        .map(|key| {
            finding(
                "secret_in_config_file",
                "medium",
                format!("{key} holds a secret written in {}", file.display()),
                format!("move it to the environment: {key} = \"${{SOME_VAR}}\" (or a BUTLER_... override)"),
            )
        })
        .collect()
}

/// Collects the keys under `at` whose value is a literal secret: a secret-named key (not a
/// `public_key`, a `*_command` or a `*_url`), `value` of a `[secrets]` entry, or any value of an
/// `env` or `headers` table (those are secrets by contract). `${VAR}` and `secret:NAME` are not
/// literal.
fn walk(value: &toml::Value, at: String, all_secret: bool, keys: &mut Vec<String>) {
    let toml::Value::Table(table) = value else { return };
    for (k, v) in table {
        let key = if at.is_empty() { k.clone() } else { format!("{at}.{k}") };
        let named = crate::config::is_secret_name(k)
            && !k.starts_with("public")
            && !k.ends_with("_command")
            && !k.ends_with("_url");
        let secret = all_secret || named || (at.starts_with("secrets.") && k == "value");
        match v {
            toml::Value::Table(_) => walk(v, key, k == "env" || k == "headers", keys),
            toml::Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    match item {
                        toml::Value::Table(_) => walk(item, format!("{key}[{i}]"), false, keys),
                        toml::Value::String(s) if secret && literal(s) => keys.push(format!("{key}[{i}]")),
                        _ => {}
                    }
                }
            }
            toml::Value::String(s) if secret && literal(s) => keys.push(key),
            _ => {}
        }
    }
}

/// A value written out, not taken from the environment or a `[secrets]` name.
fn literal(s: &str) -> bool {
    !s.is_empty() && !s.contains("${") && !s.starts_with(crate::secrets::REFERENCE)
}

/// The config file, the database, the data folder and the workspaces: readable by others?
fn readable_files(cfg: &Config, file: Option<&Path>) -> Vec<Finding> {
    let url = cfg.database.url.expose();
    let db =
        url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:")).map(|p| p.split('?').next().unwrap_or(p));
    let workspaces = PathBuf::from(&cfg.tools.workspace_dir);
    let mut paths: Vec<PathBuf> = file.map(Path::to_path_buf).into_iter().collect();
    paths.extend(db.filter(|p| !p.is_empty() && !p.contains(":memory:")).map(PathBuf::from));
    paths.push(crate::skills::data_dir(cfg));
    paths.push(workspaces);
    paths
        .into_iter()
        .filter_map(|p| {
            let mode = std::fs::metadata(&p).ok()?.permissions().mode() & 0o777;
            (mode & 0o077 != 0).then(|| {
                finding(
                    "readable_by_others",
                    "medium",
                    format!("{} has mode {mode:o}: other users of this machine can read it", p.display()),
                    format!("chmod go-rwx {} (Butler creates its files 0600 and folders 0700)", p.display()),
                )
            })
        })
        .collect()
}

/// Skill folders the agent (inside the workspaces) or other users can write: a skill is
/// instructions the model follows.
fn writable_skills(cfg: &Config) -> Vec<Finding> {
    let workspaces = std::path::absolute(&cfg.tools.workspace_dir).unwrap_or_default();
    crate::skills::roots(cfg)
        .into_iter()
        .filter_map(|root| {
            let path = std::path::absolute(&root.path).unwrap_or(root.path);
            let mode = std::fs::metadata(&path).ok().map(|m| m.permissions().mode() & 0o777);
            let why = if path.starts_with(&workspaces) {
                "is inside the workspaces, where the agent's tools write"
            } else if mode.is_some_and(|m| m & 0o022 != 0) {
                "can be written by other users"
            } else {
                return None;
            };
            Some(finding(
                "writable_skills",
                "medium",
                format!(
                    "the skills folder {} {why}: a skill there becomes instructions the model follows",
                    path.display()
                ),
                "keep skills in a folder only the owner can write, outside [tools] workspace_dir",
            ))
        })
        .collect()
}

/// `butler security audit [--json]`: prints the findings; `Ok(true)` when nothing high or
/// medium was found.
pub fn run(cfg: &Config, file: Option<&Path>, json: bool) -> bool {
    let found = audit(cfg, file);
    let clean = !found.iter().any(|f| f.severity != "low");
    if json {
        let body = serde_json::json!({"ok": clean, "findings": found});
        println!("{}", serde_json::to_string_pretty(&body).unwrap_or_default());
        return clean;
    }
    if found.is_empty() {
        println!("[ ok ] security: nothing to change");
    }
    print_lines(&found);
    clean
}

/// The findings as doctor-style lines.
pub fn print_lines(found: &[Finding]) {
    for f in found {
        let tag = if f.severity == "low" { "note" } else { "warn" };
        println!("[{tag}] security ({}): {}", f.severity, f.what);
        println!("       fix: {}", f.fix);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_literal_secrets_are_named() {
        let text = r#"
            [llm]
            api_key = "sk-literal"
            model = "gpt-4o-mini"
            max_tokens = 5
            [channels.discord]
            token = "${DISCORD}"
            public_key = "d75a98"
            [channels.email.imap]
            password = "hunter2"
            token_command = "oauth2 get"
            [secrets.github]
            value = "ghp-literal"
            hosts = ["api.github.com"]
            header = "Authorization"
            [secrets.pypi]
            file = "/run/secrets/pypi"
            [[mcp.servers]]
            name = "files"
            env = { TOKEN = "secret:github", OTHER = "plain-in-file", FROM = "${X}" }
            headers = { Authorization = "Bearer abc" }
        "#;
        let mut keys = Vec::new();
        walk(&toml::Value::Table(text.parse().unwrap()), String::new(), false, &mut keys);
        keys.sort();
        let want = [
            "channels.email.imap.password",
            "llm.api_key",
            "mcp.servers[0].env.OTHER",
            "mcp.servers[0].headers.Authorization",
            "secrets.github.value",
        ];
        assert_eq!(keys, want);
    }
}
