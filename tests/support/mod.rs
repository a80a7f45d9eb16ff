//! Shared test support: fake servers and test databases. Each test binary includes this with
//! `#[path = "../support/mod.rs"] mod support;`.
#![allow(dead_code)]
pub mod app;
pub mod approval_detail;
pub mod bench;
pub mod cluster;
pub mod db;
pub mod dovecot;
pub mod embedder;
pub mod fake_channel;
pub mod fake_discord;
pub mod fake_llm;
pub mod fake_signal;
pub mod fake_slack;
pub mod fake_stt;
pub mod fake_telegram;
pub mod fake_whatsapp;
pub mod fault_proxy;
pub mod gates;
pub mod payloads;
pub mod platforms;
pub mod proc;
pub mod smtp_sink;
pub mod sse;
pub mod synapse;
pub mod touch;
