//! What triage decides about an event: a [`Decision`] (drop, reply, notify, done, or work for
//! a session) and the [`Verdict`] that carries it with the record kept of it.
//!
//! Plain data: this must never decide anything itself or import the rest of triage.

use crate::session::Job;

/// What to do with an event.
#[derive(Debug)]
pub enum Decision {
    /// Not for Butler (another bot, a group message not addressed to it): end it quietly.
    Drop { reason: String },
    /// Answer at once with this text, no session involved.
    Reply { text: String },
    /// Post this text to another conversation (a trigger's notification).
    Notify { conversation: butler_channel::ConversationRef, text: String },
    /// Handled, nothing to say.
    Done,
    /// Work for the session `key`.
    Session { key: String, job: Box<Job> },
}

/// A decision and, for the non-routine ones, the record kept of it (`drop`, `refused`,
/// `pairing`, `notify`, `agent`, ...) with its reason.
#[derive(Debug)]
pub struct Verdict {
    pub decision: Decision,
    pub audit: Option<(&'static str, String)>,
}

impl Verdict {
    /// A routine decision, not recorded.
    pub fn plain(decision: Decision) -> Self {
        Self { decision, audit: None }
    }

    /// A decision recorded as `kind` with `reason`.
    pub fn recorded(decision: Decision, kind: &'static str, reason: impl Into<String>) -> Self {
        Self { decision, audit: Some((kind, reason.into())) }
    }

    /// Dropped, with the reason recorded.
    pub fn drop(reason: impl Into<String>) -> Self {
        let reason = reason.into();
        Self { decision: Decision::Drop { reason: reason.clone() }, audit: Some(("drop", reason)) }
    }
}
