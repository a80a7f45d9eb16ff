//! Replies held while a platform's reply window is closed (WhatsApp takes free-form messages only
//! within 24 hours of the person's last one): the deliverer parks such a reply (`ChannelError::
//! OutsideWindow`) as pending far in the future with an error starting with [`HELD`], and the
//! ingress releases it ([`release`]) when the same conversation sends a message, with a
//! one-line [`NOTICE`] before its text.
//!
//! It must never resend a held reply before the person writes (the platform would refuse it
//! again), nor hold anything but a window refusal.

use crate::store::HeldStore;
use butler_channel::{EventBody, InboundEvent};

/// How a held reply's error starts.
pub const HELD: &str = "held: ";
/// How long a held reply waits for the person before it is tried again anyway (a week).
pub const HOLD_MS: i64 = 7 * 24 * 3600 * 1000;
/// What the person reads first when a held reply is delivered.
pub const NOTICE: &str = "(Held until you wrote again: WhatsApp delivers Butler's messages only within 24 hours of \
                          your last one.)\n\n";

/// Releases the held replies of `event`'s conversation when it is a message; errors are logged
/// (the reply then waits out its hold).
pub async fn release(store: &dyn HeldStore, event: &InboundEvent) {
    if !matches!(event.body, EventBody::Message { .. }) {
        return;
    }
    match store.outbox_release(&event.conversation.to_string(), NOTICE).await {
        Ok(0) => {}
        Ok(n) => tracing::info!(released = n, "held replies released: the person wrote again"),
        Err(e) => tracing::warn!(error = %e, "could not release held replies; they wait out their hold"),
    }
}
