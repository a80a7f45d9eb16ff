//! The shared steps of HMAC-SHA256 request signing as Slack and webhook sources use it: decode
//! the signature header, check the MAC over the signed parts in constant time, and hold the
//! signing time to a five-minute window. Each scheme (which headers, which text is signed, what
//! to tell the sender) stays with its channel.
//!
//! Nothing here may log or return the secret, the body or the expected digest: a failure says
//! only which check failed.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// How far a signing timestamp may be from the receiver's clock, either way.
pub const TOLERANCE_SECS: i64 = 300;

/// Why a request was not accepted as signed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rejection {
    MissingSignature,
    /// Not the scheme's prefix followed by 64 hex digits.
    MalformedSignature,
    BadSignature,
    MissingTimestamp,
    /// Present but not a whole number of Unix seconds.
    MalformedTimestamp,
    /// Outside the window (a replay, or a clock far off).
    StaleTimestamp,
}

impl Rejection {
    /// A stable machine-readable code.
    pub fn code(self) -> &'static str {
        match self {
            Self::MissingSignature => "missing_signature",
            Self::MalformedSignature => "malformed_signature",
            Self::BadSignature => "bad_signature",
            Self::MissingTimestamp => "missing_timestamp",
            Self::MalformedTimestamp => "malformed_timestamp",
            Self::StaleTimestamp => "stale_timestamp",
        }
    }
}

/// The 32-byte digest of a signature header value `<prefix><64 hex digits>` (hex in any case).
pub fn digest(value: Option<&str>, prefix: &str) -> Result<Vec<u8>, Rejection> {
    let value = value.ok_or(Rejection::MissingSignature)?;
    value
        .trim()
        .strip_prefix(prefix)
        .and_then(|h| hex::decode(h).ok())
        .filter(|d| d.len() == 32)
        .ok_or(Rejection::MalformedSignature)
}

/// Unix seconds from a timestamp header value.
pub fn timestamp(value: Option<&str>) -> Result<i64, Rejection> {
    value.ok_or(Rejection::MissingTimestamp)?.trim().parse().map_err(|_| Rejection::MalformedTimestamp)
}

/// Compares two byte strings (a shared secret with what a request carries) in time that depends
/// only on their lengths.
pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for (i, y) in b.iter().enumerate() {
        diff |= usize::from(a.get(i).copied().unwrap_or(0) ^ y);
    }
    diff == 0
}

/// Checks `expected` against HMAC-SHA256(`secret`, the concatenated `parts`) in constant time.
pub fn check(secret: &[u8], parts: &[&[u8]], expected: &[u8]) -> Result<(), Rejection> {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).map_err(|_| Rejection::BadSignature)?;
    for part in parts {
        mac.update(part);
    }
    mac.verify_slice(expected).map_err(|_| Rejection::BadSignature)
}

/// `ts` within [`TOLERANCE_SECS`] of `now_secs`. Check the MAC first (the timestamp is signed),
/// so only a holder of the secret ever learns that a request was merely stale.
pub fn fresh(ts: i64, now_secs: i64) -> Result<(), Rejection> {
    if now_secs.abs_diff(ts) > TOLERANCE_SECS.unsigned_abs() {
        return Err(Rejection::StaleTimestamp);
    }
    Ok(())
}

/// Lowercase hex HMAC-SHA256(`secret`, the concatenated `parts`), for senders and tests.
pub fn sign_hex(secret: &[u8], parts: &[&[u8]]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes any key length");
    for part in parts {
        mac.update(part);
    }
    hex::encode(mac.finalize().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_time_comparison() {
        let cases: &[(&[u8], &[u8], bool)] = &[
            (b"s3cret", b"s3cret", true),
            (b"s3cres", b"s3cret", false),
            (b"s3cre", b"s3cret", false),
            (b"s3cret-and-more", b"s3cret", false),
            (b"", b"s3cret", false),
        ];
        for (a, b, want) in cases {
            assert_eq!(super::ct_eq(a, b), *want, "{a:?} {b:?}");
        }
    }

    #[test]
    fn digests_timestamps_and_windows() {
        let sig = format!("v0={}", sign_hex(b"k", &[b"a", b"b"]));
        let cases: &[(Option<&str>, &str, Result<usize, Rejection>)] = &[
            (Some(&sig), "v0=", Ok(32)),
            (Some(&sig.to_uppercase().replace("V0=", "v0=")), "v0=", Ok(32)),
            (None, "v0=", Err(Rejection::MissingSignature)),
            (Some("sha1=ab"), "sha256=", Err(Rejection::MalformedSignature)),
            (Some("v0=abcd"), "v0=", Err(Rejection::MalformedSignature)),
        ];
        for (value, prefix, want) in cases {
            assert_eq!(digest(*value, prefix).map(|d| d.len()), *want, "{value:?}");
        }
        let d = digest(Some(&sig), "v0=").unwrap();
        assert_eq!(check(b"k", &[b"ab"], &d), Ok(()), "parts are concatenated");
        assert_eq!(check(b"other", &[b"ab"], &d), Err(Rejection::BadSignature));
        assert_eq!(timestamp(Some(" 17 ")), Ok(17));
        assert_eq!(timestamp(Some("soon")), Err(Rejection::MalformedTimestamp));
        assert_eq!(timestamp(None), Err(Rejection::MissingTimestamp));
        assert_eq!((fresh(1000, 1300), fresh(1000, 700)), (Ok(()), Ok(())));
        assert_eq!(fresh(1000, 1301), Err(Rejection::StaleTimestamp));
    }
}
