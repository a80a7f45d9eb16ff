//! `BUTLER_<SECTION>__<KEY>` environment overrides, applied to the parsed file before
//! deserialization: `BUTLER_LLM__BASE_URL` sets `llm.base_url`, `BUTLER_CHANNELS__WEB__TOKEN` sets
//! `channels.web.token`, a number segment indexes a list (`BUTLER_LLM__FALLBACK__0__MODEL`).
//! Names are lowercased; variables without `__` (`BUTLER_CONFIG`, `BUTLER_MODEL`) are not
//! overrides.
//!
//! A value is read as a TOML value when it is one (`2048`, `true`, `1.5`, `["web:alice"]`,
//! `"quoted"`), else as the plain string. A value with a newline, or with `#` that is not inside
//! a quoted string or an array, is always a plain string. `deser` turns a non-string back into
//! the plain string when the key wants a string, and a plain string into a one-element (or
//! comma-separated) list when the key wants a list.
//!
//! Errors name the variable and the key; they must never contain the value.

use super::super::error::{ConfigError, KeyPath, Seg};
use super::env::Env;
use toml::{Table, Value};

pub(crate) const PREFIX: &str = "BUTLER_";

/// One override that was applied, for error messages and for the string fallback in `deser`.
#[derive(Clone, Debug)]
pub(crate) struct Applied {
    pub var: String,
    pub path: KeyPath,
    /// The variable's text, used when the key wants a string or a list.
    pub raw: String,
}

/// Applies every `BUTLER_*__*` variable of `env` (sorted by name) to `table`.
pub(super) fn apply(table: &mut Table, env: &Env) -> Result<Vec<Applied>, ConfigError> {
    let mut applied = Vec::new();
    for (var, raw) in env.iter() {
        let Some(segs) = override_path(var)? else {
            continue;
        };
        let mut root = Value::Table(std::mem::take(table));
        let result = set_in(&mut root, &segs, KeyPath::default(), parse_value(raw), var);
        if let Value::Table(t) = root {
            *table = t;
        }
        applied.push(Applied { var: var.to_string(), path: result?, raw: raw.to_string() });
    }
    Ok(applied)
}

/// The lowercased key segments of an override variable, or `None` for a variable that is not one.
pub(crate) fn override_path(var: &str) -> Result<Option<Vec<String>>, ConfigError> {
    let Some(rest) = var.strip_prefix(PREFIX) else {
        return Ok(None);
    };
    if !rest.contains("__") {
        return Ok(None);
    }
    let segs: Vec<String> = rest.split("__").map(str::to_ascii_lowercase).collect();
    if segs.iter().any(String::is_empty) {
        return Err(ConfigError::BadOverride {
            var: var.to_string(),
            key: segs.join("."),
            reason: "a key name is empty (two `__` in a row, or `__` at an end); write \
                     BUTLER_<SECTION>__<KEY>"
                .into(),
        });
    }
    Ok(Some(segs))
}

/// A TOML value when `raw` is one, else the plain string.
pub(crate) fn parse_value(raw: &str) -> Value {
    let trimmed = raw.trim_start();
    let structured = trimmed.starts_with('[') || trimmed.starts_with('"') || trimmed.starts_with('\'');
    if raw.contains('\n') || raw.contains('\r') || (raw.contains('#') && !structured) || raw.trim().is_empty() {
        return Value::String(raw.to_string());
    }
    match format!("v = {raw}").parse::<Table>() {
        Ok(mut t) if t.len() == 1 => t.remove("v").unwrap_or_else(|| Value::String(raw.to_string())),
        _ => Value::String(raw.to_string()),
    }
}

fn set_in(
    container: &mut Value,
    segs: &[String],
    path: KeyPath,
    value: Value,
    var: &str,
) -> Result<KeyPath, ConfigError> {
    let Some((first, rest)) = segs.split_first() else {
        return Ok(path);
    };
    let bad = |reason: String| ConfigError::BadOverride { var: var.to_string(), key: full_key(&path, segs), reason };
    match container {
        Value::Table(t) => {
            let here = path.child(first);
            if rest.is_empty() {
                t.insert(first.clone(), value);
                return Ok(here);
            }
            let next = t.entry(first.clone()).or_insert_with(|| Value::Table(Table::new()));
            set_in(next, rest, here, value, var)
        }
        Value::Array(items) => {
            let len = items.len();
            let Some(i) = first.parse::<usize>().ok().filter(|i| *i < len) else {
                return Err(bad(if len == 0 {
                    format!("`{path}` is an empty list in the file, so there is no entry `{first}` to override")
                } else {
                    format!("`{path}` is a list; use an index from 0 to {} after it", len - 1)
                }));
            };
            let here = path.index(i);
            if rest.is_empty() {
                items[i] = value;
                return Ok(here);
            }
            set_in(&mut items[i], rest, here, value, var)
        }
        _ => Err(bad(format!("`{path}` is a single value, not a section, so it has no key `{first}`"))),
    }
}

/// `path` followed by the remaining segments, for messages.
fn full_key(path: &KeyPath, rest: &[String]) -> String {
    let mut segs = path.0.clone();
    segs.extend(rest.iter().map(|s| Seg::Key(s.clone())));
    KeyPath(segs).to_string()
}
