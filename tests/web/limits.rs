//! Connection limits (issue 13, point 2): slowloris, silent and idle keep-alive connections are
//! closed after `[server] header_timeout_secs`; a declared oversize body gets 413 before it is
//! sent, a slow body 408; with `[server] max_connections` reached `/healthz` and `/readyz`
//! still answer and the API says 503; the real binary raises its open-file limit, logs it and
//! keeps its connections below it. Timeouts are checked as bounds, never as speeds.

use crate::support::app::{config, TestApp};
use crate::support::proc::without_ansi;
use crate::support::proc::{Deployment, Server};
use serde_json::Value;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long a test waits for something that a 1 s timeout should cause.
const BOUND: Duration = Duration::from_secs(10);

fn addr(app: &TestApp) -> SocketAddr {
    app.app.addr.expect("listening")
}

/// True when the server closes `read` within `within` (EOF or reset); whatever it sends before
/// closing is skipped.
async fn closed_within(read: &mut (impl AsyncReadExt + Unpin), within: Duration) -> bool {
    let mut buf = [0u8; 1024];
    tokio::time::timeout(within, async {
        loop {
            match read.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => continue,
            }
        }
    })
    .await
    .is_ok()
}

/// Reads one HTTP/1.1 response (head and a `Content-Length` body) within [`BOUND`].
async fn read_response(s: &mut (impl AsyncReadExt + Unpin)) -> (u16, String, Value) {
    tokio::time::timeout(BOUND, async {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        let head_end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            let n = s.read(&mut chunk).await.expect("read");
            assert!(n > 0, "closed before a response: {:?}", String::from_utf8_lossy(&buf));
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_lowercase();
        let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).expect("a status");
        let len: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .map(|v| v.trim().parse().unwrap())
            .unwrap_or(0);
        while buf.len() < head_end + len {
            let n = s.read(&mut chunk).await.expect("read body");
            assert!(n > 0, "closed in the body");
            buf.extend_from_slice(&chunk[..n]);
        }
        let body = serde_json::from_slice(&buf[head_end..head_end + len]).unwrap_or(Value::Null);
        (status, head, body)
    })
    .await
    .expect("a response in time")
}

#[derive(Clone, Copy, Debug)]
enum Client {
    /// Connects and sends nothing.
    Silent,
    /// Sends a partial request head, then one byte every 200 ms, forever.
    Slowloris,
    /// One complete request, then waits idle on the kept-alive connection.
    KeptAlive,
}

#[tokio::test]
async fn slow_silent_and_idle_connections_are_closed_after_the_header_timeout() {
    let (mut cfg, dir) = config(None);
    cfg.server.header_timeout_secs = 1;
    let app = TestApp::start(cfg, Some(dir)).await;
    let host = addr(&app);
    for client in [Client::Silent, Client::Slowloris, Client::KeptAlive] {
        let mut s = TcpStream::connect(addr(&app)).await.unwrap();
        match client {
            Client::Silent => {}
            Client::Slowloris => {
                s.write_all(format!("GET /healthz HTTP/1.1\r\nHost: {host}\r\nX-Slow: ").as_bytes()).await.unwrap();
            }
            Client::KeptAlive => {
                s.write_all(format!("GET /healthz HTTP/1.1\r\nHost: {host}\r\n\r\n").as_bytes()).await.unwrap();
                let (status, head, _) = read_response(&mut s).await;
                assert_eq!(status, 200, "{client:?}");
                assert!(!head.contains("connection: close"), "{client:?}: kept alive: {head}");
            }
        }
        let (mut read, mut write) = s.into_split();
        let drip = matches!(client, Client::Slowloris).then(|| {
            tokio::spawn(async move {
                while write.write_all(b"a").await.is_ok() {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            })
        });
        assert!(closed_within(&mut read, BOUND).await, "{client:?}: still open {BOUND:?} after a 1 s timeout");
        if let Some(d) = drip {
            d.abort();
        }
    }
    // The server still serves.
    assert_eq!(app.http.get(app.url("/healthz")).send().await.unwrap().status(), 200);
    app.stop().await;
}

/// One raw request: its head and the first bytes of its body.
struct BodyCase {
    name: &'static str,
    head: String,
    sent: Vec<u8>,
    status: u16,
    code: &'static str,
}

fn declared(name: &'static str, path: &str, length: usize, status: u16, code: &'static str) -> BodyCase {
    BodyCase {
        name,
        head: format!(
            "POST {path} HTTP/1.1\r\nHost: localhost:{{port}}\r\nContent-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
        ),
        sent: b"{\"".to_vec(),
        status,
        code,
    }
}

#[tokio::test]
async fn oversize_and_slow_bodies_are_refused_without_waiting_for_them() {
    let (mut cfg, dir) = config(None);
    cfg.server.max_body_bytes = 4096;
    cfg.server.body_timeout_secs = 1;
    let app = TestApp::start(cfg, Some(dir)).await;
    let mut chunked = format!("{:x}\r\n", 5000).into_bytes();
    chunked.extend(std::iter::repeat_n(b'x', 5000));
    chunked.extend_from_slice(b"\r\n");
    let cases = vec![
        declared("declared oversize, web API", "/api/v1/messages", 100_000, 413, "body_too_large"),
        declared("declared oversize, hooks", "/hooks/github", 10_000_000, 413, "body_too_large"),
        declared("declared oversize, unknown route", "/nothing/here", 4097, 413, "body_too_large"),
        declared("slow body", "/api/v1/messages", 40, 408, "request_timeout"),
        BodyCase {
            name: "chunked past the limit",
            head: "POST /hooks/github HTTP/1.1\r\nHost: localhost:{port}\r\nContent-Type: application/json\r\n\
                   Transfer-Encoding: chunked\r\n\r\n"
                .into(),
            sent: chunked,
            status: 413,
            code: "body_too_large",
        },
    ];
    let port = addr(&app).port().to_string();
    for c in cases {
        let mut s = TcpStream::connect(addr(&app)).await.unwrap();
        s.write_all(c.head.replace("{port}", &port).as_bytes()).await.unwrap();
        s.write_all(&c.sent).await.unwrap();
        // The rest of the body is never sent: the answer must not wait for it.
        let (status, head, body) = read_response(&mut s).await;
        assert_eq!(status, c.status, "{}: {head} {body}", c.name);
        assert!(head.contains("content-type: application/json"), "{}: {head}", c.name);
        assert_eq!(body["error"]["code"], c.code, "{}: {body}", c.name);
        assert!(body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{}: {body}", c.name);
    }
    // A body within the limits still goes through.
    assert_eq!(app.post("c1", "local", "hello").await.0, 202);
    app.stop().await;
}

/// A client with no pooled connections, so each request opens its own.
fn fresh_client() -> reqwest::Client {
    reqwest::Client::builder().pool_max_idle_per_host(0).timeout(Duration::from_secs(5)).build().unwrap()
}

async fn status_of(base: &str, path: &str) -> Option<(u16, Value)> {
    let r = fresh_client().get(format!("{base}{path}")).send().await.ok()?;
    let status = r.status().as_u16();
    Some((status, r.json().await.unwrap_or(Value::Null)))
}

/// Polls `path` until it answers `want`, up to `within`.
async fn until_status(base: &str, path: &str, want: u16, within: Duration) -> Option<(u16, Value)> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let got = status_of(base, path).await;
        if got.as_ref().is_some_and(|(s, _)| *s == want) || tokio::time::Instant::now() > deadline {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn idle_connections(addr: SocketAddr, n: usize) -> Vec<TcpStream> {
    let mut held = Vec::with_capacity(n);
    for _ in 0..n {
        held.push(TcpStream::connect(addr).await.expect("connect"));
    }
    held
}

#[tokio::test]
async fn health_answers_while_the_connection_cap_is_reached() {
    let (mut cfg, dir) = config(None);
    cfg.server.max_connections = 20;
    cfg.server.header_timeout_secs = 60;
    let app = TestApp::start(cfg, Some(dir)).await;
    let held = idle_connections(addr(&app), 20).await;
    for path in ["/healthz", "/readyz"] {
        let got = status_of(&app.base, path).await;
        assert_eq!(got.map(|g| g.0), Some(200), "{path} with the cap reached");
    }
    let (status, body) = status_of(&app.base, "/api/v1/info").await.expect("an answer over the cap");
    assert_eq!((status, &body["error"]["code"]), (503, &Value::from("overloaded")), "{body}");
    drop(held);
    let got = until_status(&app.base, "/api/v1/info", 200, BOUND).await;
    assert_eq!(got.map(|g| g.0), Some(200), "the API again once the idle connections left");
    app.stop().await;
}

/// Sets the child's open-file limit (soft, hard) before it runs.
fn with_fd_limit(cmd: &mut std::process::Command, soft: u64, hard: u64) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure only calls setrlimit, which is async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit { rlim_cur: soft as libc::rlim_t, rlim_max: hard as libc::rlim_t };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[tokio::test]
async fn the_binary_raises_its_fd_limit_and_keeps_connections_below_it() {
    // This test holds more sockets than a soft limit of 1024 might allow.
    butler::http::raise_fd_limit();
    let dep = Deployment::new("");
    let text = std::fs::read_to_string(&dep.config).unwrap();
    std::fs::write(
        &dep.config,
        text.replace("shutdown_grace_secs = 10", "shutdown_grace_secs = 2\nheader_timeout_secs = 60"),
    )
    .unwrap();
    let log = dep.dir.path().join("serve-limits.log");
    let mut cmd = dep.command(&["serve"]);
    cmd.stdout(std::process::Stdio::null()).stderr(std::fs::File::create(&log).unwrap());
    with_fd_limit(&mut cmd, 128, 256);
    let mut server = Server { child: cmd.spawn().expect("spawn butler serve"), log };
    server.wait_ready(&dep.base()).await;
    let logged = without_ansi(&server.log_text());
    let line = logged.lines().find(|l| l.contains("fd_limit")).unwrap_or_else(|| panic!("no fd_limit line:\n{logged}"));
    let cap = (256 - butler::http::FD_HEADROOM as usize - butler::http::HEALTH_RESERVE) / 2;
    assert!(line.contains("soft=256 hard=256 was=128"), "{line}");
    assert!(line.contains(&format!("max_connections={cap}")), "{line}");

    // More idle connections than the process has file descriptors.
    let addr: SocketAddr = format!("127.0.0.1:{}", dep.port).parse().unwrap();
    let held = idle_connections(addr, 300).await;
    let got = until_status(&dep.base(), "/healthz", 200, BOUND).await;
    assert_eq!(got.map(|g| g.0), Some(200), "/healthz with 300 idle connections; log:\n{}", server.log_text());
    let got = status_of(&dep.base(), "/api/v1/info").await;
    assert_eq!(got.map(|g| g.0), Some(503), "the API over the cap");
    drop(held);
    let got = until_status(&dep.base(), "/api/v1/info", 200, BOUND).await;
    assert_eq!(got.map(|g| g.0), Some(200), "the API once the connections left");
    let logged = server.log_text();
    assert!(!logged.contains("Too many open files"), "{logged}");
    assert!(server.terminate(Duration::from_secs(20)).await.success());
}

/// Holds `n` idle connections from 127.0.0.1 to `addr` and re-opens each one the server
/// closes, until `stop` (or a minute at most); returns how many connections it opened.
fn flood(addr: SocketAddr, n: usize, stop: tokio_util::sync::CancellationToken) -> tokio::task::JoinSet<usize> {
    let mut set = tokio::task::JoinSet::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    for _ in 0..n {
        let stop = stop.clone();
        set.spawn(async move {
            let mut opened = 0;
            while !stop.is_cancelled() && tokio::time::Instant::now() < deadline {
                let Ok(Ok(mut s)) = tokio::time::timeout(Duration::from_secs(1), TcpStream::connect(addr)).await else {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                opened += 1;
                let mut buf = [0u8; 256];
                tokio::select! {
                    _ = stop.cancelled() => {}
                    _ = async { while matches!(s.read(&mut buf).await, Ok(n) if n > 0) {} } => {}
                }
            }
            opened
        });
    }
    set
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_client_flooding_connections_keeps_neither_probes_nor_other_clients_out() {
    butler::http::raise_fd_limit();
    let (mut cfg, dir) = config(None);
    cfg.server.max_connections = 200;
    cfg.server.max_connections_per_client = 32;
    cfg.server.header_timeout_secs = 2;
    let app = TestApp::start(cfg, Some(dir)).await;
    let stop = tokio_util::sync::CancellationToken::new();
    // As in the probe's flood (1,100 idle connections against max_connections = 1024): 220
    // idle connections from 127.0.0.1, each re-opened as soon as Butler closes it.
    let flooding = flood(addr(&app), 220, stop.clone());
    tokio::time::sleep(Duration::from_secs(1)).await;

    // Health probes from the flooding address itself, each on a new connection.
    let mut health_ok = 0;
    for _ in 0..60 {
        if status_of(&app.base, "/healthz").await.is_some_and(|(s, _)| s == 200) {
            health_ok += 1;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Another client (127.0.0.2) sends messages.
    let other = reqwest::Client::builder()
        .local_address(Some("127.0.0.2".parse().unwrap()))
        .pool_max_idle_per_host(0)
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let mut accepted = 0;
    for i in 0..20 {
        let body = serde_json::json!({"conversation": "other", "user": "local", "text": format!("message {i}")});
        let r = other.post(app.url("/api/v1/messages")).json(&body).send().await;
        if r.is_ok_and(|r| r.status() == 202) {
            accepted += 1;
        }
    }
    stop.cancel();
    let opened: usize = flooding.join_all().await.into_iter().sum();
    assert!(opened > 220, "the flood re-opened closed connections ({opened} opened)");
    assert_eq!(health_ok, 60, "health answers during the flood ({opened} flood connections opened)");
    assert_eq!(accepted, 20, "another client's messages are accepted during the flood");
    app.stop().await;
}

#[tokio::test]
async fn a_slow_upload_gets_408_within_the_body_timeout() {
    let (mut cfg, dir) = config(None);
    cfg.server.body_timeout_secs = 1;
    let app = TestApp::start(cfg, Some(dir)).await;
    let a = addr(&app);
    let s = TcpStream::connect(a).await.unwrap();
    let (mut read, mut write) = s.into_split();
    let head = format!(
        "POST /api/v1/files?user=local&name=slow.bin HTTP/1.1\r\nHost: {a}\r\n\
         Content-Type: application/octet-stream\r\nContent-Length: 1000\r\n\r\n"
    );
    write.write_all(head.as_bytes()).await.unwrap();
    // One byte every 300 ms: far less than a window's worth in a second.
    let drip = tokio::spawn(async move {
        while write.write_all(b"a").await.is_ok() {
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    });
    let (status, head, body) = read_response(&mut read).await;
    drip.abort();
    assert_eq!(status, 408, "{head} {body}");
    assert_eq!(body["error"]["code"], "request_timeout", "{body}");
    assert!(head.contains("connection: close"), "{head}");
    // A normal upload still goes through.
    let r = app.http.post(app.url("/api/v1/files?user=local&name=a.txt")).body("hello").send().await.unwrap();
    assert_eq!(r.status(), 201);
    app.stop().await;
}
