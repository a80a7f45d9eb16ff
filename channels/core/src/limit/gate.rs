//! The rate gate: where every limit that must hold across Butler's replicas is kept. A
//! [`RateGate`] answers "one token of key K at rate R, or how long to wait", "nobody gets K
//! until T" (a platform's `Retry-After`), and counts events in a window (wrong codes). The
//! in-process [`LocalGate`](super::LocalGate) is the default; the root crate provides one over
//! Redis when several replicas share the work, and hands it to the channel crates through their
//! settings as a [`Gate`].
//!
//! [`Gate`] is the handle callers hold: with the local gate it calls it directly (no boxed
//! future, no allocation on the hot path); with a shared one it goes through the trait. A gate
//! must never block a caller for long: when its store is away it answers from memory.

use super::{LocalGate, Rate};
use std::sync::Arc;
use std::time::Duration;

/// Limits shared by everyone who holds the same gate (all replicas, with Redis).
///
/// Keys are plain text chosen by the caller (`telegram:chat:42`, `slack:method:chat.update`);
/// the implementation adds its own prefix. Nothing kept under a key outlives its use: a key
/// whose tokens are back, whose hold is over and whose window is closed is forgotten.
#[async_trait::async_trait]
pub trait RateGate: Send + Sync {
    /// Reserves the next token of `key` at `rate`: `Ok(wait)`, the token is the caller's from
    /// `wait` on (zero: now); `Err(wait)`, nothing taken, when that is more than `max_wait` away.
    /// A hold on `key` counts: no token is given out before it ends.
    async fn reserve(&self, key: &str, rate: Rate, max_wait: Duration) -> Result<Duration, Duration>;

    /// Nobody gets `key` for `wait` from now (a longer hold already there stays).
    async fn hold(&self, key: &str, wait: Duration);

    /// How long the hold on `key` still lasts, if there is one.
    async fn held(&self, key: &str) -> Option<Duration>;

    /// Counts one event under `key` and returns the count of its window: the window opens with
    /// the first event and closes `window` later, when the count starts again at 1.
    async fn count(&self, key: &str, window: Duration) -> u64;

    /// Forgets `key`: its tokens, hold and count.
    async fn clear(&self, key: &str);
}

#[derive(Clone)]
enum Inner {
    Local(Arc<LocalGate>),
    Shared(Arc<dyn RateGate>),
}

/// The gate a component was given: this process's own, or one shared by the replicas.
#[derive(Clone)]
pub struct Gate(Inner);

impl Default for Gate {
    fn default() -> Self {
        Self::local()
    }
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.is_shared() { "Gate(shared)" } else { "Gate(local)" })
    }
}

impl Gate {
    /// A gate of this process alone (what a single Butler uses).
    pub fn local() -> Self {
        Self(Inner::Local(Arc::new(LocalGate::default())))
    }

    /// A gate shared with other replicas.
    pub fn shared(gate: Arc<dyn RateGate>) -> Self {
        Self(Inner::Shared(gate))
    }

    /// Whether other processes see the same limits.
    pub fn is_shared(&self) -> bool {
        matches!(self.0, Inner::Shared(_))
    }

    /// See [`RateGate::reserve`].
    pub async fn reserve(&self, key: &str, rate: Rate, max_wait: Duration) -> Result<Duration, Duration> {
        match &self.0 {
            Inner::Local(l) => l.reserve_now(key, rate, max_wait),
            Inner::Shared(s) => s.reserve(key, rate, max_wait).await,
        }
    }

    /// One token of `key` now, or the wait for one (nothing taken then).
    pub async fn take(&self, key: &str, rate: Rate) -> Result<(), Duration> {
        self.reserve(key, rate, Duration::ZERO).await.map(|_| ())
    }

    /// See [`RateGate::hold`].
    pub async fn hold(&self, key: &str, wait: Duration) {
        match &self.0 {
            Inner::Local(l) => l.hold_now(key, wait),
            Inner::Shared(s) => s.hold(key, wait).await,
        }
    }

    /// See [`RateGate::held`].
    pub async fn held(&self, key: &str) -> Option<Duration> {
        match &self.0 {
            Inner::Local(l) => l.held_now(key),
            Inner::Shared(s) => s.held(key).await,
        }
    }

    /// See [`RateGate::count`].
    pub async fn count(&self, key: &str, window: Duration) -> u64 {
        match &self.0 {
            Inner::Local(l) => l.count_now(key, window),
            Inner::Shared(s) => s.count(key, window).await,
        }
    }

    /// See [`RateGate::clear`].
    pub async fn clear(&self, key: &str) {
        match &self.0 {
            Inner::Local(l) => l.clear(key),
            Inner::Shared(s) => s.clear(key).await,
        }
    }
}
