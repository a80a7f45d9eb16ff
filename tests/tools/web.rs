//! web_fetch against a local server counted as public: the size cap (also on an endless body),
//! the time limit (slow headers and a stalled body), HTML turned into readable text.

use crate::{err_text, serve, Harness};
use axum::body::Body;
use axum::http::header;
use axum::routing::get;
use axum::Router;
use butler::config::WebFetchConfig;
use butler::tools::builtin::{NetGuard, WebFetch};
use bytes::Bytes;
use serde_json::json;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

const PAGE: &str = r#"<!DOCTYPE html><html><head><title>Tea &amp; Cake</title>
<style>body { color: red }</style><script>var secret = "do not show";</script></head>
<body><h1>Menu</h1><p>Earl&nbsp;Grey &mdash; &pound;3 &lt;hot&gt; &#39;fresh&#x27;</p>
<p>See <a href="/prices?x=1&amp;y=2">the prices</a> or <a href="https://other.example/">elsewhere</a>.</p>
<noscript>enable js</noscript><ul><li>scones</li><li>jam</li></ul></body></html>"#;

async fn server() -> SocketAddr {
    let app = Router::new()
        .route("/page", get(|| async { ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], PAGE) }))
        .route("/big", get(|| async { "a".repeat(100_000) }))
        .route(
            "/endless",
            get(|| async {
                let chunks = futures::stream::repeat_with(|| Ok::<_, std::io::Error>(Bytes::from(vec![b'z'; 4096])));
                Body::from_stream(chunks)
            }),
        )
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(20)).await;
                "late"
            }),
        )
        .route(
            "/stall",
            get(|| async {
                let first = futures::stream::once(async { Ok::<_, std::io::Error>(Bytes::from_static(b"start ")) });
                let never = futures::stream::pending();
                Body::from_stream(futures::StreamExt::chain(first, never))
            }),
        )
        .route("/json", get(|| async { axum::Json(json!({"ok": true})) }))
        .route("/bin", get(|| async { ([(header::CONTENT_TYPE, "image/png")], vec![0u8, 159, 146, 150]) }));
    serve(app).await
}

fn tool(max_bytes: usize, timeout_secs: u64) -> WebFetch {
    let cfg = WebFetchConfig { enabled: true, max_bytes, timeout_secs, max_redirects: 5 };
    let guard = NetGuard::public_only().with_public_override(Arc::new(|ip: IpAddr| ip == IpAddr::from([127, 0, 0, 1])));
    WebFetch::with_guard(&cfg, guard).unwrap()
}

#[tokio::test]
async fn html_becomes_readable_text() {
    let h = Harness::new().await;
    let addr = server().await;
    let out = h.call(&tool(100_000, 5), json!({"url": format!("http://{addr}/page")})).await.unwrap();
    assert!(out.starts_with(&format!("URL: http://{addr}/page\nStatus: 200 OK\nContent-Type: text/html")), "{out}");
    let body = out.split_once("\n\n").unwrap().1;
    for want in [
        "Tea & Cake",
        "Menu",
        "Earl Grey — £3 <hot> 'fresh'",
        &format!("the prices (http://{addr}/prices?x=1&y=2)"),
        "elsewhere (https://other.example/)",
        "- scones\n- jam",
    ] {
        assert!(body.contains(want), "missing {want:?} in:\n{body}");
    }
    for gone in ["do not show", "color: red", "enable js", "<p>", "&amp;", "&mdash;"] {
        assert!(!body.contains(gone), "{gone:?} left in:\n{body}");
    }
    let json_out = h.call(&tool(100_000, 5), json!({"url": format!("http://{addr}/json")})).await.unwrap();
    assert!(json_out.ends_with("{\"ok\":true}"), "{json_out}");
    let bin = h.call(&tool(100_000, 5), json!({"url": format!("http://{addr}/bin")})).await.unwrap();
    assert!(bin.contains("binary content, 4 bytes"), "{bin}");
}

#[tokio::test]
async fn responses_are_cut_at_max_bytes() {
    let h = Harness::new().await;
    let addr = server().await;
    for path in ["/big", "/endless"] {
        let started = Instant::now();
        let out = h.call(&tool(1000, 5), json!({"url": format!("http://{addr}{path}")})).await.unwrap();
        assert!(started.elapsed() < Duration::from_secs(4), "{path} took {:?}", started.elapsed());
        assert!(out.ends_with("[… response cut at 1000 bytes (web_fetch.max_bytes)]"), "{path}: {out}");
        let body = out.split_once("\n\n").unwrap().1.split("\n[…").next().unwrap();
        let letters = body.chars().filter(|c| *c == 'a' || *c == 'z').count();
        assert_eq!(letters, 1000, "{path}");
    }
}

#[tokio::test]
async fn requests_stop_at_the_timeout() {
    let h = Harness::new().await;
    let addr = server().await;
    for path in ["/slow", "/stall"] {
        let started = Instant::now();
        let e = err_text(h.call(&tool(100_000, 1), json!({"url": format!("http://{addr}{path}")})).await);
        let took = started.elapsed();
        assert!(e.contains("timed out after 1 s"), "{path}: {e}");
        assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(4), "{path} took {took:?}");
    }
}

#[tokio::test]
async fn a_stopped_turn_stops_the_fetch() {
    let mut h = Harness::new().await;
    let addr = server().await;
    let cancel = tokio_util::sync::CancellationToken::new();
    h.ctx.cancel = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let e = err_text(h.call(&tool(100_000, 10), json!({"url": format!("http://{addr}/slow")})).await);
    assert!(e.contains("stopped") && started.elapsed() < Duration::from_secs(3), "{e}");
}

#[tokio::test]
async fn bad_urls_are_invalid_arguments() {
    let h = Harness::new().await;
    for url in ["not a url", "", "http://"] {
        let e = h.call(&tool(1000, 1), json!({ "url": url })).await.unwrap_err();
        assert!(matches!(e, butler::tools::ToolError::InvalidArgs(_)), "{url}: {e}");
    }
}
