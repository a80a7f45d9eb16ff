//! A global allocator for the fuzz binaries that refuses any single allocation over the
//! target's memory limit, as libFuzzer's `-malloc_limit_mb` would (which needs a sanitizer's
//! malloc hooks, absent in a `-s none` build). A refused allocation is a null pointer: Rust then
//! aborts ("memory allocation of N bytes failed"), which libFuzzer records as a crash, while code
//! that asks with `try_reserve` gets its error, as it would from a real limit.
//!
//! It must never allocate, block or unwind itself. Only the binaries install it; the corpus test
//! runs with the ordinary allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

static LIMIT: AtomicUsize = AtomicUsize::new(usize::MAX);

/// The system allocator with a cap on the size of one allocation (see [`set_limit_mb`]).
pub struct CappedAlloc;

/// From now on, an allocation of more than `mb` MiB fails.
pub fn set_limit_mb(mb: usize) {
    LIMIT.store(mb.saturating_mul(1 << 20), Ordering::Relaxed);
}

// SAFETY: every call goes to `System` unchanged, except that a too large request is answered
// with null, which the `GlobalAlloc` contract allows for any request.
unsafe impl GlobalAlloc for CappedAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > LIMIT.load(Ordering::Relaxed) {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller's layout is passed on as it came.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() > LIMIT.load(Ordering::Relaxed) {
            return std::ptr::null_mut();
        }
        // SAFETY: as in `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > LIMIT.load(Ordering::Relaxed) {
            return std::ptr::null_mut();
        }
        // SAFETY: `ptr` came from `System` with `layout`; a null answer leaves it allocated.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}
