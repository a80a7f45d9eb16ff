//! The one send scheduler: every message and edit Butler makes on Telegram reserves a slot here
//! first, so that one chat gets at most one message per `per_chat` interval and the bot as a
//! whole at most `per_second` messages per second (Telegram's documented limits), and a chat
//! that got a 429 waits out its `retry_after` before anything else goes to it.
//!
//! The slots live in the [`Gate`] the channel was given: this process's own, or the one the
//! replicas share (then the limits are the bot's, however many replicas send). A message first
//! reserves its chat's next slot, sleeps until it, then reserves the next overall slot (so a
//! chat that must wait never holds up the others); when that overall slot was later, the chat
//! is held for one interval from the moment the message really goes. Reservations are handed
//! out in arrival order, so waiting callers never race each other. It must never drop a
//! request: a wait longer than the caller allows comes back as the time to wait, for the
//! caller to retry later.

use butler_channel::limit::{Gate, Rate};
use std::time::Duration;

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

/// The gate key of the overall limit.
const ALL: &str = "telegram:all";

/// Room for the longest chat key (`telegram:chat:` and an i64).
type KeyBuf = [u8; 40];

/// The gate key of one chat, written into `buf` (no allocation per message).
fn chat_key(chat: i64, buf: &mut KeyBuf) -> &str {
    use std::io::Write;
    let mut cursor = std::io::Cursor::new(&mut buf[..]);
    let _ = write!(cursor, "telegram:chat:{chat}");
    let len = usize::try_from(cursor.position()).unwrap_or(0);
    std::str::from_utf8(&buf[..len]).unwrap_or("telegram:chat:?")
}

pub struct Scheduler {
    /// One message per `per_chat` to a chat (zero: only a 429's hold).
    chat: Rate,
    /// Evenly spaced overall slots (1 s / per_second, never a burst); None when lifted.
    all: Option<Rate>,
    gate: Gate,
}

impl Scheduler {
    pub fn new(limits: Limits, gate: Gate) -> Self {
        let chat = Rate::spaced(limits.per_chat);
        let all = match limits.per_second {
            0 => None,
            n => Some(Rate::spaced(Duration::from_secs(1).div_f64(f64::from(n)) + Duration::from_micros(100))),
        };
        Self { chat, all, gate }
    }

    /// Waits for a slot for `chat`; `Err(wait)` (nothing more reserved) if it is more than
    /// `max_wait` away.
    pub async fn wait(&self, chat: i64, max_wait: Duration) -> Result<(), Duration> {
        let mut buf = [0; 40];
        let key = chat_key(chat, &mut buf);
        let wait = self.gate.reserve(key, self.chat, max_wait).await?;
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        if let Some(rate) = self.all {
            let queued = self.gate.reserve(ALL, rate, max_wait.saturating_sub(wait)).await?;
            if !queued.is_zero() {
                tokio::time::sleep(queued).await;
                // The chat's slot was reserved before this wait: its next message counts
                // from now, when this one really goes.
                if !self.chat.every.is_zero() {
                    self.gate.hold(key, self.chat.every).await;
                }
            }
        }
        Ok(())
    }

    /// A slot for something that must not wait (a typing indicator): taken only if the overall
    /// limit has room right now; it does not hold up the chat's next message.
    pub async fn try_now(&self) -> bool {
        match self.all {
            Some(rate) => self.gate.take(ALL, rate).await.is_ok(),
            None => true,
        }
    }

    /// Telegram answered 429 for `chat`: nothing more goes there for `retry_after` (from any
    /// replica sharing the gate).
    pub async fn penalize(&self, chat: i64, retry_after: Duration) {
        self.gate.hold(chat_key(chat, &mut [0; 40]), retry_after).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use tokio::time::Instant;

    /// When each of `chats` got its slot, in ms from the start (all asked at once).
    async fn slots(s: Arc<Scheduler>, chats: &[i64]) -> Vec<u128> {
        let start = Instant::now();
        let mut tasks = Vec::new();
        for &chat in chats {
            let s = s.clone();
            tasks.push(tokio::spawn(async move {
                s.wait(chat, Duration::from_secs(60)).await.unwrap();
                (Instant::now() - start).as_millis()
            }));
            // Arrival order is the spawn order.
            tokio::task::yield_now().await;
        }
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.unwrap());
        }
        out
    }

    #[tokio::test(start_paused = true)]
    async fn one_chat_gets_one_message_per_second() {
        let s = Arc::new(Scheduler::new(Limits::default(), Gate::local()));
        assert_eq!(slots(s.clone(), &[7, 7, 7, 7]).await, vec![0, 1000, 2000, 3000]);
        // Another chat is not held up by chat 7 (only by the overall spacing).
        let start = Instant::now();
        s.wait(8, Duration::from_millis(100)).await.unwrap();
        assert!((Instant::now() - start).as_millis() < 100);
    }

    #[tokio::test(start_paused = true)]
    async fn at_most_thirty_per_second_overall() {
        let s = Arc::new(Scheduler::new(Limits::default(), Gate::local()));
        let chats: Vec<i64> = (0..200).collect();
        let mut sent = slots(s, &chats).await;
        sent.sort();
        for (i, t) in sent.iter().enumerate() {
            let in_window = sent[i..].iter().take_while(|u| **u < *t + 1000).count();
            assert!(in_window <= 30, "{in_window} sends in the second after {t} ms");
        }
        // 200 messages need a bit under 7 seconds, not more.
        assert!(*sent.last().unwrap() < 6800, "{:?}", sent.last());
    }

    #[tokio::test(start_paused = true)]
    async fn a_429_holds_the_chat_and_long_waits_are_returned() {
        let s = Scheduler::new(Limits::default(), Gate::local());
        let start = Instant::now();
        s.wait(1, Duration::ZERO).await.unwrap();
        s.penalize(1, Duration::from_secs(5)).await;
        assert_eq!(s.wait(1, Duration::from_secs(2)).await, Err(Duration::from_secs(5)));
        s.wait(1, Duration::from_secs(10)).await.unwrap();
        assert_eq!((Instant::now() - start).as_millis(), 5000);
        tokio::time::advance(Duration::from_millis(100)).await;
        assert!(s.try_now().await, "typing is not held by the chat's penalty");
    }

    #[test]
    fn chat_keys_fit_every_chat_id() {
        for chat in [0, 7, -1_001_234_567_890, i64::MIN, i64::MAX] {
            assert_eq!(chat_key(chat, &mut [0; 40]), format!("telegram:chat:{chat}"));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_chat_waits_from_when_its_message_really_went() {
        let s = Arc::new(Scheduler::new(Limits::default(), Gate::local()));
        // 60 other chats fill the next two seconds of overall slots; chat 7 comes last.
        let mut chats: Vec<i64> = (100..160).collect();
        chats.push(7);
        let first = *slots(s.clone(), &chats).await.last().unwrap();
        assert!(first >= 1900, "chat 7 went at {first} ms");
        let start = Instant::now();
        s.wait(7, Duration::from_secs(60)).await.unwrap();
        assert!((Instant::now() - start).as_millis() >= 1000, "its next message waits a full interval");
    }

    #[tokio::test(start_paused = true)]
    async fn lifted_limits_never_wait() {
        let s = Scheduler::new(Limits { per_chat: Duration::ZERO, per_second: 0 }, Gate::local());
        let start = Instant::now();
        for _ in 0..100 {
            s.wait(1, Duration::ZERO).await.unwrap();
        }
        assert_eq!(Instant::now(), start);
    }
}
