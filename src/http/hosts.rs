//! The guard of the no-token mode against DNS rebinding and cross-site requests. Without a
//! web token Butler trusts the request's `user`, which is safe only while the request really
//! comes from this machine's own pages and programs; a web page elsewhere can rebind its own
//! name to 127.0.0.1 (then its requests carry its name in `Host`) or post a form to Butler
//! (then they carry its `Origin`). So, in that mode, before any route runs:
//! - `Host` must name the listen address, `localhost`, `127.0.0.1` or `[::1]` with the port
//!   Butler listens on, or one of `[server] allowed_hosts` (names a reverse proxy forwards):
//!   anything else, a missing `Host` included, gets a JSON 403 `host_not_allowed`;
//! - a state-changing request (any method but GET, HEAD, OPTIONS) whose `Origin` is not one
//!   of those same hosts (`null` included) gets a JSON 403 `origin_not_allowed`.
//!
//! With tokens configured nothing here runs: a bearer token cannot be sent by another site.
//! This module must never read a body or log a header's value beyond the host name.

use super::error::ApiError;
use crate::config::HostName;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::net::SocketAddr;
use std::sync::Arc;

/// The hosts served in no-token mode.
#[derive(Clone, Debug)]
pub(crate) struct HostRule {
    /// (name, port): `None` matches any port (an `allowed_hosts` entry written without one).
    allowed: Arc<Vec<(String, Option<u16>)>>,
    /// Where to tell a refused caller to go.
    home: String,
}

impl HostRule {
    /// The names of this machine on `listen`'s port, plus `[server] allowed_hosts` and the host
    /// of `public_url` (entries that do not parse were refused by the config check and are
    /// skipped here).
    pub(crate) fn local(listen: SocketAddr, server: &crate::config::ServerConfig) -> Self {
        let port = listen.port();
        let own = match listen.ip() {
            std::net::IpAddr::V6(v6) => format!("[{v6}]"),
            v4 => v4.to_string(),
        };
        let mut allowed: Vec<(String, Option<u16>)> = [own, "localhost".into(), "127.0.0.1".into(), "[::1]".into()]
            .into_iter()
            .map(|n| (n, Some(port)))
            .collect();
        let public = crate::config::public_host(&server.public_url);
        let extra = server.allowed_hosts.iter().filter_map(|h| HostName::parse(h)).chain(public);
        allowed.extend(extra.map(|h| (h.name, h.port)));
        allowed.dedup();
        Self { allowed: Arc::new(allowed), home: format!("http://127.0.0.1:{port}") }
    }

    /// Whether a `Host` header value is served (no port means the scheme's default).
    pub(crate) fn allows_host(&self, host: &str, default_port: u16) -> bool {
        let Some(h) = HostName::parse(host) else { return false };
        let port = h.port.unwrap_or(default_port);
        self.allowed.iter().any(|(name, p)| *name == h.name && p.is_none_or(|p| p == port))
    }

    /// Whether an `Origin` header value (`scheme://host[:port]`) is one of the served hosts.
    pub(crate) fn allows_origin(&self, origin: &str) -> bool {
        let (default_port, rest) = match origin.split_once("://") {
            Some(("http", rest)) => (80, rest),
            Some(("https", rest)) => (443, rest),
            _ => return false,
        };
        // An origin has no path; a trailing slash is tolerated.
        let host = rest.strip_suffix('/').unwrap_or(rest);
        !host.contains(['/', '@', '?', '#']) && self.allows_host(host, default_port)
    }

    /// The refusal for a request this rule does not serve, if any.
    fn refusal(&self, method: &Method, headers: &HeaderMap) -> Option<ApiError> {
        let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
        if !host.is_some_and(|h| self.allows_host(h, 80)) {
            tracing::info!(host = host.unwrap_or("(none)"), "refused a request for a host Butler does not serve");
            return Some(ApiError::new(
                StatusCode::FORBIDDEN,
                "host_not_allowed",
                format!(
                    "without a web token Butler answers only for this machine's own names; open {} \
                     or add the name to [server] allowed_hosts",
                    self.home
                ),
            ));
        }
        if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
            return None;
        }
        let origin = headers.get(header::ORIGIN)?;
        if origin.to_str().is_ok_and(|o| self.allows_origin(o)) {
            return None;
        }
        tracing::info!("refused a request sent from another web site");
        Some(ApiError::new(
            StatusCode::FORBIDDEN,
            "origin_not_allowed",
            format!(
                "requests from other web sites are refused without a web token; use Butler's own page at {}",
                self.home
            ),
        ))
    }
}

/// The middleware: refuses what [`HostRule`] does not serve before any route runs.
pub(crate) async fn guard(State(rule): State<HostRule>, req: Request, next: Next) -> Response {
    match rule.refusal(req.method(), req.headers()) {
        Some(e) => e.into_response(),
        None => next.run(req).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(hosts: &[&str], public_url: &str) -> crate::config::ServerConfig {
        crate::config::ServerConfig {
            allowed_hosts: hosts.iter().map(|h| h.to_string()).collect(),
            public_url: public_url.into(),
            ..Default::default()
        }
    }

    fn rule() -> HostRule {
        let server = server(&["butler.example.com", "chat.local:8443"], "https://links.example.org:8443/b");
        HostRule::local("127.0.0.1:8080".parse().unwrap(), &server)
    }

    #[test]
    fn hosts() {
        let r = rule();
        let cases = [
            ("127.0.0.1:8080", true),
            ("localhost:8080", true),
            ("LOCALHOST:8080", true),
            ("[::1]:8080", true),
            ("butler.example.com", true),
            ("butler.example.com:443", true),
            ("chat.local:8443", true),
            ("links.example.org:8443", true),
            ("links.example.org", false),
            ("chat.local", false),
            ("127.0.0.1:8081", false),
            ("127.0.0.1", false),
            ("localhost", false),
            ("rebind.evil.example:8080", false),
            ("rebind.evil.example", false),
            ("127.0.0.1.nip.io:8080", false),
            ("localhost.:8080", false),
            ("", false),
            ("127.0.0.1:8080@evil", false),
        ];
        for (host, want) in cases {
            assert_eq!(r.allows_host(host, 80), want, "{host}");
        }
    }

    #[test]
    fn origins() {
        let r = rule();
        let cases = [
            ("http://127.0.0.1:8080", true),
            ("http://localhost:8080", true),
            ("http://localhost:8080/", true),
            ("https://butler.example.com", true),
            ("https://chat.local:8443", true),
            ("http://chat.local", false),
            ("http://rebind.evil.example:8080", false),
            ("https://evil.example", false),
            ("null", false),
            ("file://", false),
            ("http://127.0.0.1:8080/x", false),
            ("http://user@127.0.0.1:8080", false),
        ];
        for (origin, want) in cases {
            assert_eq!(r.allows_origin(origin), want, "{origin}");
        }
    }

    #[test]
    fn a_port_80_listener_takes_a_host_without_port() {
        let r = HostRule::local("127.0.0.1:80".parse().unwrap(), &server(&[], ""));
        assert!(r.allows_host("localhost", 80));
        assert!(r.allows_origin("http://127.0.0.1"));
        assert!(!r.allows_origin("https://127.0.0.1"));
    }

    #[test]
    fn the_listen_address_itself_is_served() {
        let r = HostRule::local("127.0.0.5:9000".parse().unwrap(), &server(&[], ""));
        assert!(r.allows_host("127.0.0.5:9000", 80));
        let v6 = HostRule::local("[::1]:9000".parse().unwrap(), &server(&[], ""));
        assert!(v6.allows_host("[::1]:9000", 80));
    }
}
