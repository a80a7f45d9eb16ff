//! The clock: [`now_ms`], milliseconds since the Unix epoch, the one time unit Butler stores.
//! It is the channel crates' clock (`butler_channel::now_ms`), so adapters and core agree.
//!
//! This module sits at the bottom of the crate: it must never import anything of Butler.

pub use butler_channel::now_ms;
