//! `ConfigError`: every way loading or validating the configuration can fail, each message naming
//! the file (or environment variable) and the exact key path, and saying what to do.
//!
//! A message built here must never contain a secret value: callers pass key paths, variable
//! names and sanitized reasons only ([`sanitize`] cuts values out of serde messages).

use std::fmt;
use std::path::PathBuf;

/// Where the pointer to a config file came from, for "does not exist" errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileFrom {
    /// `butler --config PATH`.
    Flag,
    /// The `BUTLER_CONFIG` environment variable.
    EnvVar,
}

impl fmt::Display for FileFrom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FileFrom::Flag => "--config",
            FileFrom::EnvVar => "BUTLER_CONFIG",
        })
    }
}

/// One problem found by [`crate::config::Config::validate`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The key path, e.g. `server.listen` or `channels.web.tokens.alice`.
    pub key: String,
    /// What is wrong and what to do about it (never the value of a secret).
    pub message: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// `--config PATH` or `BUTLER_CONFIG` names a file that does not exist.
    #[error(
        "config file {} (from {from}) does not exist; fix the path, or unset {from} to use \
         config/butler.toml or the built-in defaults",
        path.display()
    )]
    NotFound { path: PathBuf, from: FileFrom },

    /// The file exists but cannot be read.
    #[error("cannot read config file {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// The file is not valid TOML.
    #[error("{file}:{line}:{column}: TOML syntax error: {message}")]
    Syntax { file: String, line: usize, column: usize, message: String },

    /// A key the configuration does not have (often a typo).
    #[error(
        "{file}: unknown key `{key}`{}{} (every key is listed in config/butler.example.toml)",
        at_line(*line),
        did_you_mean(suggestion)
    )]
    UnknownKey { file: String, key: String, line: Option<usize>, suggestion: Option<String> },

    /// A required key is absent (e.g. `model` in an `[[llm.fallback]]` entry).
    #[error("{file}: missing key `{key}`{}; add it", at_line(*line))]
    MissingKey { file: String, key: String, line: Option<usize> },

    /// A value of the wrong type or out of range.
    #[error("{file}: bad value for `{key}`{}: {reason}", at_line(*line))]
    BadValue { file: String, key: String, line: Option<usize>, reason: String },

    /// `${VAR}` names a variable that is not set.
    #[error(
        "{file}: `{key}` uses ${{{var}}}, but {var} is not set; set {var} in the environment, \
         or write ${{{var}:-default}} to fall back to a default"
    )]
    MissingVar { file: String, key: String, var: String },

    /// A malformed `${...}` (unterminated, or not a variable name).
    #[error("{file}: `{key}`: {reason} (write ${{NAME}} or ${{NAME:-default}}; `$${{` gives a literal `${{`)")]
    BadInterpolation { file: String, key: String, reason: String },

    /// `BUTLER_<SECTION>__<KEY>` names a key the configuration does not have.
    #[error(
        "environment variable {var} overrides unknown key `{key}`{} (fix or unset {var}; \
         overrides are BUTLER_<SECTION>__<KEY>, with a double underscore between levels)",
        did_you_mean(suggestion)
    )]
    UnknownOverride { var: String, key: String, suggestion: Option<String> },

    /// An override whose value does not fit its key, or that cannot be applied.
    #[error("environment variable {var}: bad value for `{key}`: {reason}")]
    BadOverride { var: String, key: String, reason: String },

    /// Values that parse but make no sense (see `Config::validate`).
    #[error("{}", fmt_problems(origin, problems))]
    Invalid { origin: String, problems: Vec<Problem> },
}

impl ConfigError {
    /// The key path the error is about, when there is one (the first one for `Invalid`).
    pub fn key(&self) -> Option<&str> {
        match self {
            ConfigError::UnknownKey { key, .. }
            | ConfigError::MissingKey { key, .. }
            | ConfigError::BadValue { key, .. }
            | ConfigError::MissingVar { key, .. }
            | ConfigError::BadInterpolation { key, .. }
            | ConfigError::UnknownOverride { key, .. }
            | ConfigError::BadOverride { key, .. } => Some(key),
            ConfigError::Invalid { problems, .. } => problems.first().map(|p| p.key.as_str()),
            ConfigError::NotFound { .. } | ConfigError::Read { .. } | ConfigError::Syntax { .. } => None,
        }
    }
}

fn at_line(line: Option<usize>) -> String {
    line.map(|l| format!(" (line {l})")).unwrap_or_default()
}

fn did_you_mean(suggestion: &Option<String>) -> String {
    suggestion.as_ref().map(|s| format!("; did you mean `{s}`?")).unwrap_or_default()
}

fn fmt_problems(origin: &str, problems: &[Problem]) -> String {
    match problems {
        [one] => format!("{origin}: invalid `{}`: {}", one.key, one.message),
        many => {
            let mut out = format!("{origin}: {} problems:", many.len());
            for p in many {
                out.push_str(&format!("\n  - `{}`: {}", p.key, p.message));
            }
            out
        }
    }
}

/// One step of a key path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Seg {
    Key(String),
    Index(usize),
}

/// A key path, printed TOML-style: `llm.fallback[0].model`, `channels.web.tokens."a.b"`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct KeyPath(pub Vec<Seg>);

impl KeyPath {
    pub fn child(&self, key: &str) -> KeyPath {
        let mut segs = self.0.clone();
        segs.push(Seg::Key(key.to_string()));
        KeyPath(segs)
    }

    pub fn index(&self, i: usize) -> KeyPath {
        let mut segs = self.0.clone();
        segs.push(Seg::Index(i));
        KeyPath(segs)
    }

    pub fn starts_with(&self, prefix: &KeyPath) -> bool {
        self.0.starts_with(&prefix.0)
    }

    pub fn last_key(&self) -> Option<&str> {
        self.0.iter().rev().find_map(|s| match s {
            Seg::Key(k) => Some(k.as_str()),
            Seg::Index(_) => None,
        })
    }
}

impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("(top level)");
        }
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                Seg::Index(n) => write!(f, "[{n}]")?,
                Seg::Key(k) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    let bare = !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
                    if bare {
                        f.write_str(k)?;
                    } else {
                        write!(f, "{k:?}")?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// The closest candidate to `word` (edit distance at most 2, or a prefix match), for "did you
/// mean" hints.
pub(crate) fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (edit_distance(word, c), c))
        .filter(|(d, c)| *d <= 2.min(c.len().saturating_sub(1)) || (word.len() >= 3 && c.starts_with(word)))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Key path segments whose values may be secrets: their values never appear in a message.
fn is_sensitive(path: &KeyPath) -> bool {
    path.0.iter().any(|s| match s {
        Seg::Key(k) => ["token", "secret", "key", "password", "pass", "url"].iter().any(|w| k.contains(w)),
        Seg::Index(_) => false,
    })
}

/// serde's message, with the quoted value cut out when the key may hold a secret or a string
/// was expected (every secret is a string, so a misplaced one shows up here).
pub(crate) fn sanitize(message: &str, path: &KeyPath) -> String {
    if !is_sensitive(path) && !message.contains("expected a string") {
        return message.to_string();
    }
    for prefix in ["invalid type: ", "invalid value: "] {
        if let Some(rest) = message.strip_prefix(prefix) {
            if let Some(at) = rest.rfind(", expected ") {
                let kind = rest[..at].split(['"', '`']).next().unwrap_or("").trim();
                return format!("{prefix}{kind}, {}", &rest[at + 2..]);
            }
        }
    }
    "this value is not accepted here (details hidden because the value may be a secret)".into()
}
