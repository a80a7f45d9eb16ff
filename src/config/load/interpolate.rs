//! `${VAR}` in string values of the file: `${VAR}` is the variable (an error if unset),
//! `${VAR:-default}` falls back to `default` when it is unset or empty, `$${` is a literal `${`,
//! and any other `$` is kept as is. Keys are never expanded, nor is the default text.
//!
//! Errors name the variable, the key and the file; they must never contain a variable's value
//! or the text inside a malformed `${...}` (it may be a pasted secret).

use super::super::error::{ConfigError, KeyPath};
use super::env::Env;
use toml::{Table, Value};

/// Expands every string value in `table` in place.
pub(super) fn expand_table(table: &mut Table, origin: &str, env: &Env) -> Result<(), ConfigError> {
    for (key, value) in table.iter_mut() {
        expand_value(value, &KeyPath::default().child(key), origin, env)?;
    }
    Ok(())
}

fn expand_value(value: &mut Value, path: &KeyPath, origin: &str, env: &Env) -> Result<(), ConfigError> {
    match value {
        Value::String(s) => {
            if s.contains('$') {
                *s = expand(s, env).map_err(|e| e.into_error(origin, path))?;
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                expand_value(item, &path.index(i), origin, env)?;
            }
        }
        Value::Table(t) => {
            for (key, item) in t.iter_mut() {
                expand_value(item, &path.child(key), origin, env)?;
            }
        }
        Value::Integer(_) | Value::Float(_) | Value::Boolean(_) | Value::Datetime(_) => {}
    }
    Ok(())
}

#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ExpandError {
    Missing(String),
    Unterminated,
    BadName,
}

impl ExpandError {
    fn into_error(self, origin: &str, path: &KeyPath) -> ConfigError {
        let (file, key) = (origin.to_string(), path.to_string());
        match self {
            ExpandError::Missing(var) => ConfigError::MissingVar { file, key, var },
            ExpandError::Unterminated => {
                ConfigError::BadInterpolation { file, key, reason: "`${` without a closing `}`".into() }
            }
            ExpandError::BadName => ConfigError::BadInterpolation {
                file,
                key,
                reason: "the name inside `${...}` must be letters, digits and `_`, not starting with a digit".into(),
            },
        }
    }
}

/// Expands one string.
pub(crate) fn expand(s: &str, env: &Env) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        if let Some(after) = rest.strip_prefix("$${") {
            out.push_str("${");
            rest = after;
        } else if let Some(after) = rest.strip_prefix("${") {
            let end = after.find('}').ok_or(ExpandError::Unterminated)?;
            let inner = &after[..end];
            let (name, default) = match inner.split_once(":-") {
                Some((name, default)) => (name, Some(default)),
                None => (inner, None),
            };
            if !is_var_name(name) {
                return Err(ExpandError::BadName);
            }
            match (env.get(name), default) {
                (Some(""), Some(d)) => out.push_str(d),
                (Some(v), _) => out.push_str(v),
                (None, Some(d)) => out.push_str(d),
                (None, None) => return Err(ExpandError::Missing(name.to_string())),
            }
            rest = &after[end + 1..];
        } else {
            out.push('$');
            rest = &rest[1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

fn is_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}
