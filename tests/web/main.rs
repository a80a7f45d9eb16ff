//! The web chat and the pipeline behind it, end to end: the HTTP API (good and bad input),
//! sessions and the agent turn through the real store and the scripted fake LLM, the page in
//! headless Chromium, the server's connection and body limits, and the JSON shape of every error.

#[path = "../support/mod.rs"]
mod support;

mod agent;
mod api;
mod backends;
mod browser;
mod conversations;
mod error_shapes;
mod guard;
mod limits;
mod media;
mod openai;
mod poison;
mod sessions;
mod settled;
mod status;
mod tries;
