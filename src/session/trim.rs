//! Gives the memory of retired session actors back to the operating system. glibc's allocator
//! keeps freed pages in its arenas, so after a burst of conversations the process would stay at
//! its peak long after their actors retired; a trim hands the free pages back. When the last
//! actor retires, SQLite's page caches (grown with the database during the burst) go first.
//!
//! It must never trim on an async worker thread (a trim walks the heap) and never run two trims
//! at once.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use tokio_util::task::TaskTracker;

/// Retirements between two trims while sessions stay live.
const EVERY: usize = 1024;

static RETIRED: AtomicUsize = AtomicUsize::new(0);
static TRIMMING: AtomicBool = AtomicBool::new(false);

/// An actor retired and `live` actors remain: trims when none is left, or after [`EVERY`]
/// retirements.
pub(super) fn retired(live: usize, tracker: &TaskTracker) {
    let since = RETIRED.fetch_add(1, Ordering::Relaxed) + 1;
    if (live > 0 && since < EVERY) || TRIMMING.swap(true, Ordering::AcqRel) {
        return;
    }
    RETIRED.store(0, Ordering::Relaxed);
    let idle = live == 0;
    tracker.spawn_blocking(move || {
        let page_cache_bytes = if idle { crate::store::SqliteStore::release_page_caches() } else { 0 };
        let released = trim();
        tracing::debug!(released, page_cache_bytes, "freed session memory trimmed");
        TRIMMING.store(false, Ordering::Release);
    });
}

/// Whether the allocator gave memory back.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim() -> bool {
    // SAFETY: malloc_trim only works on the allocator's own state and takes a padding size.
    unsafe { libc::malloc_trim(0) == 1 }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() -> bool {
    false
}
