//! Slack's request signing (v0): `X-Slack-Signature: v0=<hex HMAC-SHA256(signing secret,
//! "v0:<X-Slack-Request-Timestamp>:<raw body>")>`, with the timestamp within five minutes of
//! the receiver's clock. The comparison is constant-time (`hmac`'s `verify_slice`).
//!
//! Nothing here may log or return the body, the secret or the expected signature: a failure
//! says only which check failed.

use axum::http::HeaderMap;
use butler_channel::signature;
pub use butler_channel::signature::{Rejection, TOLERANCE_SECS};

/// The signature header.
pub const SIGNATURE: &str = "x-slack-signature";
/// The timestamp header (Unix seconds when Slack signed the request).
pub const TIMESTAMP: &str = "x-slack-request-timestamp";

/// What to tell the sender about a rejection (safe to return).
pub fn explain(why: Rejection) -> &'static str {
    match why {
        Rejection::MissingSignature => "the request is not signed: X-Slack-Signature is missing",
        Rejection::MalformedSignature => "X-Slack-Signature must be v0= followed by 64 hex digits",
        Rejection::BadSignature => "the signature does not match the body and the configured signing secret",
        Rejection::MissingTimestamp => "X-Slack-Request-Timestamp is missing",
        Rejection::MalformedTimestamp => "X-Slack-Request-Timestamp must be Unix seconds",
        Rejection::StaleTimestamp => "X-Slack-Request-Timestamp is more than 5 minutes away from the server's clock",
    }
}

/// Checks a request from Slack against `secret` (used as its UTF-8 bytes, as Slack does);
/// `now_secs` is the receiver's clock in Unix seconds.
pub fn verify(secret: &[u8], headers: &HeaderMap, body: &[u8], now_secs: i64) -> Result<(), Rejection> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    let digest = signature::digest(text(SIGNATURE), "v0=")?;
    let raw_ts = text(TIMESTAMP).ok_or(Rejection::MissingTimestamp)?;
    let ts = signature::timestamp(Some(raw_ts))?;
    signature::check(secret, &[b"v0:", raw_ts.as_bytes(), b":", body], &digest)?;
    signature::fresh(ts, now_secs)
}

/// `v0=<hex>` for `body` signed at `ts` (what Slack sends; used by tests and the doctor).
pub fn sign(secret: &[u8], ts: i64, body: &[u8]) -> String {
    format!("v0={}", signature::sign_hex(secret, &[format!("v0:{ts}:").as_bytes(), body]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    // Slack's documented worked example (tests/fixtures/slack/signing_vectors.json).
    const SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
    const TS: i64 = 1531420618;
    const BODY: &str = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
    const EXPECTED: &str = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn the_documented_vector() {
        assert_eq!(sign(SECRET.as_bytes(), TS, BODY.as_bytes()), EXPECTED);
        let h = headers(&[(SIGNATURE, EXPECTED), (TIMESTAMP, &TS.to_string())]);
        assert_eq!(verify(SECRET.as_bytes(), &h, BODY.as_bytes(), TS), Ok(()));
    }

    #[test]
    fn failures_table() {
        let ts = TS.to_string();
        let good = [(SIGNATURE, EXPECTED), (TIMESTAMP, ts.as_str())];
        let tampered = BODY.replace("roadrunner", "wile_e");
        let upper = EXPECTED.to_uppercase().replace("V0=", "v0=");
        type Case<'a> = (&'a str, Vec<(&'static str, &'a str)>, &'a str, i64, Result<(), Rejection>);
        let cases: Vec<Case> = vec![
            ("4m59s later", good.to_vec(), BODY, TS + 299, Ok(())),
            ("5m early", good.to_vec(), BODY, TS - 300, Ok(())),
            ("hex case does not matter", vec![(SIGNATURE, &upper), (TIMESTAMP, &ts)], BODY, TS, Ok(())),
            ("tampered body", good.to_vec(), &tampered, TS, Err(Rejection::BadSignature)),
            ("stale", good.to_vec(), BODY, TS + 301, Err(Rejection::StaleTimestamp)),
            ("no signature", vec![(TIMESTAMP, &ts)], BODY, TS, Err(Rejection::MissingSignature)),
            ("no timestamp", vec![(SIGNATURE, EXPECTED)], BODY, TS, Err(Rejection::MissingTimestamp)),
            ("v1 scheme", vec![(SIGNATURE, "v1=abcd"), (TIMESTAMP, &ts)], BODY, TS, Err(Rejection::MalformedSignature)),
            ("short", vec![(SIGNATURE, "v0=abcd"), (TIMESTAMP, &ts)], BODY, TS, Err(Rejection::MalformedSignature)),
            (
                "timestamp moved",
                vec![(SIGNATURE, EXPECTED), (TIMESTAMP, "1531420619")],
                BODY,
                TS,
                Err(Rejection::BadSignature),
            ),
            (
                "not a number",
                vec![(SIGNATURE, EXPECTED), (TIMESTAMP, "yesterday")],
                BODY,
                TS,
                Err(Rejection::MalformedTimestamp),
            ),
        ];
        for (name, h, body, now, want) in cases {
            assert_eq!(verify(SECRET.as_bytes(), &headers(&h), body.as_bytes(), now), want, "{name}");
        }
        assert_eq!(verify(b"another secret", &headers(&good), BODY.as_bytes(), TS), Err(Rejection::BadSignature));
    }
}
