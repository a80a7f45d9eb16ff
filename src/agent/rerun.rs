//! Taking a turn up where the transcript says it is: a message whose turn was cut off by a
//! crash or a failed try (the transcript is repaired: every call gets a result, a finished
//! child's answer included), and a new message arriving while calls wait for a person (their
//! approvals are cancelled and the calls closed).
//!
//! It must never run a tool again that was recorded without a result, and never leave a call
//! without one.

use super::child::Children;
use super::context::dangling_results;
use super::progress::Nudge;
use super::state::Progress;
use super::stores::AgentStores;
use super::window::SessionState;
use crate::permissions::approval::{decision_audit, outcome_text};
use crate::store::{
    ApprovalDecision, ApprovalStatus, DelegationStatus, DelegationUpdate, NewMessage, Role, StoreError,
};
use butler_channel::{ConversationKind, InboundEvent};

/// The re-run part of an agent.
pub(super) struct Rerun<'a> {
    pub(super) store: &'a AgentStores,
    /// Woken when a cancelled approval's message was edited.
    pub(super) nudge: &'a dyn Nudge,
    /// For the delegate calls a crash left without a result.
    pub(super) children: Children<'a>,
}

/// Persists `msgs` (preceded by the turn's user message if that is not stored yet) and adds
/// them to the cached transcript.
pub(super) async fn append(
    store: &AgentStores,
    session: &mut SessionState,
    progress: &mut Progress,
    msgs: Vec<NewMessage>,
) -> Result<(), StoreError> {
    let msgs: Vec<NewMessage> = progress.unsaved_user.take().into_iter().chain(msgs).collect();
    if msgs.is_empty() {
        return Ok(());
    }
    store.sessions.messages_append(&session.row.id, &msgs).await?;
    session.history.extend(msgs);
    Ok(())
}

impl Rerun<'_> {
    /// Closes calls a parked turn left waiting, because a new message came first: their
    /// approvals are cancelled (the requests say so) and each call gets a refusal result.
    async fn supersede_waiting(&self, session: &mut SessionState, event: &InboundEvent) -> Result<(), StoreError> {
        let fixes = dangling_results(&session.history);
        if fixes.is_empty() {
            return Ok(());
        }
        let by = event.actor.name().to_string();
        let mut pending = self.store.approvals.approvals_pending(&session.row.id).await?;
        // Children parked with the turn wait under their own sessions: they end here too.
        for (child, under) in
            crate::delegate::waiting_children((&*self.store.delegations, &*self.store.approvals), &session.row.id)
                .await?
        {
            pending.extend(under);
            let update = DelegationUpdate::to(DelegationStatus::Cancelled, None, Some("a new message came first"));
            self.store.delegations.delegation_update(&child.id, &update).await?;
        }
        for approval in pending {
            let decision = ApprovalDecision {
                status: ApprovalStatus::Cancelled,
                scope: None,
                decided_by: by.clone(),
                message: outcome_text(
                    &approval,
                    ApprovalStatus::Cancelled,
                    None,
                    &format!("{by} (a new message came first)"),
                ),
                answer: None,
            };
            if let Some(row) = self.store.approvals.approval_decide(&approval.id, &decision).await? {
                let audit = decision_audit(&row, ApprovalStatus::Cancelled, None, &by);
                self.store.audit.audit_add(&audit).await?;
                self.nudge.wake();
            }
        }
        let msgs: Vec<NewMessage> = fixes
            .into_iter()
            .filter_map(|f| f.tool_call_id)
            .map(|id| NewMessage::tool(id, "not run: cancelled because a new message came first", true))
            .collect();
        self.store.sessions.messages_append(&session.row.id, &msgs).await?;
        session.history.extend(msgs);
        Ok(())
    }

    /// Prepares the user message (stored with the first tool round or the final commit, so a
    /// plain turn costs one write), or, when this event's message is already in the transcript
    /// (the turn is being re-run after a crash or a retry), repairs the transcript and restores
    /// the text shown so far.
    pub(super) async fn start_or_resume(
        &self,
        session: &mut SessionState,
        event: &InboundEvent,
        first_attempt: bool,
        progress: &mut Progress,
    ) -> Result<bool, StoreError> {
        let eid = event.id.0.as_str();
        let found = session.history.iter().rposition(|m| m.event_id.as_deref() == Some(eid));
        let found = match found {
            Some(i) => Some(i),
            None if first_attempt => None,
            None if self.store.sessions.message_seq_for_event(&session.row.id, eid).await?.is_some() => {
                // In the store but outside the cached window: reload the tail.
                let row = session.row.clone();
                *session = SessionState::load(&*self.store.summaries, row).await?;
                session.history.iter().rposition(|m| m.event_id.as_deref() == Some(eid))
            }
            None => None,
        };
        match found {
            None => {
                self.supersede_waiting(session, event).await?;
                let text = event.text().unwrap_or_default();
                // In a group every speaker is named (the providers show the name to the model).
                let name = (event.kind == ConversationKind::Group).then(|| event.actor.name().to_string());
                let content = text.to_string();
                progress.unsaved_user = Some(NewMessage::user(content, name, Some(eid.to_string())));
                Ok(true)
            }
            Some(i) => {
                tracing::info!(event = eid, "resuming a turn cut off earlier");
                for m in &session.history[i + 1..] {
                    if m.role() == Role::Assistant && !m.content.is_empty() {
                        progress.shown = progress.join(&m.content);
                    }
                    if m.role() == Role::Assistant {
                        progress.iterations += 1;
                    }
                }
                let fixes = dangling_results(&session.history[i..]);
                // A delegate call's child may have finished before the crash: its answer stands.
                let fixes = self.children.settle_dangling(&session.row.id, fixes).await?;
                append(self.store, session, progress, fixes).await?;
                Ok(false)
            }
        }
    }
}
