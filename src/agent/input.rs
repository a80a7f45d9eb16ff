//! What a turn is given (the session, the event, the user, stop and abort tokens, how it
//! starts) and what it gives back (a commit to make, or parked by shutdown).
//!
//! Plain data: nothing here may run anything.

use super::budget::Budget;
use super::window::SessionState;
use crate::delegate::Chain;
use crate::permissions::notice::Room;
use crate::store::{ApprovalRow, StoreError, TurnCommit, UserRow};
use butler_channel::InboundEvent;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// How a turn begins.
#[derive(Clone, Debug)]
pub(crate) enum Start {
    /// A new message (or the re-run of one cut off by a crash).
    Message,
    /// A person answered an approval the session's turn was waiting for; `pending_left` other
    /// calls of that round still wait.
    Resume { approval: Box<ApprovalRow>, pending_left: usize },
}

pub(crate) struct TurnInput<'a> {
    pub session: &'a mut SessionState,
    pub event: &'a InboundEvent,
    pub user: &'a UserRow,
    /// `/stop`: end at the next safe point and say so.
    pub stop: CancellationToken,
    /// Shutdown past the grace period: stop now, commit nothing (the event is retried later).
    pub abort: CancellationToken,
    /// False when a try of the event was counted before (a retry, or a re-run after a crash
    /// during its turn; a crash while it only waited gives the try back): only then can its
    /// message already be in the transcript.
    pub first_attempt: bool,
    pub start: Start,
    pub session_key: &'a str,
    /// What the channel can show of an approval request: buttons (otherwise the request says
    /// which command answers it) and how long a message may be.
    pub room: Room,
    /// A heartbeat: deliver the answer only if it is not exactly [`QUIET`].
    pub quiet: bool,
    /// Where the turn sits in a tree of delegations; `None` for a conversation's own turn (the
    /// root, which sets up the tree's spend and budget).
    pub tree: Option<Tree>,
}

/// Where a turn sits in a tree of delegations, and what the whole tree may and did spend.
#[derive(Clone, Debug)]
pub(crate) struct Tree {
    /// 0 for a conversation's own turn, 1 for its children, ...
    pub depth: u32,
    /// The session of the tree's root turn (`None` at the root itself).
    pub root_session: Option<String>,
    /// The totals of the originating message: model calls, helpers and dollars of the root
    /// turn, every child, its background tasks and the turns their reports start.
    pub chain: Arc<Chain>,
    pub budget: Budget,
    /// Of the chain's background part (a background task, anything under one, or a turn a
    /// report started): halting the chain (`/stop`, `/cancel`) ends it.
    pub background: bool,
}

/// What a heartbeat turn answers when nothing is worth saying (then nothing is delivered).
pub(crate) const QUIET: &str = "NOTHING_TO_REPORT";

#[derive(Debug, PartialEq)]
pub(crate) enum TurnOutcome {
    /// The turn ended; commit it with [`Agent::commit`] once streaming has stopped.
    Finished(Box<TurnCommit>),
    /// Aborted by shutdown; nothing committed, the event must be retried.
    Parked,
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum TurnError {
    /// The store failed: the event stays in the inbox and is retried; the transcript holds
    /// whatever was recorded, and the retry resumes from there.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A conversation's own turn found the model away ([`crate::llm::LlmError::is_outage`])
    /// after the client's own retries: the event is tried again later, and the person told once.
    #[error("the model is not answering: {0}")]
    ModelAway(crate::llm::LlmError),
}
