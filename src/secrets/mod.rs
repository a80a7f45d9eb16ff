//! Secrets the model never handles: the `[secrets]` a tool names (`http_request` with
//! `auth = "github"`, an MCP server's `env = { TOKEN = "secret:github" }`), resolved once at
//! start from the environment or a file, handed to the host side of a call after the
//! permission check, and cut out of whatever comes back. The [`Vault`] also knows every other
//! secret of the config (the model's API keys, tokens, MCP `env` and `headers`), so a tool
//! result echoing any of them is redacted before it reaches the model, the transcript or a log.
//!
//! This must never return a value to anything that reaches the model: only the header a call
//! sends and the environment a server starts with carry one, and every error names the secret,
//! never its value.

mod check;

pub use check::{check_config, REFERENCE};

use crate::config::Config;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Values shorter than this are not redacted (they would match ordinary text).
const MIN_REDACTED: usize = 8;

/// Why a secret could not be had.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SecretsError {
    #[error("secrets.{name}.file `{path}` could not be read ({why}); fix the path or its permissions")]
    File { name: String, path: String, why: String },
    #[error("`{name}` is not a secret of [secrets]; the secrets are: {known}")]
    Unknown { name: String, known: String },
    #[error("the secret `{name}` may only be sent to {allowed}, not to `{host}` (secrets.{name}.hosts)")]
    WrongHost { name: String, host: String, allowed: String },
}

/// One resolved `[secrets]` entry.
#[derive(Clone)]
struct Named {
    value: String,
    hosts: Vec<String>,
    header: String,
    scheme: String,
}

/// The resolved secrets and every secret value the config holds.
#[derive(Clone, Default)]
pub struct Vault {
    named: BTreeMap<String, Named>,
    /// (value, label) of every secret to cut out of results, longest first.
    known: Vec<(String, String)>,
}

impl std::fmt::Debug for Vault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vault").field("named", &self.named.keys().collect::<Vec<_>>()).finish()
    }
}

impl Vault {
    /// Resolves `cfg`'s `[secrets]` (reading the files) and gathers the config's other secrets.
    pub fn load(cfg: &Config) -> Result<Arc<Self>, SecretsError> {
        let mut named = BTreeMap::new();
        for (name, s) in &cfg.secrets {
            let value = match (&s.value, &s.file) {
                (Some(v), _) => v.expose().to_string(),
                (None, Some(path)) => {
                    std::fs::read_to_string(path).map(|t| t.trim_end_matches(['\n', '\r']).to_string()).map_err(
                        |e| SecretsError::File { name: name.clone(), path: path.clone(), why: e.kind().to_string() },
                    )?
                }
                (None, None) => String::new(),
            };
            let entry = Named { value, hosts: s.hosts.clone(), header: s.header.clone(), scheme: s.scheme.clone() };
            named.insert(name.clone(), entry);
        }
        let mut known: Vec<(String, String)> =
            named.iter().map(|(name, n)| (n.value.clone(), format!("secret {name}"))).collect();
        known.extend(config_secrets(cfg));
        known.retain(|(v, _)| v.chars().count() >= MIN_REDACTED);
        known.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.1.cmp(&b.1)));
        known.dedup_by(|a, b| a.0 == b.0);
        Ok(Arc::new(Self { named, known }))
    }

    /// The names a call may use as `auth` for some host, sorted.
    pub fn http_names(&self) -> Vec<&str> {
        self.named.iter().filter(|(_, n)| !n.hosts.is_empty()).map(|(k, _)| k.as_str()).collect()
    }

    /// The header `name` adds to a request to `host`, after the call was permitted.
    pub fn header_for(&self, name: &str, host: &str) -> Result<(String, String), SecretsError> {
        let n = self
            .named
            .get(name)
            .filter(|n| !n.hosts.is_empty())
            .ok_or_else(|| SecretsError::Unknown { name: name.to_string(), known: self.http_names().join(", ") })?;
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        if !n.hosts.iter().any(|pattern| host_matches(pattern, &host)) {
            return Err(SecretsError::WrongHost { name: name.to_string(), host, allowed: n.hosts.join(", ") });
        }
        let value = if n.scheme.is_empty() { n.value.clone() } else { format!("{} {}", n.scheme, n.value) };
        Ok((n.header.clone(), value))
    }

    /// `raw` with a `secret:NAME` reference replaced by that secret's value (other values as
    /// they are): an MCP server's `env` and `headers`.
    pub fn resolve(&self, raw: &str) -> Result<String, SecretsError> {
        match raw.strip_prefix(REFERENCE) {
            Some(name) => self.named.get(name).map(|n| n.value.clone()).ok_or_else(|| SecretsError::Unknown {
                name: name.to_string(),
                known: self.named.keys().cloned().collect::<Vec<_>>().join(", "),
            }),
            None => Ok(raw.to_string()),
        }
    }

    /// `text` with every known secret value replaced by `[secret NAME]` (or `[redacted: KEY]`).
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (value, label) in &self.known {
            if out.contains(value.as_str()) {
                out = out.replace(value.as_str(), &format!("[{label}]"));
            }
        }
        out
    }

    /// Whether `text` holds a known secret value.
    pub fn leaks(&self, text: &str) -> bool {
        self.known.iter().any(|(v, _)| text.contains(v.as_str()))
    }
}

/// Whether `host` is `pattern` or, for `*.example.com`, below it (ASCII case ignored).
fn host_matches(pattern: &str, host: &str) -> bool {
    let pattern = pattern.to_ascii_lowercase();
    match pattern.strip_prefix("*.") {
        Some(base) => host.ends_with(&format!(".{base}")),
        None => host == pattern,
    }
}

/// Every other secret value of `cfg`, labelled by its key.
fn config_secrets(cfg: &Config) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut add = |value: &str, label: String| out.push((value.to_string(), format!("redacted: {label}")));
    if let Some(k) = &cfg.llm.api_key {
        add(k.expose(), "llm.api_key".into());
    }
    for (i, f) in cfg.llm.fallback.iter().enumerate() {
        if let Some(k) = &f.api_key {
            add(k.expose(), format!("llm.fallback[{i}].api_key"));
        }
    }
    for (name, t) in &cfg.llm.tiers {
        if let Some(k) = &t.api_key {
            add(k.expose(), format!("llm.tiers.{name}.api_key"));
        }
    }
    if let Some(t) = &cfg.channels.web.token {
        add(t.expose(), "channels.web.token".into());
    }
    for (name, t) in &cfg.channels.web.tokens {
        add(t.expose(), format!("channels.web.tokens.{name}"));
    }
    for (name, section) in &cfg.channels.platforms {
        for (key, value) in section {
            if let (true, Some(v)) = (crate::config::is_secret_name(key), value.as_str()) {
                add(v, format!("channels.{name}.{key}"));
            }
        }
    }
    for t in &cfg.triggers {
        add(t.secret.expose(), format!("triggers.{}.secret", t.name));
    }
    for (i, s) in cfg.mcp.servers.iter().enumerate() {
        for (k, v) in s.env.iter().chain(&s.headers) {
            if !v.expose().starts_with(REFERENCE) {
                add(v.expose(), format!("mcp.servers[{i}].{k}"));
            }
        }
    }
    let keys = [
        (cfg.tools.web_search.api_key.as_ref(), "tools.web_search.api_key"),
        (cfg.memory.embeddings.as_ref().and_then(|e| e.api_key.as_ref()), "memory.embeddings.api_key"),
        (cfg.media.transcription.as_ref().and_then(|t| t.api_key.as_ref()), "media.transcription.api_key"),
    ];
    for (key, label) in keys {
        if let Some(k) = key {
            add(k.expose(), label.into());
        }
    }
    out
}

#[cfg(test)]
mod tests;
