//! Built-in tools that need nothing but the store: the clock and the user's memory.
//! They must never touch another user's data.

mod memory;
mod now;

pub use memory::memory_tools;
pub use now::Now;
