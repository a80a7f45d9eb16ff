//! The rules of `[mcp]` and `[[mcp.servers]]` (the data lives in `crate::config`): each server
//! has exactly one of `command` (stdio) and `url` (streamable HTTP), a unique name of a-z, 0-9,
//! `_` and `-`, timeouts above 0; plus the helpers that turn a server's tools into names the
//! model providers accept (`^[a-zA-Z0-9_-]{1,64}$`) and pick the tools a server offers.
//!
//! Every problem names its key. This must never start, resolve or connect to anything, and a
//! message must never contain an `env` or `headers` value (they hold tokens).

use crate::config::{Config, McpServerConfig, Problems};
use crate::permissions::glob_match;

/// Longest tool name the model providers accept.
pub const MAX_TOOL_NAME: usize = 64;

/// `[mcp]` and every `[[mcp.servers]]` entry; one problem per bad value, each naming its key.
pub fn check_config(cfg: &Config, p: &mut Problems) {
    p.positive("mcp.max_schema_tokens", cfg.mcp.max_schema_tokens);
    let mut seen: Vec<&str> = Vec::new();
    for (i, server) in cfg.mcp.servers.iter().enumerate() {
        let key = |k: &str| format!("mcp.servers[{i}].{k}");
        check_server(server, &key, p);
        if !server.name.is_empty() {
            if let Some(first) = seen.iter().position(|n| *n == server.name) {
                p.add(
                    key("name"),
                    format!("`{}` is already the name of mcp.servers[{first}]; each server needs its own", server.name),
                );
            }
            seen.push(&server.name);
        }
    }
}

fn check_server(s: &McpServerConfig, key: &dyn Fn(&str) -> String, p: &mut Problems) {
    if s.name.is_empty() {
        p.add(key("name"), "is required: a-z, 0-9, `_` and `-`; its tools reach the model as <name>__<tool>");
    } else if let Some(c) =
        s.name.chars().find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_' || *c == '-'))
    {
        p.add(key("name"), format!("`{}` has {c:?}; use only a-z, 0-9, `_` and `-`", s.name));
    } else if s.name.len() > 32 {
        p.add(key("name"), "is longer than 32 characters; tool names must fit in 64 with the tool's own name");
    }
    match (&s.command, &s.url) {
        (Some(_), Some(_)) => p.add(
            key("command"),
            "and `url` are both set; a server is either stdio (`command`, `args`, `env`, `cwd`) or streamable \
             HTTP (`url`, `headers`): remove one",
        ),
        (None, None) => p.add(
            key("command"),
            "or `url` is required: `command` starts a stdio server, `url` names a streamable HTTP endpoint",
        ),
        (Some(cmd), None) => {
            if cmd.trim().is_empty() {
                p.add(key("command"), "must not be empty");
            }
            if !s.headers.is_empty() {
                p.add(key("headers"), "only applies to `url` servers; a stdio server gets `env` instead");
            }
            for (i, path) in s.paths.iter().enumerate() {
                let at = std::path::Path::new(path);
                let plain = at
                    .components()
                    .all(|c| matches!(c, std::path::Component::RootDir | std::path::Component::Normal(_)));
                if !at.is_absolute() || !plain || at.parent().is_none() {
                    p.add(
                        key(&format!("paths[{i}]")),
                        format!("`{path}` must be an absolute folder below / (e.g. /srv/notes), without `..`"),
                    );
                }
            }
        }
        (None, Some(url)) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) || url.len() <= "https://".len() {
                p.add(key("url"), "must be an http:// or https:// URL of the server's MCP endpoint");
            }
            let stdio_only = [
                ("args", !s.args.is_empty()),
                ("env", !s.env.is_empty()),
                ("cwd", s.cwd.is_some()),
                ("paths", !s.paths.is_empty()),
            ];
            for (field, set) in stdio_only {
                if set {
                    p.add(key(field), "only applies to `command` servers; remove it or use `headers`");
                }
            }
            for name in s.headers.keys() {
                if axum::http::HeaderName::from_bytes(name.as_bytes()).is_err() {
                    p.add(key("headers"), format!("`{name}` is not a valid HTTP header name"));
                }
            }
        }
    }
    for name in s.env.keys() {
        if name.is_empty() || name.contains('=') || name.contains('\0') {
            p.add(key("env"), format!("`{name}` is not a valid environment variable name"));
        }
    }
    p.positive(&key("timeout_secs"), s.timeout_secs);
    p.positive(&key("connect_timeout_secs"), s.connect_timeout_secs);
    if s.tools.is_empty() {
        p.add(key("tools"), "is empty, so the server offers nothing; use [\"*\"] for all of its tools");
    }
}

/// Whether the server's `tools` globs take `tool` and its `exclude` globs do not.
pub fn offered(server: &McpServerConfig, tool: &str) -> bool {
    server.tools.iter().any(|g| glob_match(g, tool)) && !server.exclude.iter().any(|g| glob_match(g, tool))
}

/// `<server>__<tool>` with every character outside `[a-zA-Z0-9_-]` replaced by `_`, cut to 64
/// characters. Distinct tools may map to one name; the caller refuses the second.
pub fn tool_name(server: &str, tool: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
    };
    let mut name = format!("{}__{}", clean(server), clean(tool));
    name.truncate(MAX_TOOL_NAME);
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names() {
        let long = "x".repeat(80);
        let cases = [
            ("files", "read_file", "files__read_file".to_string()),
            ("gh", "repo.list", "gh__repo_list".to_string()),
            ("a-b", "émoji tool/1", "a-b__émoji_tool_1".replace('é', "_")),
            ("s", long.as_str(), format!("s__{}", "x".repeat(61))),
        ];
        for (server, tool, want) in cases {
            let got = tool_name(server, tool);
            assert_eq!(got, want, "{server} {tool}");
            assert!(
                got.len() <= MAX_TOOL_NAME && got.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            );
        }
    }

    #[test]
    fn include_and_exclude() {
        let s = McpServerConfig {
            tools: vec!["read_*".into(), "list".into()],
            exclude: vec!["read_secret".into()],
            ..Default::default()
        };
        for (tool, want) in [("read_file", true), ("list", true), ("read_secret", false), ("delete", false)] {
            assert_eq!(offered(&s, tool), want, "{tool}");
        }
    }
}
