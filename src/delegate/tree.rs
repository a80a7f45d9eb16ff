//! What waits in a tree of children: the open foreground children of a conversation's session
//! and the approvals (or questions) pending under them, for `/stop` and for a new message that
//! supersedes a parked turn.
//!
//! Reads only: it must never decide an approval or end a child itself.

use crate::store::{ApprovalRow, ApprovalStore, DelegationFilter, DelegationRow, DelegationStore, StoreError};

/// The foreground children of session `root` that are still open, with the approvals pending
/// under each (asked inside them; empty unless the child waits).
pub async fn waiting_children(
    (delegations, approvals): (&dyn DelegationStore, &dyn ApprovalStore),
    root: &str,
) -> Result<Vec<(DelegationRow, Vec<ApprovalRow>)>, StoreError> {
    let filter =
        DelegationFilter { root_session_id: Some(root.to_string()), open_only: true, limit: 50, ..Default::default() };
    let mut out = Vec::new();
    for child in delegations.delegations_list(&filter).await?.into_iter().filter(|c| !c.background) {
        let pending = approvals.approvals_pending(&child.child_session_id).await?;
        out.push((child, pending));
    }
    Ok(out)
}
