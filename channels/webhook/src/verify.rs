//! Signature checks over the raw request body: GitHub's `X-Hub-Signature-256` and Butler's own
//! `X-Butler-Signature-256` + `X-Butler-Timestamp` scheme. Comparisons are constant-time (the
//! `hmac` crate's `verify_slice`).
//!
//! Nothing here may parse, log or return the body, the secret or the expected signature: a
//! failure says only which check failed.

use axum::http::HeaderMap;
use butler_channel::signature;
pub use butler_channel::signature::{Rejection, TOLERANCE_SECS};

/// GitHub's header: `sha256=<hex HMAC-SHA256 of the raw body>`.
pub const GITHUB_SIGNATURE: &str = "x-hub-signature-256";
/// Butler's header: `sha256=<hex HMAC-SHA256 of "<timestamp>.<raw body>">`.
pub const BUTLER_SIGNATURE: &str = "x-butler-signature-256";
/// Butler's timestamp header: Unix seconds when the request was signed.
pub const BUTLER_TIMESTAMP: &str = "x-butler-timestamp";

/// How a source signs its requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// `X-Hub-Signature-256: sha256=<hex>` over the raw body.
    Github,
    /// `X-Butler-Signature-256: sha256=<hex>` over `"<timestamp>.<raw body>"`, with
    /// `X-Butler-Timestamp` within [`TOLERANCE_SECS`] of now.
    Butler,
}

/// What to tell the sender about a rejection (safe to return).
pub fn explain(why: Rejection) -> &'static str {
    match why {
        Rejection::MissingSignature => {
            "the request is not signed: send X-Hub-Signature-256 (GitHub) or X-Butler-Signature-256"
        }
        Rejection::MalformedSignature => "the signature header must be sha256= followed by 64 hex digits",
        Rejection::BadSignature => "the signature does not match the body and this source's secret",
        Rejection::MissingTimestamp => "X-Butler-Timestamp (Unix seconds) is required with X-Butler-Signature-256",
        Rejection::MalformedTimestamp => "X-Butler-Timestamp must be Unix seconds",
        Rejection::StaleTimestamp => "X-Butler-Timestamp is more than 5 minutes away from the server's clock",
    }
}

/// Checks the request's signature for `scheme` with `secret`; `now_secs` is the receiver's
/// clock in Unix seconds.
pub fn verify(scheme: Scheme, secret: &[u8], headers: &HeaderMap, body: &[u8], now_secs: i64) -> Result<(), Rejection> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    match scheme {
        Scheme::Github => {
            let sig = signature::digest(header(GITHUB_SIGNATURE), "sha256=")?;
            signature::check(secret, &[body], &sig)
        }
        Scheme::Butler => {
            let sig = signature::digest(header(BUTLER_SIGNATURE), "sha256=")?;
            let raw = header(BUTLER_TIMESTAMP).ok_or(Rejection::MissingTimestamp)?.trim();
            let ts = signature::timestamp(Some(raw))?;
            signature::check(secret, &[raw.as_bytes(), b".", body], &sig)?;
            signature::fresh(ts, now_secs)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn hmac_hex(secret: &str, text: &[u8]) -> String {
        format!("sha256={}", signature::sign_hex(secret.as_bytes(), &[text]))
    }

    type Pairs = Vec<(&'static str, String)>;

    fn headers(pairs: &[(&'static str, String)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn github_signatures() {
        let body = br#"{"zen":"Ship small changes.","hook_id":1}"#;
        let good = hmac_hex("s3cret", body);
        type Case<'a> = (&'a str, Pairs, &'a [u8], Result<(), Rejection>);
        let cases: &[Case] = &[
            ("good", vec![(GITHUB_SIGNATURE, good.clone())], body, Ok(())),
            ("missing", vec![], body, Err(Rejection::MissingSignature)),
            ("butler header only", vec![(BUTLER_SIGNATURE, good.clone())], body, Err(Rejection::MissingSignature)),
            ("no prefix", vec![(GITHUB_SIGNATURE, good[7..].to_string())], body, Err(Rejection::MalformedSignature)),
            ("sha1", vec![(GITHUB_SIGNATURE, "sha1=abcd".into())], body, Err(Rejection::MalformedSignature)),
            ("short", vec![(GITHUB_SIGNATURE, "sha256=abcd".into())], body, Err(Rejection::MalformedSignature)),
            ("tampered body", vec![(GITHUB_SIGNATURE, good.clone())], b"{}", Err(Rejection::BadSignature)),
            ("wrong secret", vec![(GITHUB_SIGNATURE, hmac_hex("other", body))], body, Err(Rejection::BadSignature)),
        ];
        for (name, h, b, want) in cases {
            assert_eq!(verify(Scheme::Github, b"s3cret", &headers(h), b, 0), *want, "{name}");
        }
    }

    #[test]
    fn butler_signatures_and_timestamps() {
        let body = br#"{"event":"deploy"}"#;
        let now = 1_700_000_000_i64;
        let signed = |ts: i64, secret: &str| {
            let mut text = format!("{ts}.").into_bytes();
            text.extend_from_slice(body);
            vec![(BUTLER_SIGNATURE, hmac_hex(secret, &text)), (BUTLER_TIMESTAMP, ts.to_string())]
        };
        let mut body_only = signed(now, "k");
        body_only[0].1 = hmac_hex("k", body);
        let cases: Vec<(&str, Pairs, Result<(), Rejection>)> = vec![
            ("fresh", signed(now, "k"), Ok(())),
            ("4m59s old", signed(now - 299, "k"), Ok(())),
            ("5m ahead", signed(now + 300, "k"), Ok(())),
            ("5m01s old", signed(now - 301, "k"), Err(Rejection::StaleTimestamp)),
            ("an hour ahead", signed(now + 3600, "k"), Err(Rejection::StaleTimestamp)),
            ("wrong secret", signed(now, "x"), Err(Rejection::BadSignature)),
            ("signed without the timestamp", body_only, Err(Rejection::BadSignature)),
            ("no timestamp", vec![signed(now, "k").remove(0)], Err(Rejection::MissingTimestamp)),
            (
                "timestamp not a number",
                vec![signed(now, "k").remove(0), (BUTLER_TIMESTAMP, "yesterday".into())],
                Err(Rejection::MalformedTimestamp),
            ),
            ("no signature", vec![(BUTLER_TIMESTAMP, now.to_string())], Err(Rejection::MissingSignature)),
        ];
        for (name, h, want) in cases {
            assert_eq!(verify(Scheme::Butler, b"k", &headers(&h), body, now), want, "{name}");
        }
        // A replay of a fresh request with the timestamp moved forward no longer matches.
        let mut moved = signed(now - 3600, "k");
        moved[1].1 = now.to_string();
        assert_eq!(verify(Scheme::Butler, b"k", &headers(&moved), body, now), Err(Rejection::BadSignature));
    }
}
