//! SSRF: web_fetch refuses every non-public address however it is written, after DNS
//! resolution, and on every redirect hop. A "secret" server on 127.0.0.2 counts its hits, so a
//! refusal that came too late (after connecting) fails the test.

use crate::{err_text, serve_on, Harness};
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use butler::config::WebFetchConfig;
use butler::tools::builtin::{NetGuard, WebFetch};
use serde_json::json;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The "internal" server: anything that reaches it counts.
async fn secret_server() -> (SocketAddr, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let app = Router::new().fallback(|State(h): State<Arc<AtomicUsize>>| async move {
        h.fetch_add(1, Ordering::SeqCst);
        "internal secret"
    });
    (serve_on("127.0.0.2", app.with_state(hits.clone())).await, hits)
}

fn fetcher(guard: NetGuard) -> WebFetch {
    let cfg = WebFetchConfig { enabled: true, max_bytes: 100_000, timeout_secs: 5, max_redirects: 5 };
    WebFetch::with_guard(&cfg, guard).unwrap()
}

fn loopback1(ip: IpAddr) -> bool {
    ip == IpAddr::from([127, 0, 0, 1])
}

#[tokio::test]
async fn refuses_non_public_addresses_in_every_spelling() {
    let h = Harness::new().await;
    let (secret, hits) = secret_server().await;
    let port = secret.port();
    // The production guard (real DNS for names), plus names that resolve to local addresses.
    let guard = NetGuard::public_only()
        .with_static_host("public-looking.example", vec!["127.0.0.2".parse().unwrap()])
        .with_static_host("mixed.example", vec!["93.184.216.34".parse().unwrap(), "10.0.0.1".parse().unwrap()])
        .with_static_host("mapped.example", vec!["::ffff:127.0.0.2".parse().unwrap()]);
    let tool = fetcher(guard);
    let cases = [
        format!("http://127.0.0.2:{port}/"),
        format!("http://127.0.0.1:{port}/"),
        format!("http://localhost:{port}/"),
        format!("http://LOCALHOST.:{port}/"),
        format!("http://[::1]:{port}/"),
        format!("http://10.0.0.1:{port}/"),
        format!("http://172.16.5.4:{port}/"),
        format!("http://192.168.1.1:{port}/"),
        format!("http://100.64.0.1:{port}/"),
        "http://169.254.169.254/latest/meta-data/".to_string(),
        "http://metadata.google.internal/computeMetadata/v1/".to_string(),
        "http://metadata.google.internal./computeMetadata/v1/".to_string(),
        "http://metadata/".to_string(),
        format!("http://0.0.0.0:{port}/"),
        format!("http://[::]:{port}/"),
        format!("http://[::ffff:127.0.0.2]:{port}/"),
        "http://[::ffff:169.254.169.254]/".to_string(),
        "http://[::ffff:a9fe:a9fe]/".to_string(),
        format!("http://[fe80::1]:{port}/"),
        "http://[fd00:ec2::254]/".to_string(),
        format!("http://[fc00::1]:{port}/"),
        // Decimal, hex, octal and short forms: the URL parser turns them into 127.0.0.2.
        format!("http://2130706434:{port}/"),
        format!("http://0x7f000002:{port}/"),
        format!("http://0177.0.0.2:{port}/"),
        format!("http://0x7f.0.0.2:{port}/"),
        format!("http://127.2:{port}/"),
        format!("http://017700000002:{port}/"),
        format!("http://127.0.0.2.:{port}/"),
        // Names that resolve to local addresses.
        format!("http://public-looking.example:{port}/"),
        format!("http://mixed.example:{port}/"),
        format!("http://mapped.example:{port}/"),
        // Other schemes.
        "file:///etc/passwd".to_string(),
        "ftp://127.0.0.2/".to_string(),
    ];
    for url in &cases {
        let e = err_text(h.call(&tool, json!({ "url": url })).await);
        assert!(e.contains("refused"), "{url}: {e}");
    }
    assert_eq!(hits.load(Ordering::SeqCst), 0, "a refused request reached the internal server");

    // Control: with 127.0.0.2 counted as public the same guard reaches the server, so the
    // refusals above are the guard's doing.
    let open = fetcher(NetGuard::public_only().with_public_override(Arc::new(|ip| ip == IpAddr::from([127, 0, 0, 2]))));
    let out = h.call(&open, json!({ "url": format!("http://127.0.0.2:{port}/") })).await.unwrap();
    assert!(out.contains("internal secret"), "{out}");
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn every_redirect_hop_is_checked() {
    let h = Harness::new().await;
    let (secret, hits) = secret_server().await;
    let sp = secret.port();
    let to = |loc: String| move || async move { (StatusCode::FOUND, [(header::LOCATION, loc)]) };
    let app = Router::new()
        .route("/to-secret-ip", get(to(format!("http://127.0.0.2:{sp}/x"))))
        .route("/to-secret-name", get(to(format!("http://internal.example:{sp}/x"))))
        .route("/to-localhost", get(to(format!("http://localhost:{sp}/x"))))
        .route("/to-metadata", get(to("http://169.254.169.254/latest/meta-data/".into())))
        .route("/to-mapped", get(to(format!("http://[::ffff:7f00:2]:{sp}/x"))))
        .route("/to-decimal", get(to(format!("http://2130706434:{sp}/x"))))
        .route("/to-file", get(to("file:///etc/passwd".into())))
        .route("/to-page", get(to("/page".into())))
        .route("/page", get(|| async { "landed" }))
        .route("/loop", get(to("/loop".into())));
    let public = serve_on("127.0.0.1", app).await;
    // The test server on 127.0.0.1 counts as public; 127.0.0.2 and everything else does not.
    let guard = NetGuard::public_only()
        .with_public_override(Arc::new(loopback1))
        .with_static_host("internal.example", vec!["127.0.0.2".parse().unwrap()]);
    let tool = fetcher(guard);
    for path in
        ["/to-secret-ip", "/to-secret-name", "/to-localhost", "/to-metadata", "/to-mapped", "/to-decimal", "/to-file"]
    {
        let e = err_text(h.call(&tool, json!({ "url": format!("http://{public}{path}") })).await);
        assert!(e.contains("refused"), "{path}: {e}");
    }
    assert_eq!(hits.load(Ordering::SeqCst), 0, "a redirect reached the internal server");

    let out = h.call(&tool, json!({ "url": format!("http://{public}/to-page") })).await.unwrap();
    assert!(out.contains("landed") && out.contains("/page"), "{out}");
    let e = err_text(h.call(&tool, json!({ "url": format!("http://{public}/loop") })).await);
    assert!(e.contains("too many redirects"), "{e}");

    // Control: when 127.0.0.2 counts as public too, the same redirect does reach it.
    let open = fetcher(NetGuard::public_only().with_public_override(Arc::new(|ip: IpAddr| ip.is_loopback())));
    let out = h.call(&open, json!({ "url": format!("http://{public}/to-secret-ip") })).await.unwrap();
    assert!(out.contains("internal secret"), "{out}");
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn max_redirects_is_the_configured_number() {
    let h = Harness::new().await;
    let app = Router::new().route(
        "/r/{n}",
        get(|axum::extract::Path(n): axum::extract::Path<u32>| async move {
            if n == 0 {
                "done".into_response()
            } else {
                (StatusCode::FOUND, [(header::LOCATION, format!("/r/{}", n - 1))]).into_response()
            }
        }),
    );
    let addr = serve_on("127.0.0.1", app).await;
    let cfg = WebFetchConfig { enabled: true, max_bytes: 10_000, timeout_secs: 5, max_redirects: 2 };
    let tool = WebFetch::with_guard(&cfg, NetGuard::public_only().with_public_override(Arc::new(loopback1))).unwrap();
    assert!(h.call(&tool, json!({"url": format!("http://{addr}/r/2")})).await.unwrap().contains("done"));
    let e = err_text(h.call(&tool, json!({"url": format!("http://{addr}/r/3")})).await);
    assert!(e.contains("too many redirects"), "{e}");
}
