//! Who a connection or request is from, and how much of the server one client may hold:
//! [`ClientSlots`] counts what each client address has open against
//! `[server] max_connections_per_client`; [`Proxies`] says whose `X-Forwarded-For` is believed
//! (`[server] trusted_proxies`) and reads the client address from it. A forwarded address from
//! anyone else is ignored. This module must never block or log a header value.

use crate::config::IpRange;
use axum::http::HeaderMap;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// A client address as counted: an IPv4-mapped IPv6 address is its IPv4 address.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
        v4 => v4,
    }
}

/// Open connections (or requests) per client address, each at most `max`.
#[derive(Clone)]
pub(crate) struct ClientSlots {
    open: Arc<Mutex<HashMap<IpAddr, usize>>>,
    max: usize,
}

/// One slot of a client, given back when dropped.
pub(crate) struct ClientSlot {
    open: Arc<Mutex<HashMap<IpAddr, usize>>>,
    ip: IpAddr,
}

impl ClientSlots {
    pub(crate) fn new(max: usize) -> Self {
        Self { open: Arc::default(), max }
    }

    /// A slot for `ip`, or None when it already holds `max`.
    pub(crate) fn take(&self, ip: IpAddr) -> Option<ClientSlot> {
        let ip = canonical(ip);
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let n = open.entry(ip).or_insert(0);
        if *n >= self.max {
            return None;
        }
        *n += 1;
        Some(ClientSlot { open: self.open.clone(), ip })
    }

    /// How many slots `ip` holds.
    #[cfg(test)]
    fn held(&self, ip: IpAddr) -> usize {
        self.open.lock().unwrap().get(&canonical(ip)).copied().unwrap_or(0)
    }
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = open.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

/// The proxies whose forwarded client address is believed.
#[derive(Clone, Default)]
pub(crate) struct Proxies(Arc<Vec<IpRange>>);

impl Proxies {
    /// From `[server] trusted_proxies` (entries that do not parse were refused by the config
    /// check and are skipped here).
    pub(crate) fn new(ranges: &[String]) -> Self {
        Self(Arc::new(ranges.iter().filter_map(|r| IpRange::parse(r)).collect()))
    }

    pub(crate) fn trusts(&self, ip: IpAddr) -> bool {
        self.0.iter().any(|r| r.contains(ip))
    }

    /// The client a request from `peer` is for: `peer` itself unless `peer` is a trusted proxy,
    /// then the right-most address of `X-Forwarded-For` that is not a trusted proxy (the ones
    /// further left were written by the client and prove nothing).
    pub(crate) fn client(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        if !self.trusts(peer) {
            return peer;
        }
        let hops = headers.get_all("x-forwarded-for").iter().filter_map(|v| v.to_str().ok()).collect::<Vec<_>>();
        let mut last = peer;
        for hop in hops.iter().rev().flat_map(|v| v.rsplit(',')) {
            match hop.trim().parse::<IpAddr>() {
                Ok(ip) if self.trusts(ip) => last = ip,
                Ok(ip) => return ip,
                Err(_) => return last,
            }
        }
        last
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn each_client_holds_at_most_its_share() {
        let slots = ClientSlots::new(2);
        let a = [slots.take(ip("10.0.0.1")), slots.take(ip("::ffff:10.0.0.1"))];
        assert!(a.iter().all(Option::is_some));
        assert!(slots.take(ip("10.0.0.1")).is_none(), "a third slot for the same address");
        assert!(slots.take(ip("10.0.0.2")).is_some(), "another address has its own");
        drop(a);
        assert_eq!(slots.held(ip("10.0.0.1")), 0);
        assert!(slots.take(ip("10.0.0.1")).is_some(), "slots come back when dropped");
    }

    #[test]
    fn forwarded_addresses_count_only_from_trusted_proxies() {
        let proxies = Proxies::new(&["10.0.0.0/8".into()]);
        // (peer, X-Forwarded-For values, client)
        let cases: &[(&str, &[&str], &str)] = &[
            ("192.0.2.9", &["203.0.113.5"], "192.0.2.9"),
            ("10.0.0.2", &["203.0.113.5"], "203.0.113.5"),
            ("10.0.0.2", &["198.51.100.1, 203.0.113.5"], "203.0.113.5"),
            ("10.0.0.2", &["203.0.113.5, 10.0.0.7"], "203.0.113.5"),
            ("10.0.0.2", &["198.51.100.1", "203.0.113.5"], "203.0.113.5"),
            ("10.0.0.2", &[], "10.0.0.2"),
            ("10.0.0.2", &["not-an-address"], "10.0.0.2"),
            ("10.0.0.2", &["10.0.0.9"], "10.0.0.9"),
        ];
        for (peer, xff, want) in cases {
            let mut h = HeaderMap::new();
            for v in *xff {
                h.append("x-forwarded-for", HeaderValue::from_str(v).unwrap());
            }
            assert_eq!(proxies.client(ip(peer), &h), ip(want), "{peer} {xff:?}");
        }
    }
}
