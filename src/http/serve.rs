//! The HTTP server's accept loop: HTTP/1.1 connections served with a header read timeout (which
//! is also the idle keep-alive timeout), a cap on concurrent connections kept below the
//! open-file limit, and a graceful stop that lets requests in flight finish. A closing
//! connection is drained for a moment first, so that a refused body (413) does not reset the
//! connection under the answer.
//!
//! Over the cap, up to [`HEALTH_RESERVE`] more connections are served one request each, with a
//! short header timeout: `/healthz` and `/readyz` answer as usual, every other path a 503 JSON
//! error, so probes keep working while the cap is reached; past those a new connection is closed
//! at once. At start the soft open-file limit is raised to the hard one and the result logged.
//! This module must never block the accept loop on a connection, or spawn an untracked task.

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
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
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
/// Connections over `[server] max_connections` that still get `/healthz` and `/readyz`.
pub const HEALTH_RESERVE: usize = 16;
/// The header timeout of a connection over the cap (a probe sends its request at once).
const RESERVE_HEADER_TIMEOUT: Duration = Duration::from_secs(2);
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

/// `max_connections` as configured, lowered to fit the soft open-file limit.
pub(crate) fn effective_max_connections(configured: usize, soft_fd_limit: Option<u64>) -> usize {
    let Some(soft) = soft_fd_limit else { return configured };
    let room = soft.saturating_sub(FD_HEADROOM + HEALTH_RESERVE as u64);
    configured.min(usize::try_from(room).unwrap_or(usize::MAX)).max(1)
}

/// The server's timeouts and caps, from `[server]`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ServeLimits {
    pub header_timeout: Duration,
    pub max_connections: usize,
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
        Self { header_timeout: Duration::from_secs(cfg.header_timeout_secs), max_connections }
    }
}

/// Serves `router` on `listener` until `stop`, then waits for open connections to finish their
/// requests in flight.
pub(crate) async fn serve(listener: TcpListener, router: Router, limits: ServeLimits, stop: CancellationToken) {
    let normal = Arc::new(Semaphore::new(limits.max_connections));
    let reserve = Arc::new(Semaphore::new(HEALTH_RESERVE));
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
        let conn = if let Ok(permit) = normal.clone().try_acquire_owned() {
            Conn { permit, overloaded: false, header_timeout: limits.header_timeout }
        } else if let Ok(permit) = reserve.clone().try_acquire_owned() {
            let header_timeout = limits.header_timeout.min(RESERVE_HEADER_TIMEOUT);
            Conn { permit, overloaded: true, header_timeout }
        } else {
            if over_cap.due() {
                tracing::warn!(
                    max_connections = limits.max_connections,
                    "connections over [server] max_connections and the health reserve are closed at once"
                );
            }
            drop(tcp);
            continue;
        };
        connections.spawn(conn.serve(tcp, peer, router.clone(), stop.clone()));
    }
    drop(listener);
    connections.close();
    connections.wait().await;
}

/// One accepted connection and the slot it holds.
struct Conn {
    permit: OwnedSemaphorePermit,
    /// Over the cap: health paths only, one request, then close.
    overloaded: bool,
    header_timeout: Duration,
}

impl Conn {
    async fn serve(self, tcp: TcpStream, peer: SocketAddr, router: Router, stop: CancellationToken) {
        let overloaded = self.overloaded;
        let service = hyper::service::service_fn(move |req: Request<Incoming>| {
            let router = router.clone();
            Box::pin(async move {
                if overloaded && !matches!(req.uri().path(), "/healthz" | "/readyz") {
                    return Ok::<_, Infallible>(busy());
                }
                let mut req = req.map(Body::new);
                req.extensions_mut().insert(ConnectInfo(peer));
                router.oneshot(req).await
            })
        });
        let mut builder = http1::Builder::new();
        builder.timer(TokioTimer::new()).header_read_timeout(self.header_timeout).keep_alive(!overloaded);
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
        drop(self.permit);
    }
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

/// The answer over the cap for everything but the health endpoints.
fn busy() -> Response {
    let mut resp = ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "overloaded",
        "Butler has too many open connections ([server] max_connections); try again shortly",
    )
    .into_response();
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
        let room = |soft: u64| (soft - FD_HEADROOM - HEALTH_RESERVE as u64) as usize;
        // (configured, soft limit, effective)
        let cases: &[(usize, Option<u64>, usize)] = &[
            (1024, None, 1024),
            (1024, Some(u64::MAX), 1024),
            (1024, Some(1_048_576), 1024),
            (1024, Some(1024), room(1024)),
            (20, Some(1024), 20),
            (1024, Some(200), room(200)),
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
