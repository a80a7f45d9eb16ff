//! The children running in this process: their stop handles (for `/cancel` and shutdown), the
//! tracked tasks of background children, each user's count of background tasks running here
//! (taken atomically, so calls at the same time never pass `max_background` together) and the
//! live chains ([`Chains`]) and each user's spend today not yet in the store ([`Days`]).
//!
//! Shared by the agent (which registers children and spawns background ones) and triage (which
//! cancels them). It must never run a child itself, and every task it spawns is tracked and
//! stops with the shutdown token.

use super::chains::Chains;
use super::day::Days;
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// The children of this process, by task id.
pub struct Running {
    children: Mutex<HashMap<String, CancellationToken>>,
    /// Background tasks running here, by user id.
    background: Mutex<HashMap<String, usize>>,
    chains: Chains,
    days: Arc<Days>,
    tracker: TaskTracker,
    shutdown: CancellationToken,
    /// This replica's worker id, recorded on the children it runs.
    worker: std::sync::OnceLock<String>,
}

/// One of a user's background places, given back when dropped (the task ended, however).
pub struct BackgroundSlot {
    running: Arc<Running>,
    user_id: String,
}

impl Drop for BackgroundSlot {
    fn drop(&mut self) {
        let mut counts = lock(&self.running.background);
        if let Some(n) = counts.get_mut(&self.user_id) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                counts.remove(&self.user_id);
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Removes its child from the registry when dropped (the child ended, however).
pub struct Registered {
    running: Arc<Running>,
    id: String,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.running.lock().remove(&self.id);
    }
}

impl Running {
    /// An empty registry whose background tasks stop when `shutdown` fires.
    pub fn new(shutdown: CancellationToken) -> Arc<Self> {
        Arc::new(Self {
            children: Mutex::new(HashMap::new()),
            background: Mutex::new(HashMap::new()),
            chains: Chains::default(),
            days: Arc::new(Days::default()),
            tracker: TaskTracker::new(),
            shutdown,
            worker: std::sync::OnceLock::new(),
        })
    }

    /// These children run on replica `worker` (set once, at start).
    pub fn on_worker(self: Arc<Self>, worker: &str) -> Arc<Self> {
        let _ = self.worker.set(worker.to_string());
        self
    }

    /// The replica the children run on ("" when not told).
    pub fn worker(&self) -> &str {
        self.worker.get().map_or("", String::as_str)
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, CancellationToken>> {
        lock(&self.children)
    }

    /// Takes one of user `user_id`'s `max` background places; `None` when all are taken.
    pub fn background_slot(self: &Arc<Self>, user_id: &str, max: usize) -> Option<BackgroundSlot> {
        let mut counts = lock(&self.background);
        let n = counts.entry(user_id.to_string()).or_default();
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(BackgroundSlot { running: self.clone(), user_id: user_id.to_string() })
    }

    /// The live chains (the totals of messages whose background work goes on).
    pub fn chains(&self) -> &Chains {
        &self.chains
    }

    /// Each user's spend today not yet in the store (`[limits] max_usd_per_day`).
    pub fn days(&self) -> &Arc<Days> {
        &self.days
    }

    /// Registers child `id`, stopped by `cancel`; it stays listed until the guard is dropped.
    pub fn register(self: &Arc<Self>, id: &str, cancel: CancellationToken) -> Registered {
        self.lock().insert(id.to_string(), cancel);
        Registered { running: self.clone(), id: id.to_string() }
    }

    /// Stops child `id`; `false` when it is not running in this process.
    pub fn cancel(&self, id: &str) -> bool {
        match self.lock().get(id) {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    /// Fires at shutdown: background children stop and leave their state to the store.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }

    /// Runs a background child as a tracked task.
    pub fn spawn<F>(&self, fut: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.tracker.spawn(fut);
    }

    /// Waits for every background task to end (after the shutdown token fired).
    pub async fn close(&self) {
        self.shutdown.cancel();
        self.tracker.close();
        self.tracker.wait().await;
    }
}
