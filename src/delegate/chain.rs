//! The totals of one originating message (a "chain"): the model calls, helpers and dollars its
//! own turn, every helper at every depth, its background tasks and the turns their reports
//! start have used together, checked against `[agent.delegation] max_model_calls_per_message`,
//! `max_helpers_per_message` and a dollar cap, and the chain's halt (`/stop`, `/cancel`), which
//! ends its background part: background tasks, their helpers and the turns their reports start
//! (the message's own turn is stopped by `/stop` itself, and `/cancel` leaves it alone).
//!
//! Every check and its count happen under one lock, so calls that run at the same time can
//! never pass a limit together; a model call reserves its worst-case cost before it starts
//! and settles the real cost after, so dollars end within one call of the cap. It must never
//! call a model, touch the store, or wait for anything but other calls of its own chain.

use crate::config::DelegationConfig;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// What a chain has used so far. It travels with a background task's report, so the turn the
/// report starts (later, perhaps after a restart or on another replica) counts on from there.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    pub model_calls: u32,
    pub helpers: u32,
    pub usd: f64,
}

/// The count limits of a chain (`[agent.delegation]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caps {
    pub model_calls: u32,
    pub helpers: u32,
}

impl Caps {
    pub fn of(cfg: &DelegationConfig) -> Self {
        Self { model_calls: cfg.max_model_calls_per_message, helpers: cfg.max_helpers_per_message }
    }
}

/// Why a chain refuses a model call or a helper.
#[derive(Clone, Debug, PartialEq)]
pub enum Refusal {
    /// `/stop` or `/cancel` ended the chain (the reason names which).
    Halted(String),
    /// `max_model_calls_per_message` calls were made.
    ModelCalls(u32),
    /// `max_helpers_per_message` helpers were started.
    Helpers(u32),
    /// The dollar cap is reached: the chain's spend so far.
    Usd(f64),
}

impl Refusal {
    /// The sentence a person (or a parent model) reads; the dollar refusal's text is the
    /// caller's (it knows which `[limits]` key it came from).
    pub fn message(&self) -> String {
        match self {
            Self::Halted(by) => format!("stopped by {by}"),
            Self::ModelCalls(max) => format!(
                "⚠️ I stopped: this request has made {max} model calls, its helpers and background tasks included, \
                 which is the limit per message ([agent.delegation] max_model_calls_per_message)."
            ),
            Self::Helpers(max) => format!(
                "not started: this request has started {max} helpers already, which is the limit per message \
                 ([agent.delegation] max_helpers_per_message); finish with what you have"
            ),
            Self::Usd(spent) => format!("⚠️ I stopped: this request has cost ${spent:.4}, which reaches its limit."),
        }
    }
}

/// Dollars are counted in micro-dollars so that reserving and releasing always add back to
/// exactly zero.
fn micros(usd: f64) -> u64 {
    if usd.is_finite() && usd > 0.0 {
        (usd * 1e6).ceil() as u64
    } else {
        0
    }
}

#[derive(Debug, Default)]
struct State {
    model_calls: u32,
    helpers: u32,
    spent: u64,
    /// The worst-case cost of the calls running now.
    reserved: u64,
    halted: Option<String>,
}

/// One originating message's totals, shared (behind an `Arc`) by every turn of its tree.
#[derive(Debug)]
pub struct Chain {
    origin: String,
    session_key: String,
    caps: Caps,
    state: Mutex<State>,
    /// Woken when a reservation ends (a waiting call may fit now) or the chain halts.
    settled: Notify,
    halt: CancellationToken,
}

/// A model call admitted by its chain. `settle` records its real cost; dropping it unsettled
/// (a stop, an error before any usage) only releases the reservation.
#[derive(Debug)]
pub struct Ticket {
    chain: Arc<Chain>,
    reserved: u64,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.chain.release(self.reserved, 0);
    }
}

impl Ticket {
    /// The call cost `usd`: it is spent, and its reservation ends.
    pub fn settle(mut self, usd: f64) {
        let reserved = std::mem::take(&mut self.reserved);
        self.chain.release(reserved, micros(usd));
    }
}

/// What a call may do now.
enum Decision {
    Go,
    Wait,
    No(Refusal),
}

impl Chain {
    /// The chain of message `origin` in session `session_key`, having used `from` already
    /// (zero for a new message; a report's totals for the turn it starts).
    pub fn new(origin: &str, session_key: &str, caps: Caps, from: Totals) -> Arc<Self> {
        let state =
            State { model_calls: from.model_calls, helpers: from.helpers, spent: micros(from.usd), ..State::default() };
        Arc::new(Self {
            origin: origin.to_string(),
            session_key: session_key.to_string(),
            caps,
            state: Mutex::new(state),
            settled: Notify::new(),
            halt: CancellationToken::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The event id of the message that started the chain.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The session the chain's turns run in (`/stop` there halts it).
    pub fn session_key(&self) -> &str {
        &self.session_key
    }

    pub fn totals(&self) -> Totals {
        let s = self.lock();
        Totals { model_calls: s.model_calls, helpers: s.helpers, usd: s.spent as f64 / 1e6 }
    }

    /// Dollars spent so far (settled calls only).
    pub fn spent_usd(&self) -> f64 {
        self.lock().spent as f64 / 1e6
    }

    fn decide(&self, s: &State, usd_cap: Option<f64>, halts: bool) -> Decision {
        if let Some(by) = s.halted.as_ref().filter(|_| halts) {
            return Decision::No(Refusal::Halted(by.clone()));
        }
        if s.model_calls >= self.caps.model_calls {
            return Decision::No(Refusal::ModelCalls(self.caps.model_calls));
        }
        if let Some(cap) = usd_cap {
            let cap = micros(cap);
            if s.spent >= cap {
                return Decision::No(Refusal::Usd(s.spent as f64 / 1e6));
            }
            if s.reserved > 0 && s.spent + s.reserved >= cap {
                return Decision::Wait;
            }
        }
        Decision::Go
    }

    /// Whether a model call could start now (nothing is counted): for checks before the
    /// request is built. `halts`: the caller is of the chain's background part.
    pub fn check(&self, usd_cap: Option<f64>, halts: bool) -> Result<(), Refusal> {
        match self.decide(&self.lock(), usd_cap, halts) {
            Decision::No(r) => Err(r),
            Decision::Go | Decision::Wait => Ok(()),
        }
    }

    /// Admits one model call whose worst case costs `estimate_usd`, counting it; with a dollar
    /// cap (of the chain's spend), waits while the calls running now might reach it, and
    /// refuses once the spend has. Cancel-safe: dropped while waiting, it counted nothing.
    /// `halts`: the caller is of the chain's background part (a halt refuses it).
    pub async fn admit(
        self: &Arc<Self>,
        estimate_usd: f64,
        usd_cap: Option<f64>,
        halts: bool,
    ) -> Result<Ticket, Refusal> {
        loop {
            let notified = self.settled.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut s = self.lock();
                match self.decide(&s, usd_cap, halts) {
                    Decision::No(r) => return Err(r),
                    Decision::Go => {
                        let reserved = if usd_cap.is_some() { micros(estimate_usd).max(1) } else { 0 };
                        s.model_calls += 1;
                        s.reserved += reserved;
                        return Ok(Ticket { chain: self.clone(), reserved });
                    }
                    Decision::Wait => {}
                }
            }
            notified.await;
        }
    }

    fn release(&self, reserved: u64, spent: u64) {
        {
            let mut s = self.lock();
            s.reserved = s.reserved.saturating_sub(reserved);
            s.spent += spent;
        }
        if reserved > 0 {
            self.settled.notify_waiters();
        }
    }

    /// Counts one more helper, or says why it may not start. `halts`: the helper would be of
    /// the chain's background part (a background task, or started in that part).
    pub fn start_helper(&self, halts: bool) -> Result<(), Refusal> {
        let mut s = self.lock();
        if let Some(by) = s.halted.as_ref().filter(|_| halts) {
            return Err(Refusal::Halted(by.clone()));
        }
        if s.helpers >= self.caps.helpers {
            return Err(Refusal::Helpers(self.caps.helpers));
        }
        s.helpers += 1;
        Ok(())
    }

    /// Ends the chain's background part: no more model calls or helpers there, no background
    /// task starts, and the running ones stop (their stop tokens are children of
    /// [`Chain::halt_token`]). `false` if it was halted already.
    pub fn halt(&self, by: &str) -> bool {
        {
            let mut s = self.lock();
            if s.halted.is_some() {
                return false;
            }
            s.halted = Some(by.to_string());
        }
        self.halt.cancel();
        self.settled.notify_waiters();
        tracing::info!(origin = %self.origin, by, "chain halted");
        true
    }

    /// What halted the chain (`/stop`, `/cancel`), if anything did.
    pub fn halted(&self) -> Option<String> {
        self.lock().halted.clone()
    }

    /// Cancelled when the chain halts.
    pub fn halt_token(&self) -> CancellationToken {
        self.halt.clone()
    }
}

#[cfg(test)]
mod tests;
