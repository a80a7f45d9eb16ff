//! Error shapes (issue 13, point 7): every HTTP error of Butler's own routes, whatever refused
//! it (a path, query, JSON or body-limit rejection, the router, a channel's webhook), is JSON
//! `{"error": {"code", "message", "type"}}` with the expected status, code and type.

use crate::support::app::{config, TestApp};
use crate::support::fake_telegram::FakeTelegram;
use butler::channels::TelegramConfig;
use serde_json::Value;

const TG_TOKEN: &str = "123456:shapes-token";
const TG_SECRET: &str = "shapes-Secret_1";

struct Case {
    name: &'static str,
    method: &'static str,
    path: String,
    headers: Vec<(&'static str, String)>,
    body: String,
    status: u16,
    code: &'static str,
}

fn get(name: &'static str, path: &str, status: u16, code: &'static str) -> Case {
    Case { name, method: "GET", path: path.into(), headers: vec![], body: String::new(), status, code }
}

fn post(name: &'static str, path: &str, ct: &str, body: impl Into<String>, status: u16, code: &'static str) -> Case {
    Case {
        name,
        method: "POST",
        path: path.into(),
        headers: vec![("content-type", ct.into())],
        body: body.into(),
        status,
        code,
    }
}

async fn telegram_webhook(fake: &FakeTelegram) -> TelegramConfig {
    let text = format!(
        "token = \"{TG_TOKEN}\"\napi_url = \"{}\"\nmode = \"webhook\"\nwebhook_secret = \"{TG_SECRET}\"\n\
         webhook_url = \"https://butler.example.com/channels/telegram/webhook\"\n",
        fake.api_url()
    );
    toml::from_str(&text).expect("a telegram section")
}

#[tokio::test]
async fn every_error_is_the_json_error_shape() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let fake = FakeTelegram::start(TG_TOKEN).await;
    let (mut cfg, dir) = config(None);
    cfg.server.max_body_bytes = 4096;
    cfg.channels.set("telegram", telegram_webhook(&fake).await.to_table());
    let app = TestApp::start(cfg, Some(dir)).await;
    assert_eq!(app.post("c1", "local", "hello").await.0, 202, "a conversation to read");
    let json = "application/json";
    let big = format!(r#"{{"conversation":"c1","user":"local","text":"{}"}}"#, "x".repeat(5000));
    let mut wrong_secret =
        post("telegram webhook, wrong secret", "/channels/telegram/webhook", json, "{}", 401, "invalid_secret");
    wrong_secret.headers.push(("x-telegram-bot-api-secret-token", "not-it".into()));
    let mut not_update =
        post("telegram webhook, not an update", "/channels/telegram/webhook", json, "[]", 400, "invalid_request");
    not_update.headers.push(("x-telegram-bot-api-secret-token", TG_SECRET.into()));
    let cases = vec![
        get("bad path (%ff), messages", "/api/v1/conversations/%ff/messages", 400, "invalid_path"),
        get("bad path (%ff), stream", "/api/v1/conversations/%ff/stream", 400, "invalid_path"),
        get("bad query value", "/api/v1/conversations/c1/messages?limit=abc", 400, "invalid_query"),
        get("unknown query key", "/api/v1/conversations/c1/messages?colour=red", 400, "invalid_query"),
        post("bad JSON", "/api/v1/messages", json, "{\"conversation\": ", 400, "malformed_json"),
        post("wrong fields", "/api/v1/messages", json, r#"{"conversation":"c1"}"#, 422, "invalid_fields"),
        post("wrong content type", "/api/v1/messages", "text/plain", r#"{"text":"hi"}"#, 415, "unsupported_media_type"),
        post("body too large", "/api/v1/messages", json, big.clone(), 413, "body_too_large"),
        post("body too large, hooks", "/hooks/github", json, big, 413, "body_too_large"),
        get("unknown route", "/api/v2/nothing", 404, "not_found"),
        get("wrong method", "/api/v1/messages", 405, "method_not_allowed"),
        get("wrong method, telegram", "/channels/telegram/webhook", 405, "method_not_allowed"),
        post("unknown hook source", "/hooks/nobody", json, "{}", 404, "unknown_source"),
        wrong_secret,
        not_update,
    ];
    let http = reqwest::Client::new();
    for c in cases {
        let url = app.url(&c.path);
        let mut req = match c.method {
            "GET" => http.get(url),
            _ => http.post(url).body(c.body.clone()),
        };
        for (k, v) in &c.headers {
            req = req.header(*k, v);
        }
        let resp = req.send().await.expect("request");
        let status = resp.status().as_u16();
        let ct = resp.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
        let text = resp.text().await.unwrap_or_default();
        let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        assert_eq!(status, c.status, "{}: status, body {text}", c.name);
        assert!(ct.starts_with("application/json"), "{}: content type {ct:?}, body {text}", c.name);
        assert_eq!(body["error"]["code"], c.code, "{}: {text}", c.name);
        // Every error, a channel crate's too (issue 36: `/hooks/*` lacked it), carries OpenAI's
        // `type` for its status.
        let kind = match c.status {
            401 => "authentication_error",
            404 => "not_found_error",
            _ => "invalid_request_error",
        };
        assert_eq!(body["error"]["type"], kind, "{}: an OpenAI-style type: {text}", c.name);
        let message = body["error"]["message"].as_str().unwrap_or("");
        assert!(!message.is_empty(), "{}: a message: {text}", c.name);
        assert!(!message.contains(TG_SECRET), "{}: leaks the secret", c.name);
    }
    app.stop().await;
}
