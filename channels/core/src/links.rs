//! Answer links: for a channel without buttons (email), a web address per choice that answers
//! it as the person the message was for, as if they had pressed the button. The root makes
//! them (signed, expiring, one use each) and serves the page they open; adapters only ask.
//!
//! It must never carry a secret: an adapter sees addresses, never the key that signs them.

use crate::{Button, ConversationRef};

/// Makes answer links (`[server] public_url` set) for an adapter.
pub trait AnswerLinks: Send + Sync {
    /// The address that presses `button` as `person` in `conversation`; `None` when no link
    /// can be made (the button does not answer a request).
    fn link(&self, conversation: &ConversationRef, person: &str, button: &Button) -> Option<String>;
}
