//! The rules of `[secrets]`: a name the tools can say, exactly one of `value` and `file`, host
//! patterns the http tools understand, a header name HTTP accepts, and every `secret:NAME`
//! reference of an MCP server naming one that exists. Each problem names its key; no message
//! ever holds a value.

use crate::config::{Config, Problems};

/// How a value of an MCP server's `env` or `headers` names a `[secrets]` entry.
pub const REFERENCE: &str = "secret:";

/// Adds a problem for each bad `[secrets]` entry or reference to one.
pub fn check_config(cfg: &Config, p: &mut Problems) {
    for (name, s) in &cfg.secrets {
        let key = |k: &str| format!("secrets.{name}.{k}");
        let simple = !name.is_empty()
            && name.len() <= 64
            && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
        if !simple {
            p.add(format!("secrets.{name}"), "a secret's name must be 1-64 of a-z, 0-9, `_` and `-` (e.g. github)");
        }
        match (&s.value, &s.file) {
            (Some(_), Some(_)) => p.add(key("value"), "and `file` are both set; keep one"),
            (None, None) => {
                p.add(key("value"), "or `file` is required: value = \"${ENV_VAR}\" or file = \"/run/secrets/x\"")
            }
            (Some(v), None) if v.expose().is_empty() => p.add(key("value"), "is empty"),
            _ => {}
        }
        for (i, host) in s.hosts.iter().enumerate() {
            let bare = host.strip_prefix("*.").unwrap_or(host);
            let ok = !bare.is_empty()
                && bare.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
                && !bare.starts_with('.')
                && !bare.ends_with('.');
            if !ok {
                p.add(
                    key(&format!("hosts[{i}]")),
                    format!("`{host}` is not a host name (api.github.com, *.example.com)"),
                );
            }
        }
        if axum::http::HeaderName::from_bytes(s.header.as_bytes()).is_err() {
            p.add(key("header"), format!("`{}` is not a valid HTTP header name", s.header));
        }
    }
    for (i, server) in cfg.mcp.servers.iter().enumerate() {
        for (field, map) in [("env", &server.env), ("headers", &server.headers)] {
            for (k, v) in map {
                if let Some(name) = v.expose().strip_prefix(REFERENCE) {
                    if !cfg.secrets.contains_key(name) {
                        p.add(
                            format!("mcp.servers[{i}].{field}.{k}"),
                            format!("names the secret `{name}`, which is not in [secrets]; add [secrets.{name}]"),
                        );
                    }
                }
            }
        }
    }
}
