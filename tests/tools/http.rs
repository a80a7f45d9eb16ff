//! http_get and http_request: only hosts in allowed_hosts (also after redirects), any method
//! for http_request, GET only for http_get, and link-local / metadata addresses refused even
//! when local addresses are allowed.

use crate::{err_text, pick, serve, Harness};
use axum::body::Bytes;
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::routing::{any, get};
use axum::Router;
use butler::config::HttpRequestConfig;
use butler::tools::builtin::{http_tools, http_tools_with_guard, NetGuard};
use butler::tools::Tool;
use serde_json::json;
use std::net::SocketAddr;
use std::sync::Arc;

async fn echo_server() -> SocketAddr {
    let app = Router::new()
        .route(
            "/echo",
            any(|method: Method, headers: HeaderMap, body: Bytes| async move {
                let auth = headers.get("x-api-key").and_then(|v| v.to_str().ok()).unwrap_or("-").to_string();
                format!("{method} key={auth} body={}", String::from_utf8_lossy(&body))
            }),
        )
        .route("/to-other", get(|| async { (StatusCode::FOUND, [(header::LOCATION, "http://other.example/")]) }))
        .route("/to-api", get(|| async { (StatusCode::FOUND, [(header::LOCATION, "/echo")]) }));
    serve(app).await
}

fn cfg(hosts: &[&str]) -> HttpRequestConfig {
    HttpRequestConfig {
        allowed_hosts: hosts.iter().map(|s| s.to_string()).collect(),
        max_bytes: 10_000,
        timeout_secs: 5,
        allow_private_addresses: true,
    }
}

/// Names of the allow list resolve to the local test server (local addresses allowed).
fn tools(hosts: &[&str]) -> Vec<Arc<dyn Tool>> {
    let guard = NetGuard::allowing_local()
        .with_static_host("api.example", vec!["127.0.0.1".parse().unwrap()])
        .with_static_host("v1.api.example", vec!["127.0.0.1".parse().unwrap()])
        .with_static_host("other.example", vec!["127.0.0.1".parse().unwrap()]);
    http_tools_with_guard(&cfg(hosts), guard, Default::default()).unwrap()
}

#[tokio::test]
async fn http_request_sends_any_method_to_allowed_hosts() {
    let h = Harness::new().await;
    let port = echo_server().await.port();
    let tools = tools(&["api.example", "*.api.example"]);
    let req = pick(&tools, "http_request");
    assert!(!req.spec().read_only);
    let out = h
        .call(
            &*req,
            json!({"method": "POST", "url": format!("http://api.example:{port}/echo"),
                   "headers": {"X-Api-Key": "k1"}, "body": "{\"a\":1}"}),
        )
        .await
        .unwrap();
    assert!(out.starts_with("Status: 200 OK") && out.ends_with("POST key=k1 body={\"a\":1}"), "{out}");
    for method in ["PUT", "PATCH", "DELETE"] {
        let url = format!("http://v1.api.example:{port}/echo");
        let out = h.call(&*req, json!({"method": method, "url": url})).await.unwrap();
        assert!(out.ends_with(&format!("{method} key=- body=")), "{out}");
    }
    let get = pick(&tools, "http_get");
    assert!(get.spec().read_only);
    let out = h.call(&*get, json!({"url": format!("http://api.example:{port}/echo")})).await.unwrap();
    assert!(out.ends_with("GET key=- body="), "{out}");
    // http_get takes no body and no method.
    let e = h.call(&*get, json!({"url": format!("http://api.example:{port}/echo"), "body": "x"})).await.unwrap_err();
    assert!(e.to_string().contains("unknown field"), "{e}");
    // Same-host redirects are followed.
    let out = h.call(&*get, json!({"url": format!("http://api.example:{port}/to-api")})).await.unwrap();
    assert!(out.ends_with("GET key=- body="), "{out}");
}

/// A GET through either tool (http_get takes no method).
fn get_args(tool: &str, url: &str) -> serde_json::Value {
    if tool == "http_get" {
        json!({ "url": url })
    } else {
        json!({"method": "GET", "url": url})
    }
}

#[tokio::test]
async fn hosts_not_allowed_are_refused() {
    let h = Harness::new().await;
    let port = echo_server().await.port();
    let tools = tools(&["api.example", "*.api.example"]);
    for name in ["http_get", "http_request"] {
        let tool = pick(&tools, name);
        for url in [
            format!("http://other.example:{port}/echo"),
            format!("http://127.0.0.1:{port}/echo"),
            format!("http://localhost:{port}/echo"),
            format!("http://api.example.evil.example:{port}/echo"),
            format!("http://xapi.example:{port}/echo"),
        ] {
            let e = err_text(h.call(&*tool, get_args(name, &url)).await);
            assert!(e.contains("refused") && e.contains("allowed_hosts"), "{name} {url}: {e}");
        }
        // A redirect from an allowed host to another host is refused too.
        let args = get_args(name, &format!("http://api.example:{port}/to-other"));
        let e = err_text(h.call(&*tool, args).await);
        assert!(e.contains("refused") && e.contains("other.example"), "{name}: {e}");
    }
}

#[tokio::test]
async fn metadata_and_local_addresses_stay_refused() {
    let h = Harness::new().await;
    let port = echo_server().await.port();
    // Local addresses allowed, but never link-local / metadata, even when listed.
    let listed =
        http_tools(&cfg(&["169.254.169.254", "metadata.google.internal", "127.0.0.1"]), Default::default()).unwrap();
    let get = pick(&listed, "http_get");
    for url in ["http://169.254.169.254/latest/meta-data/", "http://metadata.google.internal/computeMetadata/v1/"] {
        let e = err_text(h.call(&*get, json!({ "url": url })).await);
        assert!(e.contains("refused"), "{url}: {e}");
    }
    let out = h.call(&*get, json!({"url": format!("http://127.0.0.1:{port}/echo")})).await.unwrap();
    assert!(out.ends_with("GET key=- body="), "{out}");
    // Without allow_private_addresses, a listed host that is local is refused by the guard.
    let strict =
        http_tools(&HttpRequestConfig { allow_private_addresses: false, ..cfg(&["127.0.0.1"]) }, Default::default())
            .unwrap();
    let e =
        err_text(h.call(&*pick(&strict, "http_get"), json!({"url": format!("http://127.0.0.1:{port}/echo")})).await);
    assert!(e.contains("refused") && e.contains("loopback"), "{e}");
}

#[tokio::test]
async fn header_rules() {
    let h = Harness::new().await;
    let port = echo_server().await.port();
    let tools = tools(&["api.example"]);
    let req = pick(&tools, "http_request");
    for header in ["Host", "content-length", "Transfer-Encoding"] {
        let args =
            json!({"method": "POST", "url": format!("http://api.example:{port}/echo"), "headers": {header: "x"}});
        let e = h.call(&*req, args).await.unwrap_err();
        assert!(e.to_string().contains("cannot be set"), "{header}: {e}");
    }
    let e = h
        .call(&*req, json!({"method": "BREW COFFEE", "url": format!("http://api.example:{port}/echo")}))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("not an HTTP method"), "{e}");
}
