//! The work a session takes: a [`Job`] (an event, its user, what to do with it) and the
//! refusal of a full mailbox ([`Busy`]). Triage builds jobs; the session actor runs them.
//!
//! Plain data: this must never run anything or import the session manager or its actor.

use crate::store::UserRow;
use butler_channel::InboundEvent;

/// Work for a session, in mailbox order.
#[derive(Clone, Debug)]
pub struct Job {
    pub(crate) event: InboundEvent,
    pub(crate) user: UserRow,
    pub(crate) kind: JobKind,
    /// Tries counted for this event, this one included (1 the first time): a try that was
    /// running when its process died counts, a claim that never began its turn does not.
    pub(crate) attempt: i32,
    /// A heartbeat job: the reply is delivered only if the model found something worth saying
    /// (it answers exactly [`crate::agent::QUIET`] otherwise); nothing streams meanwhile.
    pub(crate) quiet: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobKind {
    /// An agent turn for a message.
    Turn,
    /// `/new`: close the session; the next message opens a fresh one.
    Reset,
    /// `/compact`: fold the older part of the session into its summary now.
    Compact,
    /// `/resume N`: make the person's earlier direct session `session_id` the open one of this
    /// key (closing the current one); `label` names it in the answer.
    Reopen { session_id: String, label: String },
    /// A person answered an approval the session's turn waits for: resume it.
    Resume { approval: Box<crate::store::ApprovalRow>, pending_left: usize },
}

/// The mailbox is full: leave the event in the inbox and offer it again later.
#[derive(Debug, thiserror::Error)]
#[error("session {0} is busy; its mailbox is full")]
pub struct Busy(pub String);
