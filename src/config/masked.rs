//! The effective configuration as TOML for `butler config check`, with every secret masked.
//!
//! Secrets print as `********` (their `Serialize` masks them); the database and Redis URLs are
//! shown with only the password masked, so the operator can see host and database. This must
//! never print a secret: a password inside a URL (user info or a `password=` query parameter)
//! is replaced before printing.

use super::secret::{is_secret_name, redact_url, MASK};

/// `cfg` (the whole configuration) as TOML, secrets masked, with the `[database]` and
/// `[redis]` URLs shown with only their passwords masked.
pub(super) fn to_masked_toml(cfg: &impl serde::Serialize, database_url: &str, redis_url: Option<&str>) -> String {
    let mut text = match toml::to_string(cfg) {
        Ok(text) => text,
        Err(e) => return format!("# the configuration could not be rendered as TOML: {e}\n"),
    };
    text = show_url(&text, "[database]", &mask_url(database_url));
    if let Some(url) = redis_url {
        text = show_url(&text, "[redis]", &mask_url(url));
    }
    text
}

/// Replaces the masked `url = "********"` line of `section` with `url` (already masked).
fn show_url(text: &str, section: &str, url: &str) -> String {
    let masked_line = format!("url = \"{MASK}\"");
    let shown_line = format!("url = {}", toml::Value::String(url.to_string()));
    let mut in_section = false;
    let mut done = false;
    let mut out = String::with_capacity(text.len() + url.len());
    for line in text.split_inclusive('\n') {
        if line.starts_with('[') {
            in_section = line.trim_end() == section;
        }
        if in_section && !done && line.trim_end() == masked_line {
            out.push_str(&shown_line);
            out.push('\n');
            done = true;
        } else {
            out.push_str(line);
        }
    }
    out
}

/// `postgres://u:pw@h/db?sslpassword=x` -> `postgres://u:***@h/db?sslpassword=***`.
pub(crate) fn mask_url(url: &str) -> String {
    let redacted = redact_url(url);
    let Some((base, query)) = redacted.split_once('?') else {
        return redacted;
    };
    let query: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((k, _)) if is_secret_name(k) => format!("{k}=***"),
            _ => pair.to_string(),
        })
        .collect();
    format!("{base}?{}", query.join("&"))
}
