//! `/tasks`, `/cancel ID` and the children lines of `/status`: what child agents a person has
//! running or had lately, and stopping one. Answered from the store and the registry of
//! running children, without the model.
//!
//! It must never show or stop another user's task, and never run a child.

use crate::delegate::Running;
use crate::store::{DelegationFilter, DelegationRow, DelegationStatus, DelegationUpdate, Store, StoreError, UserRow};
use std::sync::Arc;

/// Tasks shown by `/tasks`.
const SHOWN: usize = 10;

#[derive(Clone)]
pub(super) struct Tasks {
    pub(super) store: Arc<dyn Store>,
    pub(super) running: Arc<Running>,
}

/// One line about a child: id, what it does, its state and cost.
fn line(row: &DelegationRow) -> String {
    let mut task: String = row.task.chars().take(60).collect();
    if row.task.chars().count() > 60 {
        task.push('…');
    }
    format!(
        "- `{}` {} ({}, {}): {} - ${:.4}",
        row.id,
        row.status.as_str(),
        row.archetype.as_deref().unwrap_or("helper"),
        row.model,
        task.replace('\n', " "),
        row.cost_usd
    )
}

impl Tasks {
    /// The user's background tasks: running ones, then the latest others.
    pub(super) async fn list(&self, user: &UserRow) -> Result<String, StoreError> {
        let filter = DelegationFilter {
            user_id: Some(user.id.clone()),
            background_only: true,
            limit: SHOWN,
            ..Default::default()
        };
        let mut rows = self.store.delegations_list(&filter).await?;
        if rows.is_empty() {
            return Ok("No background tasks yet. Ask me to do something \"in the background\".".into());
        }
        rows.sort_by_key(|r| !r.status.is_open());
        let mut out = String::from("Background tasks (newest first; `/cancel ID` stops one):");
        for r in &rows {
            out.push('\n');
            out.push_str(&line(r));
        }
        Ok(out)
    }

    /// Stops the user's task `id`: through its registry entry when it runs here, else by
    /// ending its row (a task a dead process left).
    pub(super) async fn cancel(&self, user: &UserRow, id: &str) -> Result<String, StoreError> {
        let row = self.store.delegation_get(id).await?.filter(|r| r.user_id == user.id);
        let Some(row) = row else {
            return Ok(format!("There is no task `{id}` of yours. /tasks lists them."));
        };
        if !row.status.is_open() {
            return Ok(format!("Task `{id}` has already ended ({}).", row.status.as_str()));
        }
        if self.running.cancel(id) {
            return Ok(format!("Stopping task `{id}`."));
        }
        let update = DelegationUpdate::to(DelegationStatus::Cancelled, None, Some("/cancel"));
        self.store.delegation_update(id, &update).await?;
        Ok(format!("Task `{id}` was not running here; it is marked cancelled."))
    }

    /// The `/status` lines for the children running in session `root` (empty without any).
    pub(super) async fn running_in(&self, user: &UserRow, root: &str) -> Result<String, StoreError> {
        let filter = DelegationFilter {
            root_session_id: Some(root.to_string()),
            user_id: Some(user.id.clone()),
            open_only: true,
            limit: 50,
            ..Default::default()
        };
        let rows = self.store.delegations_list(&filter).await?;
        if rows.is_empty() {
            return Ok(String::new());
        }
        let cost: f64 = rows.iter().map(|r| r.cost_usd).sum();
        let mut out = format!("\nHelpers running: {} (${cost:.4} so far)", rows.len());
        for r in &rows {
            out.push('\n');
            out.push_str(&line(r));
        }
        Ok(out)
    }
}
