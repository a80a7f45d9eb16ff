//! The store traits the agent calls, one field each, handed in by the composition root: the
//! agent never holds the whole store.
//!
//! Plain handles: nothing here may query on its own.

use crate::store::{
    ApprovalStore, AuditStore, DelegationStore, InboxStore, MemoryStore, SessionStore, SummaryStore, TurnStore,
};
use crate::tools::ToolStores;
use std::sync::Arc;

/// What the agent reads and writes.
#[derive(Clone)]
pub struct AgentStores {
    /// Session rows and transcripts (its own and its children's).
    pub sessions: Arc<dyn SessionStore>,
    /// Compaction checkpoints.
    pub summaries: Arc<dyn SummaryStore>,
    /// The turn's commit, and usage (budgets, compaction summaries).
    pub turns: Arc<dyn TurnStore>,
    /// Recall into a turn.
    pub memory: Arc<dyn MemoryStore>,
    /// Approvals parked turns wait on, and grants for the session.
    pub approvals: Arc<dyn ApprovalStore>,
    /// The permission decisions on tool calls.
    pub audit: Arc<dyn AuditStore>,
    /// Child agents.
    pub delegations: Arc<dyn DelegationStore>,
    /// Background tasks report into the parent's inbox.
    pub inbox: Arc<dyn InboxStore>,
    /// What the tools of a turn get, scoped to its user.
    pub tools: ToolStores,
}

/// What a background task's report needs: its row, and the parent's inbox.
pub type Reports<'a> = (&'a dyn DelegationStore, &'a dyn InboxStore);

impl AgentStores {
    /// [`Reports`] from these stores.
    pub fn reports(&self) -> Reports<'_> {
        (&*self.delegations, &*self.inbox)
    }
}
