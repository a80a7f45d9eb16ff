//! The statements that put a written text in the embedding queue, run by the writers of
//! memories and transcripts in their own transactions (see `vectors.rs` for the queue itself).
//!
//! Fixed SQL only: this file must never build a statement from user input.

/// Queues a memory (or re-queues it after its text changed): the claim of a batch in flight is
/// dropped with it, so that batch's vector of the old text is not stored. `$1` the queue key.
pub(crate) const SQL_QUEUE: &str = "INSERT INTO embed_queue (ref, attempts, next_ms) VALUES ($1, 0, 0) \
     ON CONFLICT (ref) DO UPDATE SET claim = NULL, attempts = 0, next_ms = 0, error = NULL";

/// Queues a transcript message when its session is a conversation (`$1` key, `$2` session):
/// helpers' and internal sessions are not searched, so not embedded.
pub(crate) const SQL_QUEUE_MESSAGE: &str = "INSERT INTO embed_queue (ref, attempts, next_ms) \
     SELECT $1, 0, 0 FROM sessions WHERE id = $2 AND (key LIKE 'dm:%' OR key LIKE 'group:%') \
     ON CONFLICT (ref) DO NOTHING";

/// Whether a message of `role` with `content` is part of what transcript search finds.
pub(crate) fn searchable(role: &str, content: &str) -> bool {
    matches!(role, "user" | "assistant") && !content.trim().is_empty()
}
