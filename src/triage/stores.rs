//! The store traits triage calls, one field each, handed in by the composition root: triage
//! never holds the whole store.
//!
//! Plain handles: nothing here may query on its own.

use crate::store::{
    AccessStore, ApprovalStore, AuditStore, DeadLetterStore, DelegationStore, MemoryStore, OutboxStore, ProfileStore,
    ScheduleStore, SessionStore, TranscriptStore, TurnStore, UserStore,
};
use std::sync::Arc;

/// The store traits triage calls, one field each.
#[derive(Clone)]
pub struct TriageStores {
    /// Who someone is (access), and the conversations of scheduled jobs.
    pub users: Arc<dyn UserStore>,
    /// Pairing and link codes.
    pub codes: Arc<dyn AccessStore>,
    /// The welcome of an approved pairing.
    pub outbox: Arc<dyn OutboxStore>,
    /// `/status`: how many events were set aside.
    pub dead_letters: Arc<dyn DeadLetterStore>,
    /// The session a click or a question answer belongs to; `/status`.
    pub sessions: Arc<dyn SessionStore>,
    /// `/status`: usage and context size.
    pub turns: Arc<dyn TurnStore>,
    /// `/memory`.
    pub memory: Arc<dyn MemoryStore>,
    /// Approval decisions and `/status`'s recent decisions.
    pub audit: Arc<dyn AuditStore>,
    pub approvals: Arc<dyn ApprovalStore>,
    /// `/tasks`, `/cancel`, and the children waiting under a session.
    pub delegations: Arc<dyn DelegationStore>,
    /// The jobs of scheduled events.
    pub schedules: Arc<dyn ScheduleStore>,
    /// `/timezone`.
    pub profiles: Arc<dyn ProfileStore>,
    /// `/sessions`, `/resume`: the person's earlier conversations.
    pub transcripts: Arc<dyn TranscriptStore>,
}
