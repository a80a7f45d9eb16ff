//! `/tasks`, `/cancel ID`, the background part of `/stop` and the children lines of `/status`:
//! what child agents a person has running or had lately (the background tasks of one message's
//! chain as one entry), and stopping them. Answered from the store and the registry of running
//! children and live chains, without the model.
//!
//! It must never show or stop another user's task, and never run a child.

use crate::delegate::Running;
use crate::store::{DelegationFilter, DelegationRow, DelegationStatus, DelegationUpdate, StoreError, UserRow};
use std::collections::HashMap;
use std::sync::Arc;

/// Tasks shown by `/tasks`.
const SHOWN: usize = 10;

#[derive(Clone)]
pub(super) struct Tasks {
    pub(super) store: super::stores::TriageStores,
    pub(super) running: Arc<Running>,
}

/// A task's text, cut to 60 characters on one line.
fn short(task: &str) -> String {
    let mut out: String = task.chars().take(60).collect();
    if task.chars().count() > 60 {
        out.push('…');
    }
    out.replace('\n', " ")
}

/// One line about a child: id, what it does, its state and cost.
fn line(row: &DelegationRow) -> String {
    format!(
        "- `{}` {} ({}, {}): {} - ${:.4}",
        row.id,
        row.status.as_str(),
        row.archetype.as_deref().unwrap_or("helper"),
        row.model,
        short(&row.task),
        row.cost_usd
    )
}

/// One `/tasks` entry: a lone task's line, or a chain's: its first task (whose id `/cancel`
/// takes), how many tasks, the latest, what it all cost.
fn entry_line(e: &Entry<'_>) -> String {
    let (Some(latest), Some(first)) = (e.rows.first(), e.rows.last()) else { return String::new() };
    if e.rows.len() == 1 {
        return line(latest);
    }
    let cost: f64 = e.rows.iter().map(|r| r.cost_usd).sum();
    format!(
        "- `{}` {}: a chain of {} tasks (latest `{}` {}): {} - ${cost:.4}",
        first.id,
        if e.open { "running" } else { latest.status.as_str() },
        e.rows.len(),
        latest.id,
        latest.status.as_str(),
        short(&first.task),
    )
}

/// Background tasks read for `/tasks` (grouped into chains, of which [`SHOWN`] are shown).
const READ: usize = 200;

/// One `/tasks` entry: the background tasks of one message's chain, newest first.
struct Entry<'r> {
    rows: Vec<&'r DelegationRow>,
    /// Still going: a task of it runs, or its chain lives here (a report waits for its turn).
    open: bool,
}

impl Tasks {
    /// The user's background tasks, a chain (the tasks of one message, its reports' turns
    /// included) as one entry: running ones, then the latest others.
    pub(super) async fn list(&self, user: &UserRow) -> Result<String, StoreError> {
        let filter = DelegationFilter {
            user_id: Some(user.id.clone()),
            background_only: true,
            limit: READ,
            ..Default::default()
        };
        let rows = self.store.delegations.delegations_list(&filter).await?;
        if rows.is_empty() {
            return Ok("No background tasks yet. Ask me to do something \"in the background\".".into());
        }
        let mut entries: Vec<Entry> = Vec::new();
        let mut at: HashMap<&str, usize> = HashMap::new();
        for r in &rows {
            let chain = if r.origin.is_empty() { r.id.as_str() } else { r.origin.as_str() };
            let i = *at.entry(chain).or_insert_with(|| {
                let live = self.running.chains().get(chain).is_some_and(|c| c.halted().is_none());
                entries.push(Entry { rows: vec![], open: live });
                entries.len() - 1
            });
            entries[i].open |= r.status.is_open();
            entries[i].rows.push(r);
        }
        entries.sort_by_key(|e| !e.open);
        let mut out = String::from("Background tasks (newest first; `/cancel ID` stops one, and all of its chain):");
        for e in entries.iter().take(SHOWN) {
            out.push('\n');
            out.push_str(&entry_line(e));
        }
        Ok(out)
    }

    /// Stops the user's task `id`: through its registry entry when it runs here, else by
    /// ending its row (a task a dead process left). A task of a chain (its message started
    /// more than one) ends the whole chain: its running tasks stop and no report of it starts a
    /// turn any more.
    pub(super) async fn cancel(&self, user: &UserRow, id: &str) -> Result<String, StoreError> {
        let row = self.store.delegations.delegation_get(id).await?.filter(|r| r.user_id == user.id);
        let Some(row) = row else {
            return Ok(format!("There is no task `{id}` of yours. /tasks lists them."));
        };
        let chain = if row.origin.is_empty() { vec![] } else { self.chain_rows(user, &row.origin).await? };
        if chain.len() > 1 {
            let live = self.running.chains().get(&row.origin);
            let halted = live.is_some_and(|c| c.halt("/cancel"));
            let mut stopped = 0;
            for r in chain.iter().filter(|r| r.status.is_open()) {
                self.stop_one(&r.id).await?;
                stopped += 1;
            }
            if !halted && stopped == 0 {
                return Ok(format!("The chain of task `{id}` has already ended ({} tasks).", chain.len()));
            }
            tracing::info!(task = id, origin = %row.origin, tasks = chain.len(), "chain cancelled");
            return Ok(format!(
                "Stopping task `{id}` and its chain ({} tasks so far): nothing more runs or reports from it.",
                chain.len()
            ));
        }
        if !row.status.is_open() {
            return Ok(format!("Task `{id}` has already ended ({}).", row.status.as_str()));
        }
        Ok(if self.stop_one(id).await? {
            format!("Stopping task `{id}`.")
        } else {
            format!("Task `{id}` was not running here; it is marked cancelled.")
        })
    }

    /// The user's background tasks of the chain of message `origin`, newest first.
    async fn chain_rows(&self, user: &UserRow, origin: &str) -> Result<Vec<DelegationRow>, StoreError> {
        let filter = DelegationFilter {
            user_id: Some(user.id.clone()),
            background_only: true,
            origin: Some(origin.to_string()),
            limit: READ,
            ..Default::default()
        };
        self.store.delegations.delegations_list(&filter).await
    }

    /// Stops one open task: `true` when it runs here; else its row is marked cancelled.
    async fn stop_one(&self, id: &str) -> Result<bool, StoreError> {
        if self.running.cancel(id) {
            return Ok(true);
        }
        let update = DelegationUpdate::to(DelegationStatus::Cancelled, None, Some("/cancel"));
        self.store.delegations.delegation_update(id, &update).await?;
        Ok(false)
    }

    /// `/stop` in session `key`: halts every chain of it (background tasks stop, and their
    /// reports start no turn); how many were still going.
    pub(super) fn halt_session(&self, key: &str) -> usize {
        self.running.chains().halt_session(key, "/stop")
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
        let rows = self.store.delegations.delegations_list(&filter).await?;
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
