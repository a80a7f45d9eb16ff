//! What the session manager ([`Sessions`](super::Sessions)) and its actors share: the
//! dependencies of a turn, the live actors' handles, the task tracker and the shutdown tokens,
//! plus the two things an actor does to the manager's table (retire when idle, forget).
//!
//! Nothing here may hold a lock across an await or start a turn; it must never import the
//! manager (`session/mod.rs`) or the actor.

use super::job::Job;
use crate::agent::Agent;
use crate::cluster::{Cluster, Lease};
use crate::config::{AgentConfig, LimitsConfig};
use crate::outbox::{Channels, Deliverer};
use crate::store::{
    DeadLetterStore, InboxStore, OutboxStore, ProfileStore, RecoveryStore, ReplicaStore, SessionStore, SummaryStore,
    TranscriptStore, TurnStore,
};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// The store traits the sessions call, one field each.
#[derive(Clone)]
pub struct SessionStores {
    /// The event of a job (is it still open?), and the end of a failed try.
    pub inbox: Arc<dyn InboxStore>,
    /// Giving a job back to the inbox without counting a try.
    pub dead_letters: Arc<dyn DeadLetterStore>,
    /// Fencing tokens, and handing an event back to the session's new owner.
    pub replicas: Arc<dyn ReplicaStore>,
    /// Marking a turn as running; settling drafts a failed event leaves.
    pub recovery: Arc<dyn RecoveryStore>,
    /// Session rows and their transcripts.
    pub sessions: Arc<dyn SessionStore>,
    pub summaries: Arc<dyn SummaryStore>,
    /// The pinned memories a new private session's prompt carries.
    pub profiles: Arc<dyn ProfileStore>,
    /// The commit of a turn.
    pub turns: Arc<dyn TurnStore>,
    /// Streamed drafts, and the notice of a failed event.
    pub outbox: Arc<dyn OutboxStore>,
    /// `/resume`: an earlier conversation becomes the key's open session.
    pub transcripts: Arc<dyn TranscriptStore>,
}

impl SessionStores {
    /// What ending a failed try writes.
    pub(super) fn failing(&self) -> super::retry::FailStores<'_> {
        (&*self.inbox, &*self.outbox, &*self.recovery)
    }
}

/// What a session actor needs.
#[derive(Clone)]
pub struct SessionDeps {
    pub(super) agent: Agent,
    pub(super) stores: SessionStores,
    pub(super) channels: Channels,
    pub(super) deliverer: Arc<Deliverer>,
    pub(super) agent_cfg: AgentConfig,
    pub(super) limits: LimitsConfig,
    /// Distils durable facts from finished exchanges (off when `[memory] archivist = false`).
    pub(super) archivist: Option<Arc<crate::memory::Archivist>>,
    /// The other replicas (or this process alone): session leases.
    pub(super) cluster: Arc<Cluster>,
    /// `[memory] profile_max_tokens`: the pinned profile in a new private session's prompt.
    pub(super) profile_max_tokens: usize,
}

impl SessionDeps {
    /// `archivist`: `None` when `[memory] archivist = false`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        agent: Agent,
        stores: SessionStores,
        channels: Channels,
        deliverer: Arc<Deliverer>,
        agent_cfg: AgentConfig,
        limits: LimitsConfig,
        archivist: Option<Arc<crate::memory::Archivist>>,
        cluster: Arc<Cluster>,
    ) -> Self {
        Self { agent, stores, channels, deliverer, agent_cfg, limits, archivist, cluster, profile_max_tokens: 0 }
    }

    /// New private sessions carry the person's pinned profile within `max_tokens`.
    pub fn with_profile(mut self, max_tokens: usize) -> Self {
        self.profile_max_tokens = max_tokens;
        self
    }
}

/// With several replicas: the lease a session actor runs under and the fencing token its
/// commits carry.
pub(super) struct Claim {
    pub(super) lease: Lease,
    pub(super) fence: crate::store::Fence,
}

/// The lease name of session `key`.
pub(super) fn lease_name(key: &str) -> String {
    format!("session:{key}")
}

pub(super) struct Running {
    pub(super) turn_id: String,
    pub(super) stop: CancellationToken,
}

pub(super) struct Handle {
    /// Boxed: the mailbox allocates a block of slots up front, so an idle session costs a few
    /// pointers rather than a block of whole jobs.
    pub(super) tx: mpsc::Sender<Box<Job>>,
    pub(super) running: Arc<Mutex<Option<Running>>>,
}

pub(super) struct Shared {
    pub(super) deps: SessionDeps,
    pub(super) actors: Mutex<HashMap<String, Handle>>,
    pub(super) tracker: TaskTracker,
    /// No new turns start after this fires; queued jobs go back to the inbox.
    pub(super) shutdown: CancellationToken,
    /// Running turns stop at once, committing nothing (past the grace period).
    pub(super) abort: CancellationToken,
    /// Held while a session is placed here (lease taken, actor started) or given up, so the
    /// two never interleave for one key.
    pub(super) placing: tokio::sync::Mutex<()>,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    pub(super) fn new(deps: SessionDeps) -> Self {
        Self {
            deps,
            actors: Mutex::new(HashMap::new()),
            tracker: TaskTracker::new(),
            shutdown: CancellationToken::new(),
            abort: CancellationToken::new(),
            placing: tokio::sync::Mutex::new(()),
        }
    }

    /// Called by an idle actor: removes it if nothing is waiting in its mailbox. Sends happen
    /// under the same lock, so no job can slip in between the check and the removal.
    pub(super) fn retire_if_idle(&self, key: &str, rx: &mpsc::Receiver<Box<Job>>) -> bool {
        let mut actors = lock(&self.actors);
        if !rx.is_empty() {
            return false;
        }
        actors.remove(key);
        // A burst's table would otherwise keep its peak size (20,000 sessions: megabytes) forever.
        if actors.capacity() > 64 && actors.len() < actors.capacity() / 4 {
            let keep = actors.len() * 2;
            actors.shrink_to(keep);
        }
        super::trim::retired(actors.len(), &self.tracker);
        true
    }

    pub(super) fn forget(&self, key: &str) {
        lock(&self.actors).remove(key);
    }
}
