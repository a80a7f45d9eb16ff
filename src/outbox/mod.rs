//! The outbox: every reply is written to the store before it is sent, then delivered by a
//! worker that chunks, retries with backoff, honours rate limits and records the platform's
//! message ids, so that after a crash undelivered replies go out once and delivered ones never
//! again. Streaming (editing one message in place while a turn runs) lives here too.
//!
//! Nothing in this module decides *what* to say; it must never drop a reply silently (a reply
//! that cannot be delivered ends `failed` with its error, and is logged).

mod channels;
mod deliver;
pub mod held;
mod stream;

pub(crate) use channels::chunk_key;
pub use channels::Channels;
pub use deliver::{Deliverer, DeliveryConfig};
pub(crate) use stream::Streamer;
pub use stream::{settle_orphan_drafts, CUT_OFF};
