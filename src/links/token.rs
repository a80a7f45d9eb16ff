//! An answer link's token: `<payload>.<signature>`, the payload base64url JSON ([`Claim`]: who
//! answers, where, which choice, until when), the signature hex HMAC-SHA256 over the payload
//! with the server's key.
//!
//! It must never accept a token whose signature does not match, nor say more than "not valid"
//! about one (which part failed is not the caller's business).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use butler_channel::signature;
use serde::{Deserialize, Serialize};

/// Bytes that start every signed payload: a token of another kind never verifies as this one.
const DOMAIN: &[u8] = b"butler.answer-link.v1.";

/// What a link does: answer `action` as `person` in the conversation, until `expires_ms`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Claim {
    #[serde(rename = "c")]
    pub channel: String,
    /// The person's id on the channel (the one the request was sent to).
    #[serde(rename = "p")]
    pub person: String,
    #[serde(rename = "k")]
    pub conversation: String,
    #[serde(rename = "t", default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<String>,
    /// The button's action (`ap:<approval id>:once`).
    #[serde(rename = "a")]
    pub action: String,
    /// The button's label, shown on the page.
    #[serde(rename = "l")]
    pub label: String,
    #[serde(rename = "e")]
    pub expires_ms: i64,
}

/// Why a token was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TokenError {
    #[error("the link is not valid (it may have been cut short or changed)")]
    Invalid,
    #[error("the link has expired")]
    Expired,
}

pub(crate) fn sign(key: &[u8], claim: &Claim) -> String {
    let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(claim).unwrap_or_default());
    let mac = signature::sign_hex(key, &[DOMAIN, payload.as_bytes()]);
    format!("{payload}.{mac}")
}

/// The claim of `token` if its signature holds (checked first) and it has not expired at `now_ms`.
pub(crate) fn open(key: &[u8], token: &str, now_ms: i64) -> Result<Claim, TokenError> {
    let (payload, mac) = token.split_once('.').ok_or(TokenError::Invalid)?;
    let mac = hex::decode(mac).map_err(|_| TokenError::Invalid)?;
    signature::check(key, &[DOMAIN, payload.as_bytes()], &mac).map_err(|_| TokenError::Invalid)?;
    let bytes = URL_SAFE_NO_PAD.decode(payload).map_err(|_| TokenError::Invalid)?;
    let claim: Claim = serde_json::from_slice(&bytes).map_err(|_| TokenError::Invalid)?;
    if claim.expires_ms <= now_ms {
        return Err(TokenError::Expired);
    }
    Ok(claim)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim() -> Claim {
        Claim {
            channel: "email".into(),
            person: "alice@example.com".into(),
            conversation: "alice@example.com".into(),
            thread: Some("a1@example.com".into()),
            action: "ap:0123:once".into(),
            label: "Approve once".into(),
            expires_ms: 2_000,
        }
    }

    #[test]
    fn only_an_unchanged_unexpired_token_opens() {
        let key = b"k".repeat(32);
        let good = sign(&key, &claim());
        let (payload, mac) = good.split_once('.').unwrap();
        // The same claim for Bob, signed with another key, or carried by Alice's signature.
        let bob = Claim { person: "bob@example.com".into(), ..claim() };
        let bob_payload = sign(&key, &bob).split_once('.').unwrap().0.to_string();
        let mut flipped = mac.to_string();
        flipped.replace_range(0..1, if mac.starts_with('0') { "1" } else { "0" });
        let cases: Vec<(String, i64, Result<Claim, TokenError>)> = vec![
            (good.clone(), 1_000, Ok(claim())),
            (good.clone(), 2_000, Err(TokenError::Expired)),
            (sign(b"another key", &claim()), 1_000, Err(TokenError::Invalid)),
            (format!("{bob_payload}.{mac}"), 1_000, Err(TokenError::Invalid)),
            (format!("{payload}.{flipped}"), 1_000, Err(TokenError::Invalid)),
            (payload.to_string(), 1_000, Err(TokenError::Invalid)),
            (format!("{payload}.zz"), 1_000, Err(TokenError::Invalid)),
            (String::new(), 1_000, Err(TokenError::Invalid)),
            // A stale token with a broken signature says only "not valid".
            (format!("{payload}.{flipped}"), 3_000, Err(TokenError::Invalid)),
        ];
        for (token, now, want) in cases {
            assert_eq!(open(&key, &token, now), want, "{token} at {now}");
        }
        assert_eq!(open(&key, &sign(&key, &bob), 1_000).unwrap().person, "bob@example.com");
    }
}
