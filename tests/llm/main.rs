//! The LLM layer, tested for real: recorded SSE fixtures replayed through the real parsers, and
//! both providers driven over HTTP against the scripted fake LLM (tests/support/fake_llm.rs).
//!
//! Nothing here mocks Butler's own traits, and nothing asserts speed by wall clock beyond the
//! generous bounds that timeouts and Retry-After need.

#[path = "../support/mod.rs"]
mod support;

mod common;
mod decoders;
mod errors;
mod fallback;
mod fixtures;
mod providers;
mod sse;
