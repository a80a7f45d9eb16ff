//! What a child's `delegations` row means to others: the text its parent's call gets, the
//! names of its session and event, and a background task's report through the inbox (once,
//! carrying its chain's origin and totals), also for tasks a dead process left behind.
//!
//! It must never run a child, and never hand over a background result twice.

use super::context::INTERRUPTED;
use super::exec::ToolResult;
use super::stores::{AgentStores, Reports};
use crate::clock::now_ms;
use crate::delegate::Totals;
use crate::ids::TASK_SOURCE;
use crate::store::{DelegationRow, DelegationStatus, DelegationUpdate, StoreError};
use butler_channel::{Actor, EventBody, EventId, InboundEvent};

/// The session key of task `id`'s child.
pub(super) fn child_key(id: &str) -> String {
    format!("delegate:{id}")
}

pub(super) fn child_event_id(id: &str) -> String {
    format!("delegate:{id}")
}

/// The event a child's turn runs for: the task, from the person the parent works for.
pub(super) fn child_event(row: &DelegationRow, parent: &InboundEvent) -> InboundEvent {
    InboundEvent {
        id: EventId(child_event_id(&row.id)),
        actor: parent.actor.clone(),
        conversation: parent.conversation.clone(),
        kind: parent.kind,
        addressed: true,
        reply_to: None,
        message_id: None,
        body: EventBody::Message { text: row.task.clone() },
        at_ms: row.created_ms,
        attachments: Vec::new(),
    }
}

/// The parent call's result for an ended child: its answer (or partial answer and why), and
/// what it cost.
pub(super) fn recorded_result(row: &DelegationRow) -> ToolResult {
    let who = row.archetype.as_deref().unwrap_or("helper");
    let usage = format!(
        "[{who} {id}: tier {tier}, model {model}; {input} input + {output} output tokens, ${cost:.4}]",
        id = row.id,
        tier = row.tier,
        model = row.model,
        input = row.input_tokens,
        output = row.output_tokens,
        cost = row.cost_usd
    );
    let text = row.result.clone().unwrap_or_default();
    let (content, is_error) = match row.status {
        DelegationStatus::Done => (format!("{text}\n\n{usage}"), false),
        DelegationStatus::Stopped => (
            format!(
                "[partial answer: the helper was stopped by {}]\n{text}\n\n{usage}",
                row.reason.as_deref().unwrap_or("a limit")
            ),
            false,
        ),
        DelegationStatus::Interrupted => (format!("{INTERRUPTED}\n\n{usage}"), true),
        DelegationStatus::Cancelled => (
            format!("[the helper was stopped ({})]\n{text}\n\n{usage}", row.reason.as_deref().unwrap_or("cancelled")),
            true,
        ),
        DelegationStatus::Failed => (
            format!("[the helper failed: {}]\n{text}\n\n{usage}", row.reason.as_deref().unwrap_or("unknown error")),
            true,
        ),
        DelegationStatus::Running | DelegationStatus::Waiting => {
            (format!("[the helper is still running]\n{usage}"), true)
        }
    };
    ToolResult {
        call_id: row.parent_call_id.clone(),
        content: content.trim_start().to_string(),
        is_error,
        images: vec![],
    }
}

/// What a background task's report event says about its chain.
#[derive(Debug, PartialEq)]
pub(super) struct Report {
    pub task: String,
    /// The event id of the message whose chain started the task (empty for old reports).
    pub origin: String,
    /// What the chain had used when the report was handed over (`None` after a restart).
    pub totals: Option<Totals>,
}

/// The chain facts of a background task's report event; `None` for any other event.
pub(super) fn report_of(event: &InboundEvent) -> Option<Report> {
    let EventBody::Trigger { source, payload, .. } = &event.body else { return None };
    if source != TASK_SOURCE {
        return None;
    }
    let text = |k: &str| payload.get(k).and_then(serde_json::Value::as_str).unwrap_or_default().to_string();
    let totals = payload.get("totals").and_then(|t| serde_json::from_value(t.clone()).ok());
    Some(Report { task: text("task"), origin: text("origin"), totals })
}

/// Hands an ended background task's result to the parent's conversation: an inbox event
/// `task:<id>` (its id makes it once) with its chain's origin and `totals`, then marks the
/// task delivered.
pub(crate) async fn deliver(store: Reports<'_>, row: &DelegationRow, totals: Option<Totals>) -> Result<(), StoreError> {
    let Ok(identity) = row.requester.parse() else {
        return Err(StoreError::Corrupt(format!("delegations.requester `{}`", row.requester)));
    };
    let Ok(conversation) = row.conversation.parse() else {
        return Err(StoreError::Corrupt(format!("delegations.conversation `{}`", row.conversation)));
    };
    let outcome = match row.status {
        DelegationStatus::Done => "finished".to_string(),
        s => format!("ended ({})", s.as_str()),
    };
    let result = recorded_result(row).content;
    let text = format!(
        "[Background task {id} {outcome}. Its task was: {task}]\n\n{result}\n\nTell me what came of it.",
        id = row.id,
        task = row.task
    );
    let kind =
        if row.group_chat { butler_channel::ConversationKind::Group } else { butler_channel::ConversationKind::Direct };
    let event = InboundEvent {
        id: EventId(format!("{TASK_SOURCE}:{}", row.id)),
        actor: Actor::new(identity),
        conversation,
        kind,
        addressed: true,
        reply_to: None,
        message_id: None,
        body: EventBody::Trigger {
            source: TASK_SOURCE.into(),
            text,
            payload: serde_json::json!({"task": row.id, "origin": row.origin, "totals": totals}),
        },
        at_ms: now_ms(),
        attachments: Vec::new(),
    };
    store.1.inbox_insert(&event).await?;
    store.0.delegation_delivered(&row.id).await?;
    Ok(())
}

/// At start (one process owns its conversations): background tasks a dead process left open
/// are reported as interrupted, once, and ended results not yet handed over are handed over.
pub(crate) async fn recover_background(store: &AgentStores) -> Result<usize, StoreError> {
    hand_over_left(store.reports(), "interrupted by a restart", |_| true).await
}

/// With several replicas (the reaper, on one of them): background tasks of replicas no longer
/// alive are reported, once each: an open one as interrupted (the compare-and-swap on the open
/// row decides who), an ended one whose result was not handed over yet as it ended. The
/// report's event id (`task:<id>`) keeps it once in the inbox.
pub(crate) async fn report_orphans(reports: Reports<'_>, alive: &[String]) -> Result<usize, StoreError> {
    let gone = |row: &DelegationRow| !row.worker.is_empty() && !alive.contains(&row.worker);
    hand_over_left(reports, "interrupted: the replica running it stopped", gone).await
}

/// Reports the background tasks `left` picks whose result was not handed over: an open one is
/// first moved to interrupted (`why`), once (compare-and-swap on the open row); how many.
async fn hand_over_left(
    reports: Reports<'_>,
    why: &str,
    left: impl Fn(&DelegationRow) -> bool,
) -> Result<usize, StoreError> {
    let filter = crate::store::DelegationFilter { background_only: true, limit: 1000, ..Default::default() };
    let mut handed = 0;
    for row in reports.0.delegations_list(&filter).await? {
        if row.delivered_ms.is_some() || !left(&row) {
            continue;
        }
        let row = if row.status.is_open() {
            let update = DelegationUpdate::to(DelegationStatus::Interrupted, None, Some(why));
            match reports.0.delegation_update(&row.id, &update).await? {
                Some(r) => r,
                None => continue,
            }
        } else {
            row
        };
        deliver(reports, &row, None).await?;
        handed += 1;
    }
    Ok(handed)
}
