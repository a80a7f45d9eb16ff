//! The outbox: every reply is written to the store before it is sent, then delivered by a
//! worker that chunks, retries with backoff, honours rate limits and records the platform's
//! message ids, so that after a crash undelivered replies go out once and delivered ones never
//! again. Streaming (editing one message in place while a turn runs) lives here too.
//!
//! Nothing in this module decides *what* to say; it must never drop a reply silently (a reply
//! that cannot be delivered ends `failed` with its error, and is logged).

mod deliver;
mod stream;

pub use deliver::{Deliverer, DeliveryConfig};
pub(crate) use stream::Streamer;
pub use stream::{settle_orphan_drafts, CUT_OFF};

use butler_channel::Channel;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The idempotency key of chunk `n` of the reply with outbox key `key`.
pub(crate) fn chunk_key(key: &str, n: usize) -> String {
    format!("{key}#{n}")
}

/// The channels this process can deliver to, by name.
#[derive(Clone, Default)]
pub struct Channels {
    by_name: BTreeMap<String, Arc<dyn Channel>>,
}

impl Channels {
    pub(crate) fn add(&mut self, channel: Arc<dyn Channel>) {
        self.by_name.insert(channel.name().to_string(), channel);
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Arc<dyn Channel>> {
        self.by_name.get(name)
    }

    pub(crate) fn names(&self) -> Vec<String> {
        self.by_name.keys().cloned().collect()
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Arc<dyn Channel>> {
        self.by_name.values()
    }
}
