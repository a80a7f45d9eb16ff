//! The channels this process delivers to ([`Channels`], by name) and the idempotency key of one
//! chunk of a reply: what the deliverer and the streamer share.
//!
//! Plain lookup: nothing here sends or stores anything.

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

    /// The names of the channels with a reply window (`Caps::reply_window`).
    pub(crate) fn with_reply_window(&self) -> Vec<String> {
        self.by_name.iter().filter(|(_, c)| c.caps().reply_window).map(|(name, _)| name.clone()).collect()
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Arc<dyn Channel>> {
        self.by_name.values()
    }
}
