//! Secrets: a string that is never shown (Debug and Serialize print a mask), the one list of
//! words that mark a name as secret ([`SECRET_WORDS`]), used by every masking in Butler (config
//! URLs, tool arguments, tool summaries), and [`redact_url`] for URLs in messages and logs.
//!
//! Nothing here may print, log or return the value of a secret.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

pub const MASK: &str = "********";

#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Self {
        Self(s.into())
    }

    /// The real value, for the one place that uses it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(MASK)
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(MASK)
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Secret)
    }
}

/// Words that mark a key, header, flag or parameter name as secret: a name that contains one of
/// them (ignoring ASCII case) has its value masked. The one list for the whole crate.
pub const SECRET_WORDS: &[&str] = &["token", "password", "passwd", "pass", "secret", "key", "authorization", "cookie"];

/// Whether `name` (a key, header, flag or query parameter name) holds a secret value.
pub fn is_secret_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    SECRET_WORDS.iter().any(|w| lower.contains(w))
}

/// `postgres://user:secret@host/db` -> `postgres://user:***@host/db`, for messages and logs.
pub fn redact_url(url: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let base = match base.split_once("://").and_then(|(scheme, rest)| Some((scheme, rest.rsplit_once('@')?))) {
        Some((scheme, (creds, host))) => match creds.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
            None => base.to_string(),
        },
        None => base.to_string(),
    };
    // Query parameters with a secret-looking name (`?password=`, `sslpassword=`) are masked too.
    let Some(query) = query else { return base };
    let params: Vec<String> = query
        .split('&')
        .map(|p| match p.split_once('=') {
            Some((k, _)) if is_secret_name(k) => format!("{k}=***"),
            _ => p.to_string(),
        })
        .collect();
    format!("{base}?{}", params.join("&"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_one_list_of_secret_words() {
        // Pinned: a change here changes what every masking in Butler hides.
        assert_eq!(SECRET_WORDS, ["token", "password", "passwd", "pass", "secret", "key", "authorization", "cookie"]);
        // (name, secret?)
        let cases = [
            ("api_key", true),
            ("X-Api-Key", true),
            ("Authorization", true),
            ("Cookie", true),
            ("PGPASSWORD", true),
            ("passwd", true),
            ("sslpassword", true),
            ("client_secret", true),
            ("access_token", true),
            ("url", false),
            ("sslmode", false),
            ("Accept", false),
            ("name", false),
        ];
        for (name, want) in cases {
            assert_eq!(is_secret_name(name), want, "{name}");
        }
    }

    #[test]
    fn config_urls_mask_every_secret_word() {
        for word in SECRET_WORDS {
            let url = format!("postgres://u:pw@h/db?sslmode=require&{word}=s3cr3t");
            let masked = super::super::masked::mask_url(&url);
            assert_eq!(masked, format!("postgres://u:***@h/db?sslmode=require&{word}=***"), "{word}");
        }
    }

    #[test]
    fn redact_url_hides_only_the_password() {
        let cases = [
            ("postgres://butler:pw@db:5432/butler", "postgres://butler:***@db:5432/butler"),
            ("redis://:pw@127.0.0.1:6379", "redis://:***@127.0.0.1:6379"),
            ("postgres://butler@db/butler", "postgres://butler@db/butler"),
            ("sqlite://data/butler.db", "sqlite://data/butler.db"),
            ("not a url", "not a url"),
            ("postgres://db/butler?user=b&password=pw", "postgres://db/butler?user=b&password=***"),
            (
                "postgres://u:pw@db/b?sslmode=require&sslpassword=x",
                "postgres://u:***@db/b?sslmode=require&sslpassword=***",
            ),
        ];
        for (url, want) in cases {
            assert_eq!(redact_url(url), want, "{url}");
        }
    }
}
