//! The chains that outlive their message's turn in this process: those with background tasks
//! running or reports waiting in the inbox, by the event id of their message. The turn a
//! report starts takes its chain up here; `/stop` halts every chain of its session, and
//! `/tasks` and `/cancel` see a chain as one entry.
//!
//! Memory only (a report also carries its chain's totals, see `Totals`), swept as it is used:
//! an entry goes once nothing holds its chain and no report of it waits, or when a report has
//! waited a day. It must never halt a chain of another session, and never run anything.

use super::chain::Chain;
use crate::clock::now_ms;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

/// How long an entry is kept for a report nobody took up (a dead letter, an access change).
const REPORT_WAIT_MS: i64 = 86_400_000;

struct Entry {
    chain: Arc<Chain>,
    /// Tasks whose report is in the inbox, not yet taken up by a turn.
    pending: HashSet<String>,
    touched_ms: i64,
}

/// The registry of live chains (part of [`Running`](super::Running)).
#[derive(Default)]
pub struct Chains {
    map: Mutex<HashMap<String, Entry>>,
}

impl Chains {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        let now = now_ms();
        // Nothing but this map holds the chain: no turn, helper or call of it runs here.
        map.retain(|_, e| {
            Arc::strong_count(&e.chain) > 1 || (!e.pending.is_empty() && now - e.touched_ms < REPORT_WAIT_MS)
        });
        map
    }

    fn entry<'m>(map: &'m mut HashMap<String, Entry>, chain: &Arc<Chain>) -> &'m mut Entry {
        let e = map.entry(chain.origin().to_string()).or_insert_with(|| Entry {
            chain: chain.clone(),
            pending: HashSet::new(),
            touched_ms: 0,
        });
        e.touched_ms = now_ms();
        e
    }

    /// Keeps `chain` findable while anything of it runs (it starts a background task).
    pub fn keep(&self, chain: &Arc<Chain>) {
        Self::entry(&mut self.lock(), chain);
    }

    /// Task `task`'s report is about to enter the inbox: the chain stays until a turn takes
    /// the report up.
    pub fn report_pending(&self, chain: &Arc<Chain>, task: &str) {
        Self::entry(&mut self.lock(), chain).pending.insert(task.to_string());
    }

    /// The chain of message `origin`, for the turn that task `task`'s report starts (a retry of
    /// that turn finds it again).
    pub fn adopt(&self, origin: &str, task: &str) -> Option<Arc<Chain>> {
        let mut map = self.lock();
        let e = map.get_mut(origin)?;
        e.pending.remove(task);
        e.touched_ms = now_ms();
        Some(e.chain.clone())
    }

    /// The live chain of message `origin`, if any.
    pub fn get(&self, origin: &str) -> Option<Arc<Chain>> {
        self.lock().get(origin).map(|e| e.chain.clone())
    }

    /// Halts every live chain of session `key` (`by`: `/stop`); how many were still going.
    pub fn halt_session(&self, key: &str, by: &str) -> usize {
        let chains: Vec<Arc<Chain>> =
            self.lock().values().filter(|e| e.chain.session_key() == key).map(|e| e.chain.clone()).collect();
        chains.iter().filter(|c| c.halt(by)).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delegate::chain::{Caps, Totals};

    fn chain(origin: &str, key: &str) -> Arc<Chain> {
        Chain::new(origin, key, Caps { model_calls: 10, helpers: 10 }, Totals::default())
    }

    #[test]
    fn an_entry_lives_while_its_chain_runs_or_a_report_waits() {
        let chains = Chains::default();
        let a = chain("m1", "k1");
        chains.keep(&a);
        assert!(chains.get("m1").is_some(), "held by its turn");
        chains.report_pending(&a, "t-1");
        drop(a);
        // Nothing runs, but a report waits: the turn it starts takes the chain up.
        let taken = chains.adopt("m1", "t-1").expect("kept for its report");
        assert!(chains.adopt("m1", "t-1").is_some(), "a retry of that turn finds it too");
        drop(taken);
        assert!(chains.get("m1").is_none(), "nothing holds it and no report waits");
        assert!(chains.adopt("m1", "t-2").is_none());
    }

    #[test]
    fn stop_halts_the_chains_of_its_session_only() {
        let chains = Chains::default();
        let (a, b, c) = (chain("m1", "k1"), chain("m2", "k1"), chain("m3", "k2"));
        for x in [&a, &b, &c] {
            chains.keep(x);
        }
        b.halt("/cancel");
        // (session, halted now): m2 was halted already.
        let cases = [("k1", 1), ("k1", 0), ("k3", 0)];
        for (key, want) in cases {
            assert_eq!(chains.halt_session(key, "/stop"), want, "{key}");
        }
        assert_eq!((a.halted().as_deref(), b.halted().as_deref(), c.halted()), (Some("/stop"), Some("/cancel"), None));
    }
}
