//! How the agent reports a turn's progress outward, through traits it owns: a [`TurnObserver`]
//! sees the drafts and the running tools (the outbox's streamer shows them to the user), and a
//! [`Nudge`] is woken when the agent changed something waiting for delivery (the outbox's
//! deliverer implements it).
//!
//! The agent depends only on these traits, never on the outbox itself; implementations must
//! never block the turn (no awaiting, no I/O in the calls).

/// Sees a turn's progress, to stream it to the user. Called often; must not block.
pub(crate) trait TurnObserver: Send {
    /// The whole reply text so far (not a delta).
    fn text(&mut self, full: &str);
    /// Tools now running (empty when none).
    fn tools(&mut self, names: &[String]);
}

/// An observer for channels that cannot show progress.
pub(crate) struct NullObserver;

impl TurnObserver for NullObserver {
    fn text(&mut self, _full: &str) {}
    fn tools(&mut self, _names: &[String]) {}
}

/// Woken when the agent changed an outbox row outside a turn's commit (an approval request's
/// message was edited), so the change goes out at once instead of at the next poll.
pub(crate) trait Nudge: Send + Sync {
    /// Asks for a delivery pass soon; returns at once.
    fn wake(&self);
}
