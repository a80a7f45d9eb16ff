//! Deserializing the merged TOML tree into [`Config`] and turning serde's errors into
//! [`ConfigError`]s that name the file (or the override variable), the exact key path and, for
//! keys written in the file, the line.
//!
//! serde's messages can quote the offending value (`invalid type: string "x"`); for keys that
//! may hold a secret the value is cut out. Nothing here may put a secret into a message.

use super::super::error::{closest, sanitize, ConfigError, KeyPath, Seg};
use super::super::{Config, SectionOverride};
use super::overrides::{Applied, PREFIX};
use serde_path_to_error::Segment;
use toml::de::{DeArray, DeTable, DeValue};
use toml::{Table, Value};

/// Deserializes `table` (built from `text`, the contents of `origin`, plus the `applied`
/// overrides). An override whose TOML reading does not fit its key is retried as the plain
/// string (or, for a list key, as a comma-separated list) before an error is reported.
pub(super) fn deserialize(
    mut table: Table,
    text: &str,
    origin: &str,
    applied: Vec<Applied>,
) -> Result<Config, ConfigError> {
    let mut retried: Vec<KeyPath> = Vec::new();
    loop {
        let err = match serde_path_to_error::deserialize::<_, Config>(Value::Table(table.clone())) {
            Ok(mut config) => {
                config.channels.overrides = channel_overrides(&applied);
                return Ok(config);
            }
            Err(err) => err,
        };
        let path = key_path(err.path());
        let message = err.inner().message().trim().to_string();
        let retry = applied.iter().find(|a| a.path == path && !retried.contains(&a.path));
        if let Some(ov) = retry {
            if let Some(value) = fallback_value(&message, &ov.raw) {
                if let Some(slot) = value_at(&mut table, &path) {
                    *slot = value;
                    retried.push(path);
                    continue;
                }
            }
        }
        return Err(classify(path, &message, text, origin, &applied));
    }
}

/// The overrides that set keys inside a platform channel's raw section (`channels.<name>.*`,
/// not the web chat's), which only the channel's own type can read.
fn channel_overrides(applied: &[Applied]) -> Vec<SectionOverride> {
    applied
        .iter()
        .filter_map(|a| {
            let keys: Vec<String> = a
                .path
                .0
                .iter()
                .map(|s| match s {
                    Seg::Key(k) => k.clone(),
                    Seg::Index(i) => i.to_string(),
                })
                .collect();
            match keys.split_first() {
                Some((first, rest)) if first == "channels" && rest.first().is_some_and(|n| n != "web") => {
                    Some(SectionOverride { var: a.var.clone(), path: rest.to_vec(), raw: a.raw.clone() })
                }
                _ => None,
            }
        })
        .collect()
}

/// For an override read as TOML that does not fit: the plain string when a string is wanted,
/// a list of the comma-separated parts when a list is wanted.
fn fallback_value(message: &str, raw: &str) -> Option<Value> {
    if !message.starts_with("invalid type:") {
        return None;
    }
    if message.ends_with("expected a string") {
        return Some(Value::String(raw.to_string()));
    }
    if message.ends_with("expected a sequence") {
        let items = raw.split(',').map(str::trim).filter(|s| !s.is_empty());
        return Some(Value::Array(items.map(|s| Value::String(s.to_string())).collect()));
    }
    None
}

fn classify(path: KeyPath, message: &str, text: &str, origin: &str, applied: &[Applied]) -> ConfigError {
    let file = origin.to_string();
    if let Some((field, expected)) = parse_unknown_field(message) {
        let parent = path.clone();
        let key = if path.last_key() == Some(field.as_str()) { path } else { path.child(&field) };
        let parent = if parent == key { KeyPath(key.0[..key.0.len() - 1].to_vec()) } else { parent };
        let suggestion = closest(&field, expected.iter().map(String::as_str)).map(|s| parent.child(s));
        if let Some(ov) = applied.iter().find(|a| a.path.starts_with(&key)) {
            let suggestion = if ov.path == key { suggestion.as_ref().and_then(env_name) } else { None };
            return ConfigError::UnknownOverride { var: ov.var.clone(), key: key.to_string(), suggestion };
        }
        let line = locate(text, &key, true);
        return ConfigError::UnknownKey {
            file,
            key: key.to_string(),
            line,
            suggestion: suggestion.map(|s| s.to_string()),
        };
    }
    if let Some(field) = message.strip_prefix("missing field `").and_then(|r| r.split('`').next()) {
        let line = locate(text, &path, false);
        return ConfigError::MissingKey { file, key: path.child(field).to_string(), line };
    }
    let reason = sanitize(message, &path);
    // The override set this value, or created a table (or list entry) inside it.
    if let Some(ov) = applied.iter().find(|a| path.starts_with(&a.path) || a.path.starts_with(&path)) {
        let reason = match ov.path.0.get(path.0.len()) {
            Some(Seg::Key(k)) if k.bytes().all(|b| b.is_ascii_digit()) => format!(
                "{reason}; `{path}` has no entries in the file, and an override can only change an \
                 entry the file writes"
            ),
            _ => reason,
        };
        return ConfigError::BadOverride { var: ov.var.clone(), key: path.to_string(), reason };
    }
    let line = locate(text, &path, false);
    ConfigError::BadValue { file, key: path.to_string(), line, reason }
}

/// serde's `unknown field `x`, expected one of `a`, `b`` -> (`x`, [`a`, `b`]).
fn parse_unknown_field(message: &str) -> Option<(String, Vec<String>)> {
    let rest = message.strip_prefix("unknown field `")?;
    let (field, rest) = rest.split_once('`')?;
    let expected = rest.split('`').skip(1).step_by(2).map(str::to_string).collect();
    Some((field.to_string(), expected))
}

/// The override variable that sets `path` (keys only), e.g. `BUTLER_LLM__BASE_URL`.
fn env_name(path: &KeyPath) -> Option<String> {
    let parts: Vec<String> = path
        .0
        .iter()
        .map(|s| match s {
            Seg::Key(k) => k.to_ascii_uppercase(),
            Seg::Index(i) => i.to_string(),
        })
        .collect();
    Some(format!("{PREFIX}{}", parts.join("__")))
}

fn key_path(path: &serde_path_to_error::Path) -> KeyPath {
    KeyPath(
        path.iter()
            .filter_map(|seg| match seg {
                Segment::Seq { index } => Some(Seg::Index(*index)),
                Segment::Map { key } | Segment::Enum { variant: key } => Some(Seg::Key(key.clone())),
                Segment::Unknown => None,
            })
            .collect(),
    )
}

fn value_at<'a>(table: &'a mut Table, path: &KeyPath) -> Option<&'a mut Value> {
    let (first, rest) = path.0.split_first()?;
    let Seg::Key(k) = first else { return None };
    let mut cur = table.get_mut(k)?;
    for seg in rest {
        cur = match (seg, cur) {
            (Seg::Key(k), Value::Table(t)) => t.get_mut(k)?,
            (Seg::Index(i), Value::Array(a)) => a.get_mut(*i)?,
            _ => return None,
        };
    }
    Some(cur)
}

/// The 1-based line of `path` in `text`: of its key when `key_line`, else of its value. `None`
/// when the path is not written in the file (defaults, overrides).
fn locate(text: &str, path: &KeyPath, key_line: bool) -> Option<usize> {
    let root = DeTable::parse(text).ok()?;
    let mut table: Option<&DeTable<'_>> = Some(root.get_ref());
    let mut array: Option<&DeArray<'_>> = None;
    let mut span = None;
    for seg in &path.0 {
        let item = match (seg, table, array) {
            (Seg::Key(k), Some(t), _) => {
                let (key, value) = t.iter().find(|(key, _)| key.get_ref().as_ref() == k.as_str())?;
                span = Some(if key_line { key.span() } else { value.span() });
                value
            }
            (Seg::Index(i), _, Some(items)) => {
                let value = items.get(*i)?;
                span = Some(value.span());
                value
            }
            _ => return None,
        };
        (table, array) = match item.get_ref() {
            DeValue::Table(t) => (Some(t), None),
            DeValue::Array(a) => (None, Some(a)),
            _ => (None, None),
        };
    }
    span.map(|s| line_col(text, s.start).0)
}

/// 1-based line and column (in characters) of byte `offset` in `text`.
pub(super) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}
