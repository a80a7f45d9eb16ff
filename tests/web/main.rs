//! The web chat and the pipeline behind it, end to end: the HTTP API (good and bad input),
//! sessions and the agent turn through the real store and the scripted fake LLM, and the page in
//! headless Chromium.

#[path = "../support/mod.rs"]
mod support;

mod agent;
mod api;
mod backends;
mod browser;
mod sessions;
