//! A count of platform updates an adapter could not read (a payload its SDK could not parse
//! even after the adapter's repairs), per channel, for Butler's `/metrics`. Such an update is
//! acknowledged (a redelivery would fail the same way), so without this count and the
//! adapter's warning it would vanish silently.
//!
//! This must never hold anything of the update itself: only how many there were.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

static COUNTS: Mutex<Vec<(&'static str, &'static AtomicU64)>> = Mutex::new(Vec::new());

/// Counts one unreadable update of `channel`.
pub fn count_unreadable(channel: &'static str) {
    let mut counts = COUNTS.lock().unwrap_or_else(|p| p.into_inner());
    match counts.iter().find(|(name, _)| *name == channel) {
        Some((_, n)) => {
            n.fetch_add(1, Ordering::Relaxed);
        }
        None => counts.push((channel, Box::leak(Box::new(AtomicU64::new(1))))),
    }
}

/// Every channel's count so far, in the order first seen.
pub fn unreadable_counts() -> Vec<(&'static str, u64)> {
    let counts = COUNTS.lock().unwrap_or_else(|p| p.into_inner());
    counts.iter().map(|(name, n)| (*name, n.load(Ordering::Relaxed))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_per_channel() {
        count_unreadable("test-a");
        count_unreadable("test-a");
        count_unreadable("test-b");
        let got = unreadable_counts();
        assert!(got.contains(&("test-a", 2)) && got.contains(&("test-b", 1)), "{got:?}");
    }
}
