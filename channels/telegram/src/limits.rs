//! The one send scheduler: every message and edit Butler makes on Telegram reserves a slot here
//! first, so that one chat gets at most one message per `per_chat` interval and the bot as a
//! whole at most `per_second` messages per second (Telegram's documented limits), and a chat
//! that got a 429 waits out its `retry_after` before anything else goes to it.
//!
//! Slots are reserved in arrival order under one lock and then slept for, so waiting callers
//! never race each other. It must never drop a request: a wait longer than the caller allows
//! comes back as the time to wait, for the caller to retry later.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// Telegram's limits for bots: ~1 message per second per chat, ~30 per second overall.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Shortest gap between two messages (sends or edits) to one chat.
    pub per_chat: Duration,
    /// Messages per second over all chats; 0 lifts the limit (benchmarks only).
    pub per_second: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Self { per_chat: Duration::from_secs(1), per_second: 30 }
    }
}

#[derive(Default)]
struct State {
    /// The earliest time the next message to each chat may go (its last slot + `per_chat`, or
    /// the end of a 429 wait).
    chat_next: HashMap<i64, Instant>,
    /// Reserved slots of the last second and the future, for the overall limit.
    slots: BTreeSet<Instant>,
}

pub struct Scheduler {
    limits: Limits,
    /// Minimum spacing between any two slots (1 s / per_second): 30 per second, never a burst.
    gap: Duration,
    state: Mutex<State>,
}

impl Scheduler {
    pub fn new(limits: Limits) -> Self {
        let gap = match limits.per_second {
            0 => Duration::ZERO,
            n => Duration::from_secs(1).div_f64(f64::from(n)) + Duration::from_micros(100),
        };
        Self { limits, gap, state: Mutex::new(State::default()) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reserves the earliest slot for `chat`; `Err(wait)` (nothing reserved) when that slot is
    /// more than `max_wait` away.
    pub fn reserve(&self, chat: i64, max_wait: Duration) -> Result<Instant, Duration> {
        let now = Instant::now();
        let mut s = self.lock();
        let earliest = s.chat_next.get(&chat).copied().unwrap_or(now).max(now);
        let slot = self.free_slot(&s.slots, earliest);
        if slot > now + max_wait {
            return Err(slot - now);
        }
        if !self.gap.is_zero() {
            s.slots.insert(slot);
            // Slots older than a second no longer constrain anything.
            let horizon = now.checked_sub(Duration::from_secs(1)).unwrap_or(now);
            while s.slots.first().is_some_and(|t| *t < horizon) {
                s.slots.pop_first();
            }
        }
        s.chat_next.insert(chat, slot + self.limits.per_chat);
        if s.chat_next.len() > 4096 {
            s.chat_next.retain(|_, t| *t > now);
        }
        Ok(slot)
    }

    /// The earliest time at or after `t` at least `gap` away from every reserved slot.
    fn free_slot(&self, slots: &BTreeSet<Instant>, mut t: Instant) -> Instant {
        if self.gap.is_zero() {
            return t;
        }
        let from = t.checked_sub(self.gap).unwrap_or(t);
        for s in slots.range(from..) {
            if *s >= t + self.gap {
                break;
            }
            if s.saturating_duration_since(t) < self.gap || t.saturating_duration_since(*s) < self.gap {
                t = *s + self.gap;
            }
        }
        t
    }

    /// Waits for a slot for `chat`; `Err(wait)` if it is more than `max_wait` away.
    pub async fn wait(&self, chat: i64, max_wait: Duration) -> Result<(), Duration> {
        let slot = self.reserve(chat, max_wait)?;
        tokio::time::sleep_until(slot).await;
        Ok(())
    }

    /// A slot for something that must not wait (a typing indicator): taken only if the overall
    /// limit has room right now; it does not hold up the chat's next message.
    pub fn try_now(&self) -> bool {
        let now = Instant::now();
        let mut s = self.lock();
        if self.free_slot(&s.slots, now) > now {
            return false;
        }
        if !self.gap.is_zero() {
            s.slots.insert(now);
        }
        true
    }

    /// Telegram answered 429 for `chat`: nothing more goes there for `retry_after`.
    pub fn penalize(&self, chat: i64, retry_after: Duration) {
        let until = Instant::now() + retry_after;
        let mut s = self.lock();
        let next = s.chat_next.entry(chat).or_insert(until);
        *next = (*next).max(until);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(d: Duration) -> u128 {
        d.as_millis()
    }

    #[tokio::test(start_paused = true)]
    async fn one_chat_gets_one_message_per_second() {
        let s = Scheduler::new(Limits::default());
        let start = Instant::now();
        let slots: Vec<u128> = (0..4).map(|_| ms(s.reserve(7, Duration::from_secs(60)).unwrap() - start)).collect();
        assert_eq!(slots, vec![0, 1000, 2000, 3000]);
        // Another chat is not held up by chat 7 (only by the overall spacing).
        assert!(ms(s.reserve(8, Duration::from_millis(100)).unwrap() - start) < 100);
    }

    #[tokio::test(start_paused = true)]
    async fn at_most_thirty_per_second_overall() {
        let s = Scheduler::new(Limits::default());
        let start = Instant::now();
        let mut slots: Vec<Instant> = (0..200).map(|chat| s.reserve(chat, Duration::from_secs(60)).unwrap()).collect();
        slots.sort();
        for (i, t) in slots.iter().enumerate() {
            let in_window = slots[i..].iter().take_while(|u| **u < *t + Duration::from_secs(1)).count();
            assert!(in_window <= 30, "{in_window} slots in the second after {:?}", *t - start);
        }
        // 200 messages need a bit under 7 seconds, not more.
        assert!(ms(*slots.last().unwrap() - start) < 6800, "{:?}", *slots.last().unwrap() - start);
    }

    #[tokio::test(start_paused = true)]
    async fn a_429_holds_the_chat_and_long_waits_are_returned() {
        let s = Scheduler::new(Limits::default());
        let start = Instant::now();
        s.reserve(1, Duration::ZERO).unwrap();
        s.penalize(1, Duration::from_secs(5));
        assert_eq!(s.reserve(1, Duration::from_secs(2)).map(|_| ()), Err(Duration::from_secs(5)));
        assert_eq!(ms(s.reserve(1, Duration::from_secs(10)).unwrap() - start), 5000);
        tokio::time::advance(Duration::from_millis(100)).await;
        assert!(s.try_now(), "typing is not held by the chat's penalty");
    }

    #[tokio::test(start_paused = true)]
    async fn lifted_limits_never_wait() {
        let s = Scheduler::new(Limits { per_chat: Duration::ZERO, per_second: 0 });
        let start = Instant::now();
        for _ in 0..100 {
            assert_eq!(s.reserve(1, Duration::ZERO).unwrap(), start);
        }
    }
}
