//! The wait between reconnects of a receiver (an event stream, an IMAP session): it doubles
//! from `first` up to `max`, starts again after a good connection, and ends at once when the
//! receiver is told to stop.
//!
//! It must never sleep past a cancellation.

use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A doubling wait between reconnects.
#[derive(Clone, Debug)]
pub struct Backoff {
    first: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    pub fn new(first: Duration, max: Duration) -> Self {
        Self { first, max, next: first }
    }

    /// The next wait.
    pub fn current(&self) -> Duration {
        self.next
    }

    /// After a connection that worked: the next wait is the first again.
    pub fn reset(&mut self) {
        self.next = self.first;
    }

    /// After a refusal that will not pass soon (bad credentials): wait the longest.
    pub fn slow(&mut self) {
        self.next = self.max;
    }

    /// Counts how a connection ended (`Ok(true)`: it worked, `Ok(false)`: it ended quietly) and
    /// logs why it ended: a good one starts the waits again, a refused login waits the longest.
    pub fn after(&mut self, channel: &str, ended: &Result<bool, crate::ChannelError>) {
        match ended {
            Ok(true) => self.reset(),
            Ok(false) => {}
            Err(e @ crate::ChannelError::Unauthorized(_)) => {
                tracing::error!(channel, error = %e, "the login was refused; retrying slowly");
                self.slow();
            }
            Err(e) => tracing::warn!(channel, error = %e, wait = ?self.next, "the connection ended; reconnecting"),
        }
    }

    /// Runs `connect` (one connection, until it ends) again and again with these waits between,
    /// until `cancel` fires: a receiver's whole life.
    pub async fn repeat<F, Fut>(&mut self, channel: &str, cancel: &CancellationToken, mut connect: F)
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<bool, crate::ChannelError>>,
    {
        while !cancel.is_cancelled() {
            let ended = connect().await;
            self.after(channel, &ended);
            if !self.wait(cancel).await {
                break;
            }
        }
    }

    /// Waits the current time, then doubles it; `false` when `cancel` fired first.
    pub async fn wait(&mut self, cancel: &CancellationToken) -> bool {
        let wait = self.next;
        self.next = (self.next * 2).min(self.max);
        tokio::select! {
            _ = cancel.cancelled() => false,
            _ = tokio::time::sleep(wait) => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn doubles_to_the_cap_resets_and_stops_at_once() {
        let cancel = CancellationToken::new();
        let mut b = Backoff::new(Duration::from_millis(500), Duration::from_secs(2));
        let mut seen = Vec::new();
        for _ in 0..4 {
            seen.push(b.current());
            assert!(b.wait(&cancel).await);
        }
        let ms: Vec<u128> = seen.iter().map(Duration::as_millis).collect();
        assert_eq!(ms, [500, 1000, 2000, 2000]);
        b.after("test", &Ok(true));
        assert_eq!(b.current(), Duration::from_millis(500), "a good connection starts again");
        b.after("test", &Err(crate::ChannelError::Unauthorized("no".into())));
        assert_eq!(b.current(), Duration::from_secs(2), "a refused login waits the longest");
        b.reset();
        b.after("test", &Err(crate::ChannelError::Transient("gone".into())));
        assert_eq!(b.current(), Duration::from_millis(500), "another end keeps the wait");
        cancel.cancel();
        assert!(!b.wait(&cancel).await, "a stopped receiver does not wait");
    }
}
