//! The children running in this process: their stop handles (for `/cancel` and shutdown) and
//! the tracked tasks of background children.
//!
//! Shared by the agent (which registers children and spawns background ones) and triage (which
//! cancels them). It must never run a child itself, and every task it spawns is tracked and
//! stops with the shutdown token.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// The children of this process, by task id.
pub struct Running {
    children: Mutex<HashMap<String, CancellationToken>>,
    tracker: TaskTracker,
    shutdown: CancellationToken,
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
        Arc::new(Self { children: Mutex::new(HashMap::new()), tracker: TaskTracker::new(), shutdown })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, CancellationToken>> {
        self.children.lock().unwrap_or_else(|p| p.into_inner())
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
