//! Helpers for the webhook tests: signing requests exactly as GitHub and Butler's scheme do
//! (HMAC-SHA256 computed here, independently of the code under test), posting them to a running
//! Butler, and reading what was stored straight from its SQLite file.
//!
//! Nothing here may call into the webhook crate's own signing or hashing code: a test that
//! shared it would pass even if both were wrong.

use crate::support::app::{config, TestApp};
use butler::config::{Config, TriggerConfig};
use butler::store::DecisionRow;
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub const GITHUB_SECRET: &str = "gh-webhook-secret-4f1d9c";
pub const BUTLER_SECRET: &str = "butler-hook-secret-88a2e0";

/// A fixture from tests/fixtures/github/, as sent (bytes).
pub fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/github/{name}.json", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A fixture parsed, for tests that change a field before sending.
pub fn fixture_json(name: &str) -> Value {
    serde_json::from_slice(&fixture(name)).expect("fixture is JSON")
}

fn hmac_hex(secret: &str, parts: &[&[u8]]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
    for p in parts {
        mac.update(p);
    }
    hex::encode(mac.finalize().into_bytes())
}

/// `X-Hub-Signature-256` as GitHub computes it.
pub fn github_signature(secret: &str, body: &[u8]) -> String {
    format!("sha256={}", hmac_hex(secret, &[body]))
}

/// `X-Butler-Signature-256` over `"<timestamp>.<raw body>"`.
pub fn butler_signature(secret: &str, timestamp: i64, body: &[u8]) -> String {
    format!("sha256={}", hmac_hex(secret, &[timestamp.to_string().as_bytes(), b".", body]))
}

pub fn sha256_hex(body: &[u8]) -> String {
    hex::encode(Sha256::digest(body))
}

/// The event id of a GitHub-scheme request to `source`: the body's SHA-256 (the delivery id
/// header is not signed, so it never names the event).
pub fn event_id(source: &str, body: &[u8]) -> String {
    format!("hook:{source}:{}", sha256_hex(body))
}

/// The event id of a Butler-scheme request to `source` signed at `timestamp`: the SHA-256 of
/// the signed text `"<timestamp>.<body>"`.
pub fn butler_event_id(source: &str, timestamp: i64, body: &[u8]) -> String {
    let mut signed = timestamp.to_string().into_bytes();
    signed.push(b'.');
    signed.extend_from_slice(body);
    format!("hook:{source}:{}", sha256_hex(&signed))
}

pub fn now_secs() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() as i64
}

/// `[[triggers]]` entries written as TOML.
pub fn triggers(toml_text: &str) -> Vec<TriggerConfig> {
    #[derive(serde::Deserialize)]
    struct File {
        triggers: Vec<TriggerConfig>,
    }
    toml::from_str::<File>(toml_text).unwrap_or_else(|e| panic!("{e}\n{toml_text}")).triggers
}

/// A test config (fresh SQLite, optional fake LLM) with these triggers; it must validate.
pub fn hook_config(llm_url: Option<&str>, toml_text: &str) -> (Config, tempfile::TempDir) {
    let (mut cfg, dir) = config(llm_url);
    cfg.triggers = triggers(toml_text);
    butler::app::check_config(&cfg).unwrap_or_else(|e| panic!("{e}"));
    (cfg, dir)
}

/// Request headers as (lowercase name, value).
pub type Headers = Vec<(&'static str, String)>;

/// A response: status, JSON body (Null if not JSON), and the Retry-After header.
pub struct Answer {
    pub status: u16,
    pub json: Value,
    pub retry_after: Option<String>,
}

/// POST /hooks/{source} with `headers` and `body` as given.
pub async fn post(t: &TestApp, source: &str, headers: &[(&str, String)], body: Vec<u8>) -> Answer {
    let mut req = t.http.post(t.url(&format!("/hooks/{source}"))).body(body);
    for (k, v) in headers {
        req = req.header(*k, v);
    }
    let r = req.send().await.expect("post hook");
    let status = r.status().as_u16();
    let retry_after = r.headers().get("retry-after").map(|v| v.to_str().unwrap().to_string());
    let json = r.json().await.unwrap_or(Value::Null);
    Answer { status, json, retry_after }
}

/// Headers GitHub sends with a delivery of `event`, signed with `secret`.
pub fn github_headers(secret: &str, event: &str, delivery: &str, body: &[u8]) -> Headers {
    vec![
        ("content-type", "application/json".into()),
        ("user-agent", "GitHub-Hookshot/7c1e5a2".into()),
        ("x-github-event", event.into()),
        ("x-github-delivery", delivery.into()),
        ("x-github-hook-id", "512034991".into()),
        ("x-hub-signature-256", github_signature(secret, body)),
    ]
}

/// A GitHub delivery of `event` signed with [`GITHUB_SECRET`].
pub async fn post_github(t: &TestApp, source: &str, event: &str, delivery: &str, body: &[u8]) -> Answer {
    post(t, source, &github_headers(GITHUB_SECRET, event, delivery, body), body.to_vec()).await
}

/// Headers of Butler's scheme, signed at `timestamp` with `secret`.
pub fn butler_headers(secret: &str, timestamp: i64, delivery: Option<&str>, body: &[u8]) -> Headers {
    let mut h = vec![
        ("content-type", "application/json".into()),
        ("x-butler-event", "deploy".into()),
        ("x-butler-timestamp", timestamp.to_string()),
        ("x-butler-signature-256", butler_signature(secret, timestamp, body)),
    ];
    if let Some(d) = delivery {
        h.push(("x-butler-delivery", d.to_string()));
    }
    h
}

/// One inbox row of the `hook` channel.
#[derive(Debug, Clone)]
pub struct InboxRow {
    pub id: String,
    pub status: String,
    pub error: Option<String>,
}

/// The `hook` inbox rows, oldest first, read from the SQLite file.
pub async fn hook_inbox(t: &TestApp) -> Vec<InboxRow> {
    let pool = sqlx::SqlitePool::connect(&t.db_url()).await.expect("open the test database");
    let rows: Vec<(String, String, Option<String>)> =
        sqlx::query_as("SELECT id, status, error FROM inbox WHERE channel = 'hook' ORDER BY seq")
            .fetch_all(&pool)
            .await
            .expect("read the inbox");
    pool.close().await;
    rows.into_iter().map(|(id, status, error)| InboxRow { id, status, error }).collect()
}

/// Waits until `n` hook events are stored and none is pending or processing.
pub async fn settled(t: &TestApp, n: usize) -> Vec<InboxRow> {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let rows = hook_inbox(t).await;
        let done = rows.len() >= n && rows.iter().all(|r| r.status != "pending" && r.status != "processing");
        if done || Instant::now() > deadline {
            assert!(done, "hook events did not settle: {rows:?}");
            return rows;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// The recorded decision for event `id` (waits for it).
pub async fn decision(t: &TestApp, id: &str) -> DecisionRow {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let recent = t.app.store.decisions_recent(500).await.expect("decisions");
        if let Some(d) = recent.into_iter().find(|d| d.event_id == id) {
            return d;
        }
        assert!(Instant::now() < deadline, "no decision recorded for {id}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// The texts of the assistant-side messages of web conversation `conv` once there are `n`.
pub async fn web_texts(t: &TestApp, conv: &str, n: usize) -> Vec<String> {
    t.wait_replies(conv, n, 15).await.iter().map(|m| m["text"].as_str().unwrap_or_default().to_string()).collect()
}
