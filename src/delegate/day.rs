//! Each user's spend today that the store does not show yet, for `[limits] max_usd_per_day`:
//! the worst case of the model calls running now in this process (reserved) and the cost of
//! calls that ended but whose turn is not committed yet (settled). With the store's figure,
//! read fresh before each call, that is the user's whole day, so calls of many turns, helpers
//! and background tasks at once can never pass the limit together: the day's spend ends within
//! one call's cost of it.
//!
//! Arithmetic under one lock: it must never read the store or call a model itself (the caller
//! reads the store's figure and brings it), and it never waits for anything but a change here.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::futures::Notified;
use tokio::sync::Notify;

/// Dollars in micro-dollars, so that reserving and releasing add back to exactly zero.
fn micros(usd: f64) -> u64 {
    if usd.is_finite() && usd > 0.0 {
        (usd * 1e6).ceil() as u64
    } else {
        0
    }
}

#[derive(Debug, Default)]
struct Held {
    reserved: u64,
    settled: u64,
    /// Bumped when a commit moves spend from here to the store: a store figure read before
    /// the bump may miss what left here.
    epoch: u64,
}

/// What a model call may do now under the day's limit.
#[derive(Debug)]
pub enum DayGate {
    /// Go: the ticket holds the call's reservation.
    Go(DayTicket),
    /// Calls running now might reach the limit: wait for a change, then read the store again.
    Wait,
    /// A commit happened since the store was read: read it again.
    Retry,
    /// The day's limit is reached: the user's spend today.
    No(f64),
}

/// The per-user ledger of this process.
#[derive(Debug, Default)]
pub struct Days {
    users: Mutex<HashMap<String, Held>>,
    changed: Notify,
}

/// One admitted call's reservation; `settle` turns it into its real cost, dropping it unsettled
/// (an error before any usage, a stop) only releases it.
#[derive(Debug)]
pub struct DayTicket {
    days: Arc<Days>,
    user: String,
    reserved: u64,
}

impl Drop for DayTicket {
    fn drop(&mut self) {
        self.days.release(&self.user, std::mem::take(&mut self.reserved), 0);
    }
}

impl DayTicket {
    /// The call cost `usd`: it counts as the user's until their turn is committed.
    pub fn settle(mut self, usd: f64) {
        let reserved = std::mem::take(&mut self.reserved);
        self.days.release(&self.user, reserved, micros(usd));
    }
}

impl Days {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Held>> {
        self.users.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Read before the store's figure, and given back to [`Days::try_admit`] with it.
    pub fn epoch(&self, user: &str) -> u64 {
        self.lock().get(user).map_or(0, |h| h.epoch)
    }

    /// Completes when anything changes here (a call settles or ends, a turn commits).
    pub fn changed(&self) -> Notified<'_> {
        self.changed.notified()
    }

    /// Admits a call of `user` whose worst case costs `estimate_usd` under the day's `cap_usd`,
    /// given `recorded_usd`, the user's spend today as the store showed it after `epoch` was
    /// read.
    pub fn try_admit(
        self: &Arc<Self>,
        user: &str,
        epoch: u64,
        recorded_usd: f64,
        cap_usd: f64,
        estimate_usd: f64,
    ) -> DayGate {
        // Entries stay (one small one per user who spent today here): an epoch must never go
        // back, or a stale read could pass as fresh.
        let mut users = self.lock();
        let held = users.entry(user.to_string()).or_default();
        if held.epoch != epoch {
            return DayGate::Retry;
        }
        let cap = micros(cap_usd);
        let spent = micros(recorded_usd) + held.settled;
        if spent >= cap {
            return DayGate::No(spent as f64 / 1e6);
        }
        if held.reserved > 0 && spent + held.reserved >= cap {
            return DayGate::Wait;
        }
        let reserved = micros(estimate_usd).max(1);
        held.reserved += reserved;
        DayGate::Go(DayTicket { days: self.clone(), user: user.to_string(), reserved })
    }

    fn release(&self, user: &str, reserved: u64, settled: u64) {
        if reserved == 0 && settled == 0 {
            return;
        }
        if let Some(held) = self.lock().get_mut(user) {
            held.reserved = held.reserved.saturating_sub(reserved);
            held.settled += settled;
        }
        self.changed.notify_waiters();
    }

    /// A turn of `user` that spent `usd` is committed: the store shows it now.
    pub fn committed(&self, user: &str, usd: f64) {
        let mut users = self.lock();
        if let Some(held) = users.get_mut(user) {
            held.settled = held.settled.saturating_sub(micros(usd));
            held.epoch += 1;
        }
        drop(users);
        self.changed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_at_once_never_pass_the_day_together() {
        let days = Arc::new(Days::default());
        // $1 a day, $0.40 recorded; each call's worst case $0.30, real cost $0.25.
        let go = |d: &Arc<Days>| match d.try_admit("u", d.epoch("u"), 0.40, 1.0, 0.30) {
            DayGate::Go(t) => Some(t),
            DayGate::Wait => None,
            other => panic!("{other:?}"),
        };
        let a = go(&days).expect("first");
        let b = go(&days).expect("second: 0.40 + 0.30 < 1");
        assert!(go(&days).is_none(), "a third might pass the day: it waits");
        a.settle(0.25);
        b.settle(0.25);
        // 0.40 + 0.50 settled: one more may go (it may end the day up to one call over).
        let c = go(&days).expect("third after settling");
        c.settle(0.25);
        assert!(
            matches!(days.try_admit("u", days.epoch("u"), 0.40, 1.0, 0.30), DayGate::No(s) if (s - 1.15).abs() < 1e-9)
        );
        // The turns commit: the store now shows 1.15 and nothing is held here.
        let before = days.epoch("u");
        days.committed("u", 0.75);
        assert!(matches!(days.try_admit("u", before, 0.40, 1.0, 0.30), DayGate::Retry), "a stale read retries");
        assert!(matches!(days.try_admit("u", days.epoch("u"), 1.15, 1.0, 0.30), DayGate::No(_)));
        // Another user is not affected.
        assert!(matches!(days.try_admit("v", 0, 0.0, 1.0, 0.30), DayGate::Go(_)));
    }

    #[test]
    fn a_dropped_ticket_gives_its_reservation_back() {
        let days = Arc::new(Days::default());
        let t = match days.try_admit("u", 0, 0.0, 1.0, 1.0) {
            DayGate::Go(t) => t,
            other => panic!("{other:?}"),
        };
        assert!(matches!(days.try_admit("u", 0, 0.0, 1.0, 1.0), DayGate::Wait));
        drop(t);
        assert!(matches!(days.try_admit("u", 0, 0.0, 1.0, 1.0), DayGate::Go(_)));
    }
}
