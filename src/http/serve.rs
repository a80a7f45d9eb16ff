//! The HTTP server's accept loop: HTTP/1.1 connections served with a header read timeout (which
//! is also the idle keep-alive timeout), a cap on concurrent connections kept below the
//! open-file limit, a cap per client address (`[server] max_connections_per_client`; behind a
//! proxy named in `[server] trusted_proxies`, on the requests in flight of each forwarded client
//! instead), and a graceful stop that lets requests in flight finish. A closing connection is
//! drained for a moment first, so that a refused body (413) does not reset the connection under
//! the answer.
//!
//! A connection over either cap is looked at (peeked, never read) until its request head is
//! complete, for at most the header timeout, among as many such connections as the cap (a
//! newer one closes the oldest): a `/healthz` or `/readyz` request is then served from up to
//! [`HEALTH_RESERVE`] reserved slots, any other request gets a 503 JSON error written without a
//! slot, and a connection that sent nothing is closed. A reserved slot is only ever taken by a
//! health request that has arrived whole, and silent connections are held rather than closed at
//! once (closing invites an immediate re-open, and such churn is what crowded probes out), so
//! a client that holds idle connections and re-opens each one that is closed can neither take
//! the reserve nor keep probes or other clients out.
//! At start the soft open-file limit is raised to the hard one and the result logged.
//! This module must never block the accept loop on a connection, or spawn an untracked task.

use super::clients::{ClientSlot, ClientSlots, Proxies};
use super::error::ApiError;
use crate::config::ServerConfig;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{header, HeaderValue, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

/// File descriptors kept free of client connections: the database pool, Redis, outgoing HTTP
/// (LLM, platforms), channel sockets, log and data files.
pub const FD_HEADROOM: u64 = 128;
/// Connections over the caps that still get `/healthz` and `/readyz`.
pub const HEALTH_RESERVE: usize = 16;
/// The longest pause between two looks at a request head that arrives in pieces.
const LOOK_PAUSE_MAX: Duration = Duration::from_millis(250);
/// The most of a request head looked at over the caps.
const HEAD_MAX: usize = 2048;
/// How long, and how much, a closing connection is drained (see [`linger`]).
const LINGER_TIME: Duration = Duration::from_secs(2);
const LINGER_BYTES: usize = 1 << 20;
/// How often a repeating warning (over the cap, accept failing) is logged at most.
const WARN_EVERY: Duration = Duration::from_secs(10);

/// The open-file limit after [`raise_fd_limit`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FdLimit {
    pub soft: u64,
    pub hard: u64,
    /// The soft limit before raising it.
    pub was: u64,
}

/// Raises the soft `RLIMIT_NOFILE` to the hard limit; None when the limit cannot be read.
#[cfg(unix)]
#[allow(clippy::unnecessary_cast)] // rlim_t is not u64 on every unix
pub fn raise_fd_limit() -> Option<FdLimit> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit only writes the struct we pass, which lives for the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        tracing::warn!(error = %std::io::Error::last_os_error(), "could not read the open-file limit");
        return None;
    }
    let was = lim.rlim_cur as u64;
    if lim.rlim_cur < lim.rlim_max {
        let want = libc::rlimit { rlim_cur: lim.rlim_max, rlim_max: lim.rlim_max };
        // SAFETY: setrlimit only reads the struct we pass.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &want) } == 0 {
            lim.rlim_cur = lim.rlim_max;
        } else {
            tracing::warn!(error = %std::io::Error::last_os_error(), "could not raise the open-file limit");
        }
    }
    Some(FdLimit { soft: lim.rlim_cur as u64, hard: lim.rlim_max as u64, was })
}

#[cfg(not(unix))]
pub fn raise_fd_limit() -> Option<FdLimit> {
    None
}

/// `max_connections` as configured, lowered to fit the soft open-file limit: the room left by
/// [`FD_HEADROOM`] and [`HEALTH_RESERVE`] holds the served connections and as many again being
/// looked at over the caps.
pub(crate) fn effective_max_connections(configured: usize, soft_fd_limit: Option<u64>) -> usize {
    let Some(soft) = soft_fd_limit else { return configured };
    let room = soft.saturating_sub(FD_HEADROOM + HEALTH_RESERVE as u64) / 2;
    configured.min(usize::try_from(room).unwrap_or(usize::MAX)).max(1)
}

/// The server's timeouts and caps, from `[server]`.
#[derive(Clone)]
pub(crate) struct ServeLimits {
    pub header_timeout: Duration,
    pub max_connections: usize,
    pub per_client: usize,
    pub proxies: Proxies,
}

impl ServeLimits {
    /// Raises the open-file limit, logs it, and fits `max_connections` below it.
    pub(crate) fn from_config(cfg: &ServerConfig) -> Self {
        let fd = raise_fd_limit();
        let max_connections = effective_max_connections(cfg.max_connections, fd.map(|f| f.soft));
        match fd {
            Some(f) => tracing::info!(
                soft = f.soft,
                hard = f.hard,
                was = f.was,
                max_connections,
                "fd_limit: open-file limit set"
            ),
            None => tracing::info!(max_connections, "fd_limit: open-file limit unknown"),
        }
        if max_connections < cfg.max_connections {
            tracing::warn!(
                configured = cfg.max_connections,
                effective = max_connections,
                "[server] max_connections lowered to stay below the open-file limit; raise the hard \
                 limit (ulimit -Hn, LimitNOFILE= in systemd) to serve more"
            );
        }
        Self {
            header_timeout: Duration::from_secs(cfg.header_timeout_secs),
            max_connections,
            per_client: cfg.max_connections_per_client,
            proxies: Proxies::new(&cfg.trusted_proxies),
        }
    }
}

/// Serves `router` on `listener` until `stop`, then waits for open connections to finish their
/// requests in flight.
pub(crate) async fn serve(listener: TcpListener, router: Router, limits: ServeLimits, stop: CancellationToken) {
    let normal = Arc::new(Semaphore::new(limits.max_connections));
    let looks = Arc::new(Looks::new(limits.max_connections));
    let shared = Shared {
        reserve: Arc::new(Semaphore::new(HEALTH_RESERVE)),
        clients: ClientSlots::new(limits.per_client),
        proxies: limits.proxies.clone(),
        router,
        header_timeout: limits.header_timeout,
    };
    let connections = TaskTracker::new();
    let mut over_cap = Warn::default();
    let mut accept_failed = Warn::default();
    loop {
        let accepted = tokio::select! {
            _ = stop.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let (tcp, peer) = match accepted {
            Ok(pair) => pair,
            Err(e) => {
                if accept_failed.due() {
                    tracing::warn!(error = %e, "accept failed; retrying");
                }
                tokio::select! {
                    _ = stop.cancelled() => break,
                    _ = tokio::time::sleep(Duration::from_millis(50)) => continue,
                }
            }
        };
        // A trusted proxy carries many clients: they are counted per request instead.
        let proxied = shared.proxies.trusts(peer.ip());
        let client = if proxied { None } else { shared.clients.take(peer.ip()) };
        let permit = (proxied || client.is_some()).then(|| normal.clone().try_acquire_owned().ok()).flatten();
        if let Some(permit) = permit {
            connections.spawn(shared.clone().serve(tcp, peer, (permit, client), stop.clone()));
        } else {
            if over_cap.due() {
                tracing::warn!(
                    max_connections = limits.max_connections,
                    max_connections_per_client = limits.per_client,
                    "connections over [server] max_connections or max_connections_per_client get \
                     health checks and 503 answers only"
                );
            }
            let look = looks.enter().await;
            connections.spawn(shared.clone().over_cap(tcp, peer, look, stop.clone()));
        }
    }
    drop(listener);
    connections.close();
    connections.wait().await;
}

/// What every connection's task shares.
#[derive(Clone)]
struct Shared {
    reserve: Arc<Semaphore>,
    clients: ClientSlots,
    proxies: Proxies,
    router: Router,
    header_timeout: Duration,
}

/// What a normal connection holds while open: its place under the cap, and its client's
/// (none for a trusted proxy's connection).
type Held = (OwnedSemaphorePermit, Option<ClientSlot>);

/// The connections over the caps being looked at, by arrival (ids only grow, so the first is
/// the oldest); entering when full closes the oldest. `live` counts their sockets until each is
/// closed (a pushed-out one included), so the open files they take never pass the cap, however
/// late the pushed-out tasks run.
struct Looks {
    waiting: Mutex<BTreeMap<u64, CancellationToken>>,
    next: AtomicU64,
    live: Arc<Semaphore>,
}

/// One connection's place among [`Looks`]: cancelled when a newer one pushes it out; leaves
/// the waiting list when dropped or when it [`Look::leave`]s; its socket's count goes with
/// `socket`.
struct Look {
    looks: Arc<Looks>,
    id: u64,
    evicted: CancellationToken,
    socket: Option<OwnedSemaphorePermit>,
}

impl Looks {
    fn new(max: usize) -> Self {
        Self { waiting: Mutex::default(), next: AtomicU64::new(0), live: Arc::new(Semaphore::new(max.max(1))) }
    }

    /// A place for a new connection: when all are taken, the oldest one looked at is pushed out
    /// and its socket closed first (a wait for its task, never for a client).
    async fn enter(self: &Arc<Self>) -> Look {
        let socket = match self.live.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                let oldest = self.waiting.lock().unwrap_or_else(|p| p.into_inner()).pop_first();
                if let Some((_, oldest)) = oldest {
                    oldest.cancel();
                }
                self.live.clone().acquire_owned().await.expect("the semaphore is never closed")
            }
        };
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let evicted = CancellationToken::new();
        self.waiting.lock().unwrap_or_else(|p| p.into_inner()).insert(id, evicted.clone());
        Look { looks: self.clone(), id, evicted, socket: Some(socket) }
    }
}

impl Look {
    /// Leaves the waiting list (nothing pushes it out any more); the socket stays counted
    /// until the returned permit is dropped.
    fn leave(mut self) -> Option<OwnedSemaphorePermit> {
        self.socket.take()
    }
}

impl Drop for Look {
    fn drop(&mut self) {
        self.looks.waiting.lock().unwrap_or_else(|p| p.into_inner()).remove(&self.id);
    }
}

/// What a connection over the caps sent while it was looked at.
#[derive(Debug, PartialEq, Eq)]
enum Arrived {
    /// A whole request head for `/healthz` or `/readyz`.
    Health,
    /// A whole request head for anything else.
    Other,
    /// Nothing, or not a whole head.
    Nothing,
}

/// Reads what a request head looks like, within `limit`, without taking it off the connection.
async fn look(tcp: &TcpStream, limit: Duration) -> Arrived {
    let mut buf = vec![0u8; HEAD_MAX];
    let deadline = tokio::time::Instant::now() + limit;
    let mut pause = Duration::from_millis(2);
    loop {
        // Waits for the first bytes; later peeks return what is there at once.
        let n = match tokio::time::timeout_at(deadline, tcp.peek(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => n,
            _ => return Arrived::Nothing,
        };
        let head = &buf[..n];
        if head.windows(4).any(|w| w == b"\r\n\r\n") {
            return if is_health_request(head) { Arrived::Health } else { Arrived::Other };
        }
        if n == HEAD_MAX || tokio::time::Instant::now() + pause >= deadline {
            return Arrived::Nothing;
        }
        // The rest of a head that arrives in pieces: look again a little later each time.
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(LOOK_PAUSE_MAX);
    }
}

/// Whether a request head asks for a health endpoint (`GET` or `HEAD`, any query).
fn is_health_request(head: &[u8]) -> bool {
    let line = head.split(|b| *b == b'\r').next().unwrap_or_default();
    let mut parts = line.split(|b| *b == b' ');
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else { return false };
    let path = target.split(|b| *b == b'?').next().unwrap_or_default();
    matches!(method, b"GET" | b"HEAD") && matches!(path, b"/healthz" | b"/readyz")
}

impl Shared {
    /// A connection over the caps: once its request head is whole, a health request is served
    /// from the reserve and another request gets a 503; a connection that sends no whole head
    /// in time, or is pushed out by a newer one, is closed.
    async fn over_cap(self, tcp: TcpStream, peer: SocketAddr, place: Look, stop: CancellationToken) {
        let arrived = tokio::select! {
            _ = place.evicted.cancelled() => Arrived::Nothing,
            _ = stop.cancelled() => Arrived::Nothing,
            arrived = look(&tcp, self.header_timeout) => arrived,
        };
        let mut socket = place.leave();
        match arrived {
            Arrived::Health => match self.reserve.clone().try_acquire_owned() {
                // From here the reserve counts it.
                Ok(permit) => {
                    drop(socket.take());
                    self.serve_one(tcp, peer, permit, stop).await
                }
                Err(_) => drop(tcp),
            },
            Arrived::Other => {
                let mut tcp = tcp;
                let _ = tokio::time::timeout(LINGER_TIME, tcp.write_all(&BUSY_BYTES)).await;
                linger(tcp).await;
            }
            Arrived::Nothing => drop(tcp),
        }
        drop(socket);
    }

    /// Serves the one health request of a connection over the caps, then closes it.
    async fn serve_one(self, tcp: TcpStream, peer: SocketAddr, permit: OwnedSemaphorePermit, stop: CancellationToken) {
        let router = self.router.clone();
        let service = hyper::service::service_fn(move |req: Request<Incoming>| {
            let router = router.clone();
            Box::pin(async move {
                if !matches!(req.uri().path(), "/healthz" | "/readyz") {
                    return Ok::<_, Infallible>(busy());
                }
                let mut req = req.map(Body::new);
                req.extensions_mut().insert(ConnectInfo(peer));
                router.oneshot(req).await
            })
        });
        run(tcp, peer, service, self.header_timeout, false, stop).await;
        drop(permit);
    }

    /// A connection under the caps, kept alive; behind a trusted proxy each request counts
    /// against its forwarded client's share and carries that client's address.
    async fn serve(self, tcp: TcpStream, peer: SocketAddr, held: Held, stop: CancellationToken) {
        let (router, proxies, clients) = (self.router.clone(), self.proxies.clone(), self.clients.clone());
        let proxied = held.1.is_none();
        let service = hyper::service::service_fn(move |req: Request<Incoming>| {
            let (router, proxies, clients) = (router.clone(), proxies.clone(), clients.clone());
            Box::pin(async move {
                let mut req = req.map(Body::new);
                let mut client = peer;
                let _slot = if proxied {
                    client = SocketAddr::new(proxies.client(peer.ip(), req.headers()), 0);
                    match clients.take(client.ip()) {
                        Some(slot) => Some(slot),
                        None => return Ok::<_, Infallible>(busy()),
                    }
                } else {
                    None
                };
                req.extensions_mut().insert(ConnectInfo(client));
                router.oneshot(req).await
            })
        });
        run(tcp, peer, service, self.header_timeout, true, stop).await;
        drop(held);
    }
}

/// Runs one HTTP/1.1 connection to its end (or a graceful stop), then lingers.
async fn run<S>(
    tcp: TcpStream,
    peer: SocketAddr,
    service: S,
    header_timeout: Duration,
    keep_alive: bool,
    stop: CancellationToken,
) where
    S: hyper::service::HttpService<Incoming, ResBody = Body> + Unpin,
    S::Future: Unpin,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut builder = http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(header_timeout).keep_alive(keep_alive);
    let mut conn = builder.serve_connection(TokioIo::new(tcp), service);
    let mut stopping = std::pin::pin!(stop.cancelled());
    let mut shutting_down = false;
    let result = std::future::poll_fn(|cx| {
        if !shutting_down && stopping.as_mut().poll(cx).is_ready() {
            shutting_down = true;
            Pin::new(&mut conn).graceful_shutdown();
        }
        conn.poll_without_shutdown(cx)
    })
    .await;
    if let Err(e) = result {
        tracing::debug!(%peer, error = %e, "connection closed with an error");
    }
    linger(conn.into_parts().io.into_inner()).await;
}

/// Closes our side, then reads and drops what the client still sends (a body we refused)
/// for a moment: closing with unread data would reset the connection and could destroy the
/// answer before the client read it.
async fn linger(mut tcp: TcpStream) {
    if tcp.shutdown().await.is_err() {
        return;
    }
    let mut buf = [0u8; 8192];
    let mut left = LINGER_BYTES;
    let _ = tokio::time::timeout(LINGER_TIME, async {
        while left > 0 {
            match tcp.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => left = left.saturating_sub(n),
            }
        }
    })
    .await;
}

const BUSY: &str = "Butler has too many open connections ([server] max_connections, \
                    max_connections_per_client); try again shortly";

fn busy_error() -> ApiError {
    ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "overloaded", BUSY)
}

/// [`busy`] as bytes on the wire, written to a connection over the caps without a slot (and
/// without hyper); made once.
static BUSY_BYTES: std::sync::LazyLock<Vec<u8>> = std::sync::LazyLock::new(|| {
    let body = busy_error().body().to_string();
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\n\
         connection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
});

/// The answer over the caps for everything but the health endpoints.
fn busy() -> Response {
    let mut resp = busy_error().into_response();
    resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    resp.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    resp
}

/// A warning logged at most once per [`WARN_EVERY`].
#[derive(Default)]
struct Warn(Option<Instant>);

impl Warn {
    fn due(&mut self) -> bool {
        let now = Instant::now();
        if self.0.is_some_and(|last| now.duration_since(last) < WARN_EVERY) {
            return false;
        }
        self.0 = Some(now);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_connections_stay_below_the_fd_limit() {
        let room = |soft: u64| ((soft - FD_HEADROOM - HEALTH_RESERVE as u64) / 2) as usize;
        // (configured, soft limit, effective)
        let cases: &[(usize, Option<u64>, usize)] = &[
            (1024, None, 1024),
            (1024, Some(u64::MAX), 1024),
            (1024, Some(1_048_576), 1024),
            (1024, Some(1024), room(1024)),
            (20, Some(1024), 20),
            (1024, Some(300), room(300)),
            (1024, Some(100), 1),
        ];
        for &(configured, soft, want) in cases {
            assert_eq!(effective_max_connections(configured, soft), want, "{configured} {soft:?}");
        }
    }

    #[test]
    fn the_fd_limit_is_raised_to_the_hard_limit() {
        let f = raise_fd_limit().expect("readable on unix");
        assert_eq!(f.soft, f.hard, "{f:?}");
        assert!(f.was <= f.soft);
    }
}
