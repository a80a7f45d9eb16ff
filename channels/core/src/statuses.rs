//! A count of the delivery statuses platforms report for messages Butler sent (WhatsApp's
//! sent, delivered, read and failed callbacks), per channel and status, for Butler's
//! `/metrics`. A status never starts a turn; this count is what is kept of it.
//!
//! This must never hold anything of the message or its recipient: only how many there were.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

type Key = (&'static str, &'static str);

static COUNTS: Mutex<Vec<(Key, &'static AtomicU64)>> = Mutex::new(Vec::new());

/// The status words counted; anything else is counted as `other`.
const KNOWN: [&str; 5] = ["sent", "delivered", "read", "failed", "deleted"];

/// Counts one `status` callback of `channel`.
pub fn count_status(channel: &'static str, status: &str) {
    let status = KNOWN.iter().find(|k| **k == status).copied().unwrap_or("other");
    let mut counts = COUNTS.lock().unwrap_or_else(|p| p.into_inner());
    match counts.iter().find(|(key, _)| *key == (channel, status)) {
        Some((_, n)) => {
            n.fetch_add(1, Ordering::Relaxed);
        }
        None => counts.push(((channel, status), Box::leak(Box::new(AtomicU64::new(1))))),
    }
}

/// Every (channel, status) count so far, in the order first seen.
pub fn status_counts() -> Vec<(&'static str, &'static str, u64)> {
    let counts = COUNTS.lock().unwrap_or_else(|p| p.into_inner());
    counts.iter().map(|((c, s), n)| (*c, *s, n.load(Ordering::Relaxed))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_per_channel_and_status() {
        for s in ["read", "read", "failed", "warning"] {
            count_status("test-s", s);
        }
        let got = status_counts();
        for want in [("test-s", "read", 2), ("test-s", "failed", 1), ("test-s", "other", 1)] {
            assert!(got.contains(&want), "{want:?} in {got:?}");
        }
    }
}
