//! The rows of recall by meaning: what waits in the embedding queue ([`EmbedRef`],
//! [`EmbedItem`]), how far embedding has come ([`EmbedProgress`]), and the switch that makes a
//! store queue what it writes ([`EmbedSwitch`]).
//!
//! Plain data: nothing here may reach the database or an embedding service.

use std::sync::atomic::{AtomicBool, Ordering};

/// One text that has (or will have) a vector: a memory, or one message of a transcript.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum EmbedRef {
    Memory(i64),
    Message { session_id: String, seq: i64 },
}

impl EmbedRef {
    /// The queue key: `m:<id>` or `t:<seq>:<session id>` (the session id last: it may hold `:`).
    pub fn key(&self) -> String {
        match self {
            Self::Memory(id) => format!("m:{id}"),
            Self::Message { session_id, seq } => format!("t:{seq}:{session_id}"),
        }
    }

    /// The reference a queue key names; `None` for anything else.
    pub fn parse(key: &str) -> Option<Self> {
        if let Some(id) = key.strip_prefix("m:") {
            return id.parse().ok().map(Self::Memory);
        }
        let (seq, session_id) = key.strip_prefix("t:")?.split_once(':')?;
        Some(Self::Message { session_id: session_id.to_string(), seq: seq.parse().ok()? })
    }
}

/// A claimed queue entry with the text to embed.
#[derive(Clone, Debug, PartialEq)]
pub struct EmbedItem {
    pub item: EmbedRef,
    pub text: String,
    /// Tries so far, this one included.
    pub attempts: i64,
}

/// How far embedding with one model has come.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EmbedProgress {
    /// Memories, all of them.
    pub memories: u64,
    /// Memories with a vector of this model.
    pub memories_embedded: u64,
    /// Transcript messages with a vector of this model.
    pub messages_embedded: u64,
    /// Texts waiting in the queue (any model).
    pub queued: u64,
    /// Of those, the ones whose last try failed.
    pub failing: u64,
}

/// Whether a store queues what it writes (new memories and transcript messages) for embedding:
/// on only while `[memory.embeddings]` is configured, so that nothing piles up unconsumed.
#[derive(Debug, Default)]
pub struct EmbedSwitch(AtomicBool);

impl EmbedSwitch {
    pub fn set(&self, on: bool) {
        self.0.store(on, Ordering::Relaxed);
    }

    pub fn on(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::EmbedRef;

    #[test]
    fn queue_keys_round_trip() {
        let cases = [
            EmbedRef::Memory(7),
            EmbedRef::Message { session_id: "a:b-c".into(), seq: 12 },
            EmbedRef::Message { session_id: String::new(), seq: 0 },
        ];
        for r in cases {
            assert_eq!(EmbedRef::parse(&r.key()), Some(r.clone()), "{}", r.key());
        }
        for bad in ["", "m:", "m:x", "t:1", "t:x:s", "q:1"] {
            assert_eq!(EmbedRef::parse(bad), None, "{bad}");
        }
    }
}
