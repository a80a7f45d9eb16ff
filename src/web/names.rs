//! The names of web conversations: the one the OpenAI API uses for a user who names none (`openai-<user>`), and the
//! rule that keeps those names theirs: a web conversation whose name starts with `openai-` can
//! only be created by the user it belongs to, through either API. This file must never read
//! the store: the ownership check of an existing conversation is the web API's.

use crate::http::ApiError;
use axum::http::StatusCode;
use sha2::{Digest, Sha256};

/// The prefix of the per-user conversations of the OpenAI API.
const PREFIX: &str = "openai-";

/// The longest conversation name the web API takes.
const MAX_CONVERSATION: usize = 64;

/// `openai-<user>`; a user name too long for that (over 57 characters) is replaced by the first
/// 32 hex digits of its SHA-256, so the result is always a valid conversation name.
pub(crate) fn default_conversation(user: &str) -> String {
    if PREFIX.len() + user.len() <= MAX_CONVERSATION {
        format!("{PREFIX}{user}")
    } else {
        let digest = hex::encode(Sha256::digest(user.as_bytes()));
        format!("{PREFIX}{}", &digest[..32])
    }
}

/// Refuses to create conversation `conv` for `user` when its name is reserved for another user's
/// OpenAI API conversation, so nobody can take (or block) someone else's default conversation.
pub(crate) fn may_create(conv: &str, user: &str) -> Result<(), ApiError> {
    if conv.starts_with(PREFIX) && conv != default_conversation(user) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "reserved_conversation",
            format!("conversation names starting with `{PREFIX}` are reserved for each user's OpenAI API conversation; pick another name"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_names_fit_and_differ() {
        let long = "u".repeat(64);
        let cases = [("local", "openai-local"), ("alice", "openai-alice"), ("a.b@c-d_e", "openai-a.b@c-d_e")];
        for (user, want) in cases {
            assert_eq!(default_conversation(user), want);
        }
        let hashed = default_conversation(&long);
        assert!(hashed.len() <= MAX_CONVERSATION && hashed.starts_with(PREFIX), "{hashed}");
        assert_ne!(hashed, default_conversation(&"u".repeat(63)));
        assert_eq!(default_conversation(&"u".repeat(57)).len(), 64, "57 characters still fit as they are");
    }

    #[test]
    fn only_the_owner_creates_an_openai_name() {
        // (conversation, user, allowed)
        let cases = [
            ("openai-bob", "bob", true),
            ("openai-bob", "alice", false),
            ("openai-", "alice", false),
            ("openai-bobby", "bob", false),
            ("notes", "alice", true),
            ("my-openai-bob", "alice", true),
        ];
        for (conv, user, allowed) in cases {
            let got = may_create(conv, user);
            assert_eq!(got.is_ok(), allowed, "{conv} by {user}");
            if let Err(e) = got {
                assert_eq!((e.status, e.code), (StatusCode::FORBIDDEN, "reserved_conversation"));
            }
        }
    }
}
