//! Sessions: one actor per live session, a bounded mailbox, one turn at a time.
//!
//! Messages for a session queue in its mailbox and are answered in order; `/stop` reaches the
//! running turn out of band; an idle actor is dropped and its session rehydrated from the store
//! on the next message. A session never sees another session's transcript: the session key
//! decides, and it always includes the conversation (and, for DMs, the person).
//! Nothing here may block on a person or hold a lock across an await.

mod actor;
mod key;

pub use key::session_key;

use crate::agent::Agent;
use crate::config::{AgentConfig, LimitsConfig};
use crate::metrics::METRICS;
use crate::outbox::{Channels, Deliverer};
use crate::store::UserRow;
use butler_channel::InboundEvent;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Work for a session, in mailbox order.
#[derive(Clone, Debug)]
pub struct Job {
    pub event: InboundEvent,
    pub user: UserRow,
    pub kind: JobKind,
    /// How many times the inbox handed this event out (1 the first time).
    pub attempt: i32,
    /// A heartbeat job: the reply is delivered only if the model found something worth saying
    /// (it answers exactly [`crate::agent::QUIET`] otherwise); nothing streams meanwhile.
    pub quiet: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobKind {
    /// An agent turn for a message.
    Turn,
    /// `/new`: close the session; the next message opens a fresh one.
    Reset,
    /// A person answered an approval the session's turn waits for: resume it.
    Resume { approval: Box<crate::store::ApprovalRow>, pending_left: usize },
}

/// The mailbox is full: leave the event in the inbox and offer it again later.
#[derive(Debug, thiserror::Error)]
#[error("session {0} is busy; its mailbox is full")]
pub struct Busy(pub String);

/// What a session actor needs.
#[derive(Clone)]
pub struct SessionDeps {
    pub agent: Agent,
    pub channels: Channels,
    pub deliverer: Arc<Deliverer>,
    pub agent_cfg: AgentConfig,
    pub limits: LimitsConfig,
    /// Distils durable facts from finished exchanges (off when `[memory] archivist = false`).
    pub archivist: Option<Arc<crate::memory::Archivist>>,
}

struct Running {
    turn_id: String,
    stop: CancellationToken,
}

struct Handle {
    /// Boxed: the mailbox allocates a block of slots up front, so an idle session costs a few
    /// pointers rather than a block of whole jobs.
    tx: mpsc::Sender<Box<Job>>,
    running: Arc<Mutex<Option<Running>>>,
}

struct Inner {
    deps: SessionDeps,
    actors: Mutex<HashMap<String, Handle>>,
    tracker: TaskTracker,
    /// No new turns start after this fires; queued jobs go back to the inbox.
    shutdown: CancellationToken,
    /// Running turns stop at once, committing nothing (past the grace period).
    abort: CancellationToken,
}

#[derive(Clone)]
pub struct Sessions {
    inner: Arc<Inner>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Sessions {
    pub fn new(deps: SessionDeps) -> Self {
        Self {
            inner: Arc::new(Inner {
                deps,
                actors: Mutex::new(HashMap::new()),
                tracker: TaskTracker::new(),
                shutdown: CancellationToken::new(),
                abort: CancellationToken::new(),
            }),
        }
    }

    /// Queues a job for the session `key`, starting its actor if it is not live.
    pub fn submit(&self, key: &str, job: Job) -> Result<(), Busy> {
        if self.inner.shutdown.is_cancelled() {
            return Err(Busy(key.to_string()));
        }
        let mut actors = lock(&self.inner.actors);
        let handle = actors.entry(key.to_string()).or_insert_with(|| self.spawn_actor(key));
        handle.tx.try_send(Box::new(job)).map_err(|_| Busy(key.to_string()))
    }

    /// Asks the running turn of `key` to stop (only if it is `turn_id`, when given).
    pub fn stop(&self, key: &str, turn_id: Option<&str>) -> bool {
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

    fn spawn_actor(&self, key: &str) -> Handle {
        let (tx, rx) = mpsc::channel(self.inner.deps.limits.session_mailbox.max(1));
        let running = Arc::new(Mutex::new(None));
        let actor = actor::Actor {
            key: key.to_string(),
            sessions: self.clone(),
            running: running.clone(),
            state: None,
            uncommitted: None,
        };
        METRICS.sessions_live.add(1);
        self.inner.tracker.spawn(actor.run(rx));
        Handle { tx, running }
    }

    /// Called by an idle actor: removes it if nothing is waiting in its mailbox. Sends happen
    /// under the same lock, so no job can slip in between the check and the removal.
    fn retire_if_idle(&self, key: &str, rx: &mpsc::Receiver<Box<Job>>) -> bool {
        let mut actors = lock(&self.inner.actors);
        if !rx.is_empty() {
            return false;
        }
        actors.remove(key);
        true
    }

    fn forget(&self, key: &str) {
        lock(&self.inner.actors).remove(key);
    }
}
