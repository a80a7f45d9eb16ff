//! Rate limits per Web API method: after a 429 with `Retry-After`, calls of that method are
//! refused locally (as [`ChannelError::RateLimited`] with the time left) until the wait is over,
//! so Butler never hammers a method Slack asked it to slow down on, while other methods go on.
//! The caller decides what "later" means: the outbox reschedules the reply without counting an
//! attempt, the Socket Mode loop sleeps; nothing is dropped here.
//!
//! This must never sleep or block a caller itself.

use butler_channel::ChannelError;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Default)]
pub struct Limiter {
    until: Mutex<HashMap<&'static str, Instant>>,
}

impl Limiter {
    /// Ok when `method` may be called now; else how long to wait.
    pub fn check(&self, method: &'static str) -> Result<(), ChannelError> {
        let mut until = self.until.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        match until.get(method) {
            Some(t) if *t > now => Err(ChannelError::RateLimited { retry_after: *t - now }),
            Some(_) => {
                until.remove(method);
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// Slack asked to wait `retry_after` before calling `method` again.
    pub fn block(&self, method: &'static str, retry_after: Duration) {
        let mut until = self.until.lock().unwrap_or_else(|p| p.into_inner());
        let t = Instant::now() + retry_after;
        let e = until.entry(method).or_insert(t);
        *e = (*e).max(t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_429_blocks_only_its_method_and_only_for_the_wait() {
        let l = Limiter::default();
        assert!(l.check("chat.postMessage").is_ok());
        l.block("chat.postMessage", Duration::from_millis(150));
        match l.check("chat.postMessage") {
            Err(ChannelError::RateLimited { retry_after }) => {
                assert!(retry_after > Duration::from_millis(100) && retry_after <= Duration::from_millis(150))
            }
            other => panic!("{other:?}"),
        }
        assert!(l.check("chat.update").is_ok(), "other methods go on");
        // A shorter wait never shortens a longer one.
        l.block("chat.postMessage", Duration::from_millis(10));
        std::thread::sleep(Duration::from_millis(60));
        assert!(l.check("chat.postMessage").is_err());
        std::thread::sleep(Duration::from_millis(100));
        assert!(l.check("chat.postMessage").is_ok());
    }
}
