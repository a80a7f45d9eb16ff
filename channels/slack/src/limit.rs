//! Rate limits per Web API method: after a 429 with `Retry-After`, calls of that method are
//! refused locally (as [`ChannelError::RateLimited`] with the time left) until the wait is over,
//! so Butler never hammers a method Slack asked it to slow down on, while other methods go on.
//! The hold lives in the channel's [`Gate`]: with the replicas' shared gate, a 429 seen by one
//! replica holds the method on all of them (Slack's limits are per app and workspace).
//! The caller decides what "later" means: the outbox reschedules the reply without counting an
//! attempt, the Socket Mode loop sleeps; nothing is dropped here.
//!
//! This must never sleep or block a caller itself.

use butler_channel::limit::Gate;
use butler_channel::ChannelError;
use std::time::Duration;

#[derive(Default)]
pub struct Limiter {
    gate: Gate,
}

/// The gate key of one Web API method.
fn key(method: &str) -> String {
    format!("slack:method:{method}")
}

impl Limiter {
    pub fn new(gate: Gate) -> Self {
        Self { gate }
    }

    /// Ok when `method` may be called now; else how long to wait.
    pub async fn check(&self, method: &'static str) -> Result<(), ChannelError> {
        match self.gate.held(&key(method)).await {
            Some(retry_after) => Err(ChannelError::RateLimited { retry_after }),
            None => Ok(()),
        }
    }

    /// Slack asked to wait `retry_after` before calling `method` again.
    pub async fn block(&self, method: &'static str, retry_after: Duration) {
        self.gate.hold(&key(method), retry_after).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_429_blocks_only_its_method_and_only_for_the_wait() {
        let l = Limiter::default();
        assert!(l.check("chat.postMessage").await.is_ok());
        l.block("chat.postMessage", Duration::from_millis(150)).await;
        match l.check("chat.postMessage").await {
            Err(ChannelError::RateLimited { retry_after }) => assert_eq!(retry_after, Duration::from_millis(150)),
            other => panic!("{other:?}"),
        }
        assert!(l.check("chat.update").await.is_ok(), "other methods go on");
        // A shorter wait never shortens a longer one.
        l.block("chat.postMessage", Duration::from_millis(10)).await;
        tokio::time::advance(Duration::from_millis(60)).await;
        assert!(l.check("chat.postMessage").await.is_err());
        tokio::time::advance(Duration::from_millis(100)).await;
        assert!(l.check("chat.postMessage").await.is_ok());
    }
}
