//! The no-token mode's guard (issue 28, points 1 and 2): without a web token Butler trusts the
//! request's `user`, so every route, before any handler runs, serves only `Host` values that
//! name this machine (the listen address, `localhost`, `127.0.0.1`, `[::1]` with the port, and
//! `[server] allowed_hosts`), and every state-changing route refuses a browser `Origin` of
//! another site: a page that rebinds its name to 127.0.0.1, or posts a form, reads and drives
//! nothing. Every JSON route takes only `application/json` (415 otherwise, in the route's own
//! error shape), so no cross-site "simple request" reaches a turn. Token mode is unchanged.

use crate::support::app::{config, TestApp};
use crate::support::fake_llm::{FakeLlm, Reply};
use reqwest::Method;
use serde_json::{json, Value};

/// One request of the table: method, path, body (sent as JSON unless `content_type` says).
struct Route {
    method: Method,
    path: &'static str,
    body: Option<Value>,
}

fn route(method: Method, path: &'static str, body: Option<Value>) -> Route {
    Route { method, path, body }
}

/// Every route Butler serves (and a path it does not), each with a body that would be taken.
fn every_route() -> Vec<Route> {
    let msg = json!({"conversation": "c1", "user": "local", "text": "hello"});
    let chat = json!({"model": "m", "messages": [{"role": "user", "content": "hello"}], "user": "local"});
    vec![
        route(Method::GET, "/", None),
        route(Method::GET, "/assets/app.js", None),
        route(Method::GET, "/assets/markdown.js", None),
        route(Method::GET, "/assets/files.js", None),
        route(Method::GET, "/assets/panels.js", None),
        route(Method::GET, "/assets/style.css", None),
        route(Method::GET, "/healthz", None),
        route(Method::GET, "/readyz", None),
        route(Method::GET, "/metrics", None),
        route(Method::GET, "/api/v1/info", None),
        route(Method::GET, "/api/v1/usage?user=local", None),
        route(Method::GET, "/api/v1/status?user=local", None),
        route(Method::POST, "/api/v1/messages", Some(msg)),
        route(Method::POST, "/api/v1/actions", Some(json!({"conversation": "c1", "user": "local", "action": "x"}))),
        route(Method::GET, "/api/v1/conversations?user=local", None),
        route(Method::PATCH, "/api/v1/conversations/c1", Some(json!({"user": "local", "title": "t"}))),
        route(Method::DELETE, "/api/v1/conversations/c1?user=local", None),
        route(Method::GET, "/api/v1/conversations/c1/messages", None),
        route(Method::GET, "/api/v1/conversations/c1/stream", None),
        route(Method::POST, "/api/v1/files?name=a.txt&user=local", None),
        route(Method::GET, "/api/v1/files/0123456789abcdef0123456789abcdef", None),
        route(Method::GET, "/v1/models", None),
        route(Method::GET, "/v1/models/butler", None),
        route(Method::POST, "/v1/chat/completions", Some(chat)),
        route(Method::POST, "/hooks/github", Some(json!({"zen": "hi"}))),
        route(Method::POST, "/channels/telegram/webhook", Some(json!({"update_id": 1}))),
        route(Method::POST, "/channels/slack/events", Some(json!({"type": "url_verification"}))),
        route(Method::POST, "/channels/discord/interactions", Some(json!({"type": 1}))),
        route(Method::GET, "/no/such/path", None),
    ]
}

fn is_state_changing(m: &Method) -> bool {
    !matches!(*m, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// Sends `r` with the given `Host` and `Origin`; returns the status and JSON body (the body of
/// an open event stream is not read).
async fn send(app: &TestApp, r: &Route, host: &str, origin: Option<&str>) -> (u16, Value) {
    let mut req = app.http.request(r.method.clone(), app.url(r.path)).header("host", host);
    if let Some(o) = origin {
        req = req.header("origin", o);
    }
    req = match (&r.body, r.path.starts_with("/api/v1/files")) {
        (_, true) => req.header("content-type", "text/plain").body("file bytes"),
        (Some(b), false) => req.json(b),
        (None, false) => req,
    };
    let resp = req.timeout(std::time::Duration::from_secs(10)).send().await.expect("an answer");
    let status = resp.status().as_u16();
    let json_type = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if r.path.ends_with("/stream") && status == 200 {
        return (status, Value::Null);
    }
    let body = if json_type { resp.json().await.unwrap_or(Value::Null) } else { Value::Null };
    (status, body)
}

async fn conversations(app: &TestApp) -> Vec<Value> {
    let host = app.base.trim_start_matches("http://").to_string();
    let r = app.http.get(app.url("/api/v1/conversations?user=local")).header("host", host).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    v["conversations"].as_array().cloned().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_token_only_this_machines_names_are_served_on_every_route() {
    let llm = FakeLlm::start().await;
    llm.set_default(Reply::text("hi"));
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    cfg.server.allowed_hosts = vec!["butler.example.com".into()];
    let app = TestApp::start(cfg, Some(dir)).await;
    let port = app.app.addr.unwrap().port();
    let foreign = [
        format!("rebind.evil.example:{port}"),
        "rebind.evil.example".to_string(),
        format!("127.0.0.1.nip.io:{port}"),
        format!("localhost:{}", port + 1),
        "butler.example.com.evil.example".to_string(),
    ];
    for r in every_route() {
        for host in &foreign {
            let (status, body) = send(&app, &r, host, None).await;
            assert_eq!(status, 403, "{} {} with Host {host}: {body}", r.method, r.path);
            assert_eq!(body["error"]["code"], "host_not_allowed", "{} {}: {body}", r.method, r.path);
            assert!(body["error"]["message"].as_str().unwrap().contains("allowed_hosts"), "{body}");
        }
    }
    // Nothing the refused requests asked for happened.
    assert!(conversations(&app).await.is_empty(), "nothing stored");
    assert_eq!(llm.request_count(), 0, "the model was never asked");

    // This machine's names (with the port) and the configured name are served.
    let info = route(Method::GET, "/api/v1/info", None);
    for host in [format!("127.0.0.1:{port}"), format!("localhost:{port}"), format!("[::1]:{port}")] {
        assert_eq!(send(&app, &info, &host, None).await.0, 200, "Host {host}");
    }
    for host in ["butler.example.com", "butler.example.com:443", "BUTLER.example.com"] {
        assert_eq!(send(&app, &info, host, None).await.0, 200, "allowed_hosts: Host {host}");
    }
    for r in every_route() {
        let (status, body) = send(&app, &r, &format!("localhost:{port}"), None).await;
        assert_ne!(body["error"]["code"], "host_not_allowed", "{} {}: {status} {body}", r.method, r.path);
    }
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_token_other_sites_cannot_change_anything() {
    let llm = FakeLlm::start().await;
    llm.set_default(Reply::text("hi"));
    let (cfg, dir) = config(Some(&llm.openai_url()));
    let app = TestApp::start(cfg, Some(dir)).await;
    let port = app.app.addr.unwrap().port();
    let host = format!("127.0.0.1:{port}");
    let foreign = [
        format!("http://rebind.evil.example:{port}"),
        "https://evil.example".to_string(),
        "null".to_string(),
        format!("http://127.0.0.1:{}", port + 1),
    ];
    for r in every_route().into_iter().filter(|r| is_state_changing(&r.method)) {
        for origin in &foreign {
            let (status, body) = send(&app, &r, &host, Some(origin)).await;
            assert_eq!(status, 403, "{} {} from {origin}: {body}", r.method, r.path);
            assert_eq!(body["error"]["code"], "origin_not_allowed", "{} {}: {body}", r.method, r.path);
        }
    }
    assert!(conversations(&app).await.is_empty(), "nothing stored");
    assert_eq!(llm.request_count(), 0, "the model was never asked");
    // Reads from another origin are the browser's business (no CORS headers are given).
    let list = route(Method::GET, "/api/v1/conversations?user=local", None);
    assert_eq!(send(&app, &list, &host, Some("https://evil.example")).await.0, 200);
    // Butler's own page, under either of its names, may post.
    let msg =
        route(Method::POST, "/api/v1/messages", Some(json!({"conversation": "c1", "user": "local", "text": "hi"})));
    for origin in [format!("http://127.0.0.1:{port}"), format!("http://localhost:{port}")] {
        let (status, body) = send(&app, &msg, &host, Some(&origin)).await;
        assert_eq!(status, 202, "from {origin}: {body}");
    }
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_token_hosts_and_origins_are_left_to_the_token() {
    let (mut cfg, dir) = config(None);
    cfg.channels.web.token = Some(butler::config::Secret::new("t0ken-for-the-owner"));
    let app = TestApp::start(cfg, Some(dir)).await;
    let r = app
        .http
        .post(app.url("/api/v1/messages"))
        .header("host", "butler.example.org")
        .header("origin", "https://butler.example.org")
        .bearer_auth("t0ken-for-the-owner")
        .json(&json!({"conversation": "c1", "text": "hi"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202, "{:?}", r.text().await);
    app.stop().await;
}

/// Content types a page on another site can send without a preflight, and none at all.
const NOT_JSON: &[Option<&str>] = &[
    Some("text/plain"),
    Some("text/plain; charset=utf-8"),
    Some("application/x-www-form-urlencoded"),
    Some("multipart/form-data; boundary=x"),
    None,
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_routes_take_only_json_in_their_own_error_shape() {
    let llm = FakeLlm::start().await;
    llm.set_default(Reply::text("hi"));
    let (cfg, dir) = config(Some(&llm.openai_url()));
    let app = TestApp::start(cfg, Some(dir)).await;
    // (method, path, body, OpenAI's error shape)
    let routes: &[(Method, &str, Value, bool)] = &[
        (Method::POST, "/api/v1/messages", json!({"conversation": "c1", "user": "local", "text": "CALL:now{}"}), false),
        (Method::POST, "/api/v1/actions", json!({"conversation": "c1", "user": "local", "action": "x"}), false),
        (Method::PATCH, "/api/v1/conversations/c1", json!({"user": "local", "title": "t"}), false),
        (
            Method::POST,
            "/v1/chat/completions",
            json!({"model": "m", "messages": [{"role": "user", "content": "CALL:file_list{}"}]}),
            true,
        ),
    ];
    for (method, path, body, openai) in routes {
        for ct in NOT_JSON {
            let mut req = app.http.request(method.clone(), app.url(path)).body(body.to_string());
            if let Some(ct) = ct {
                req = req.header("content-type", *ct);
            }
            let r = req.send().await.unwrap();
            let status = r.status().as_u16();
            let got: Value = r.json().await.unwrap_or(Value::Null);
            assert_eq!(status, 415, "{method} {path} as {ct:?}: {got}");
            assert_eq!(got["error"]["code"], "unsupported_media_type", "{method} {path} as {ct:?}: {got}");
            assert_eq!(got["error"]["type"], "invalid_request_error", "{got}");
            if *openai {
                let e = got["error"].as_object().unwrap();
                assert!(e.contains_key("param") && e.contains_key("message"), "OpenAI's shape: {got}");
            }
        }
    }
    assert!(conversations(&app).await.is_empty(), "nothing stored");
    assert_eq!(llm.request_count(), 0, "no turn ran");
    // The same requests as JSON are taken.
    let r = app.http.post(app.url("/v1/chat/completions")).json(&routes[3].2).send().await.unwrap();
    assert_eq!(r.status(), 200);
    app.stop().await;
}
