//! Signed webhook triggers end to end: `POST /hooks/{name}` on a real in-process Butler
//! (SQLite file, fake LLM), with GitHub-shaped payloads from tests/fixtures/github signed here
//! exactly as GitHub (or Butler's own scheme) signs them.
//!
//! These tests must never share signing code with the crate under test, and never reach the
//! network beyond 127.0.0.1.

#[path = "../support/mod.rs"]
mod support;

mod common;
mod decisions;
mod signatures;
