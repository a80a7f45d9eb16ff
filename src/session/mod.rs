//! Sessions: one actor per live session, a bounded mailbox, one turn at a time.
//!
//! Messages for a session queue in its mailbox and are answered in order; `/stop` reaches the
//! running turn out of band; an idle actor is dropped and its session rehydrated from the store
//! on the next message. A session never sees another session's transcript: the session key
//! decides, and it always includes the conversation (and, for DMs, the person).
//! Nothing here may block on a person or hold a lock across an await.

mod actor;
mod job;
pub mod retry;
mod shared;
mod trim;

pub use crate::ids::session_key;
pub use job::{Busy, Job, JobKind};
pub use shared::{SessionDeps, SessionStores};

use crate::metrics::METRICS;
use shared::{lease_name, lock, Claim, Handle, Shared};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;

/// Where a session's next job runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Here: submit it.
    Here,
    /// On that replica: hand the event over to it.
    Elsewhere(String),
    /// Nowhere for now: leave the event pending a little.
    Away,
}

#[derive(Clone)]
pub struct Sessions {
    inner: Arc<Shared>,
}

impl Sessions {
    pub fn new(deps: SessionDeps) -> Self {
        Self { inner: Arc::new(Shared::new(deps)) }
    }

    /// Queues a job for the session `key`, starting its actor if it is not live (with several
    /// replicas, only [`Sessions::place`] starts one: a session runs only under its lease).
    pub fn submit(&self, key: &str, job: Job) -> Result<(), Busy> {
        if self.inner.shutdown.is_cancelled() {
            return Err(Busy(key.to_string()));
        }
        let mut actors = lock(&self.inner.actors);
        if !actors.contains_key(key) {
            if self.inner.deps.cluster.shared() {
                return Err(Busy(key.to_string()));
            }
            let handle = self.spawn_actor(key, None);
            actors.insert(key.to_string(), handle);
        }
        let handle = actors.get(key).expect("inserted above");
        handle.tx.try_send(Box::new(job)).map_err(|_| Busy(key.to_string()))
    }

    /// Where session `key` runs: here (its actor is live, or this replica just took its lease
    /// and fencing token), on another replica, or nowhere for now (Redis or the database is
    /// away). Without Redis, always here.
    pub async fn place(&self, key: &str) -> Placement {
        let cluster = self.inner.deps.cluster.clone();
        if !cluster.shared() || lock(&self.inner.actors).contains_key(key) {
            return Placement::Here;
        }
        let _placing = self.inner.placing.lock().await;
        if lock(&self.inner.actors).contains_key(key) {
            return Placement::Here;
        }
        let name = lease_name(key);
        match cluster.acquire(&name).await {
            Ok(Some(lease)) => match self.inner.deps.stores.replicas.fence_take(key).await {
                Ok(fence) => {
                    tracing::debug!(key, token = fence.token, "session lease taken");
                    let handle = self.spawn_actor(key, Some(Claim { lease, fence }));
                    lock(&self.inner.actors).insert(key.to_string(), handle);
                    Placement::Here
                }
                Err(e) => {
                    tracing::warn!(key, error = %e, "no fencing token; giving the session lease back");
                    cluster.release(&name).await;
                    Placement::Away
                }
            },
            Ok(None) => match cluster.owner(&name).await {
                Ok(Some(owner)) if owner != cluster.worker() => Placement::Elsewhere(owner),
                _ => Placement::Away,
            },
            Err(e) => {
                tracing::debug!(key, error = %e, "cannot take a session lease now");
                Placement::Away
            }
        }
    }

    /// Asks the running turn of `key` to stop (only if it is `turn_id`, when given). With
    /// several replicas, a session that does not run here is asked on every replica (through
    /// the bus); that counts as found.
    pub fn stop(&self, key: &str, turn_id: Option<&str>) -> bool {
        let live_here = lock(&self.inner.actors).contains_key(key);
        let cluster = &self.inner.deps.cluster;
        if !live_here && cluster.shared() {
            let (cluster, payload) = (cluster.clone(), format!("{key}\t{}", turn_id.unwrap_or_default()));
            self.inner.tracker.spawn(async move { cluster.publish(crate::cluster::Topic::Stop, &payload).await });
            return true;
        }
        self.stop_here(key, turn_id)
    }

    /// [`Sessions::stop`] for a turn running on this replica only.
    pub fn stop_here(&self, key: &str, turn_id: Option<&str>) -> bool {
        let actors = lock(&self.inner.actors);
        let Some(handle) = actors.get(key) else { return false };
        let running = lock(&handle.running);
        match running.as_ref() {
            Some(r) if turn_id.is_none_or(|t| t == r.turn_id) => {
                r.stop.cancel();
                true
            }
            _ => false,
        }
    }

    /// Whether `key` has a turn running now.
    pub fn is_running(&self, key: &str) -> bool {
        lock(&self.inner.actors).get(key).is_some_and(|h| lock(&h.running).is_some())
    }

    /// Session actors in memory.
    pub fn live(&self) -> usize {
        lock(&self.inner.actors).len()
    }

    /// Stops taking work, lets running turns finish within `grace`, then aborts the rest
    /// (their events stay in the inbox and are picked up again at the next start).
    pub async fn shutdown(&self, grace: Duration) {
        self.inner.shutdown.cancel();
        self.inner.tracker.close();
        if tokio::time::timeout(grace, self.inner.tracker.wait()).await.is_err() {
            tracing::warn!(grace_secs = grace.as_secs(), "turns still running after the grace period; parking them");
            self.inner.abort.cancel();
            self.inner.tracker.wait().await;
        }
    }

    fn spawn_actor(&self, key: &str, claim: Option<Claim>) -> Handle {
        let (tx, rx) = mpsc::channel(self.inner.deps.limits.session_mailbox.max(1));
        let running = Arc::new(Mutex::new(None));
        let actor = actor::Actor::new(key, self.inner.clone(), running.clone(), claim);
        METRICS.sessions_live.add(1);
        self.inner.tracker.spawn(actor.run(rx));
        Handle { tx, running }
    }
}
