//! What the adapter remembers between events, all in memory and bounded: who Butler is on
//! Discord (from Ready), which channels are threads, which threads Butler takes part in, when
//! each message was last written (edits are spaced at least a second apart), and which clicks
//! are still being acknowledged.
//!
//! Nothing here survives a restart. After one, threads are learned again from GUILD_CREATE and
//! THREAD_CREATE, but participation is not: in a thread Butler answers again once it is
//! mentioned or replied to there (and from its answer on, to every message). Nothing here may
//! grow without bound.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// Ids kept per set before the oldest are forgotten.
const REMEMBERED: usize = 20_000;

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Butler's own identity on Discord, from the gateway's Ready.
#[derive(Clone, Debug, Default)]
pub struct Me {
    pub user_id: u64,
    pub name: String,
}

/// A set that forgets its oldest entries past a size.
#[derive(Default)]
pub(crate) struct Bounded {
    set: HashSet<u64>,
    order: VecDeque<u64>,
}

impl Bounded {
    pub fn insert(&mut self, id: u64) {
        if !self.set.insert(id) {
            return;
        }
        self.order.push_back(id);
        while self.order.len() > REMEMBERED {
            if let Some(old) = self.order.pop_front() {
                self.set.remove(&old);
            }
        }
    }

    pub fn contains(&self, id: u64) -> bool {
        self.set.contains(&id)
    }
}

/// Threads, and where Butler has spoken.
#[derive(Default)]
pub struct Memory {
    /// Channels known to be threads (from THREAD_CREATE, GUILD_CREATE, THREAD_LIST_SYNC, or a
    /// MESSAGE_CREATE's `channel_type`).
    threads: Bounded,
    /// Channels Butler has posted in, and Butler's own message ids (a thread started from one of
    /// Butler's messages has that message's id).
    spoken: Bounded,
}

impl Memory {
    pub fn thread(&mut self, id: u64) {
        self.threads.insert(id);
    }

    pub fn spoke(&mut self, id: u64) {
        self.spoken.insert(id);
    }

    /// A thread Butler is part of: it posted there, or the thread grew out of its message.
    pub fn in_thread(&self, channel: u64) -> bool {
        self.threads.contains(channel) && self.spoken.contains(channel)
    }
}

/// Spaces writes to one message at least `every` apart (Discord allows about five edits per
/// five seconds per channel; streaming stays well under it, final edit included).
pub(crate) struct Pacer {
    every: Duration,
    last: Mutex<HashMap<String, Instant>>,
}

impl Pacer {
    pub fn new(every: Duration) -> Self {
        Self { every, last: Mutex::new(HashMap::new()) }
    }

    /// Waits until message `id` may be written again.
    pub async fn wait(&self, id: &str) {
        let wait = lock(&self.last).get(id).map(|t| self.every.saturating_sub(t.elapsed()));
        if let Some(wait) = wait.filter(|w| !w.is_zero()) {
            tokio::time::sleep(wait).await;
        }
    }

    /// Records that message `id` was just written.
    pub fn mark(&self, id: &str) {
        let mut last = lock(&self.last);
        last.insert(id.to_string(), Instant::now());
        if last.len() > 4096 {
            let keep = self.every * 2;
            last.retain(|_, t| t.elapsed() < keep);
        }
    }
}

/// Clicks whose acknowledgement is still on its way, by interaction token: a private answer to
/// a click must not reach Discord before the click's acknowledgement does.
#[derive(Default)]
pub(crate) struct Acks {
    pending: Mutex<HashMap<String, watch::Receiver<bool>>>,
}

impl Acks {
    /// Registers a click being acknowledged; the answer waits until `done` is called.
    pub fn start(&self, token: &str) -> watch::Sender<bool> {
        let (tx, rx) = watch::channel(false);
        let mut pending = lock(&self.pending);
        if pending.len() > 1024 {
            // Entries whose acknowledger is gone (it always calls `done`, unless it panicked).
            pending.retain(|_, rx| rx.has_changed().is_ok());
        }
        pending.insert(token.to_string(), rx);
        tx
    }

    pub fn done(&self, token: &str, tx: watch::Sender<bool>) {
        let _ = tx.send(true);
        lock(&self.pending).remove(token);
    }

    /// Waits (at most `within`) for the acknowledgement of the click with `token`, if one is
    /// on its way.
    pub async fn settled(&self, token: &str, within: Duration) {
        let rx = lock(&self.pending).get(token).cloned();
        if let Some(mut rx) = rx {
            let _ = tokio::time::timeout(within, rx.wait_for(|done| *done)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_is_bounded_and_threads_need_both_facts() {
        let mut m = Memory::default();
        m.thread(7);
        assert!(!m.in_thread(7), "a thread Butler never spoke in");
        m.spoke(8);
        assert!(!m.in_thread(8), "a channel that is not a thread");
        m.spoke(7);
        assert!(m.in_thread(7));
        let mut b = Bounded::default();
        for i in 0..(REMEMBERED as u64 + 10) {
            b.insert(i);
        }
        assert!(!b.contains(0) && b.contains(REMEMBERED as u64 + 9));
        assert_eq!(b.order.len(), REMEMBERED);
    }

    #[tokio::test]
    async fn pacer_spaces_writes_to_one_message() {
        let p = Pacer::new(Duration::from_millis(200));
        p.mark("m");
        let t = Instant::now();
        p.wait("m").await;
        assert!(t.elapsed() >= Duration::from_millis(190));
        let t = Instant::now();
        p.wait("other").await;
        assert!(t.elapsed() < Duration::from_millis(50));
    }
}
