//! Network names in `[server]`: an address range (`10.0.0.0/8`, `::1`, `192.168.1.7`) for
//! `trusted_proxies`, and a host name with an optional port (`butler.example.com`,
//! `chat.local:8443`) for `allowed_hosts`. Plain parsing, shared by the checks and the server;
//! this file must never resolve a name or touch the network.

use std::net::IpAddr;

/// An IP address range: the address and how many leading bits must match.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpRange {
    addr: IpAddr,
    prefix: u8,
}

impl IpRange {
    /// `a.b.c.d`, `a.b.c.d/n`, an IPv6 address, or one with `/n`; None for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        let (addr, prefix) = match text.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (text, None),
        };
        let addr: IpAddr = addr.trim_start_matches('[').trim_end_matches(']').parse().ok()?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => {
                p.parse().ok().filter(|n| *n <= max)?
            }
            Some(_) => return None,
        };
        Some(Self { addr, prefix })
    }

    /// Whether `ip` is in the range (an IPv4-mapped IPv6 address counts as its IPv4 address).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
            v4 => v4,
        };
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => same_prefix(&net.octets(), &ip.octets(), self.prefix),
            (IpAddr::V6(net), IpAddr::V6(ip)) => same_prefix(&net.octets(), &ip.octets(), self.prefix),
            _ => false,
        }
    }
}

fn same_prefix(a: &[u8], b: &[u8], bits: u8) -> bool {
    let (whole, rest) = (usize::from(bits / 8), bits % 8);
    if a[..whole] != b[..whole] {
        return false;
    }
    rest == 0 || {
        let mask = 0xffu8 << (8 - rest);
        a[whole] & mask == b[whole] & mask
    }
}

/// A `Host`-style name: lowercase, with its port when one was written. IPv6 literals keep
/// their brackets (`[::1]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostName {
    pub name: String,
    pub port: Option<u16>,
}

impl HostName {
    /// `name`, `name:port`, `[v6]` or `[v6]:port`, with letters, digits, `-`, `.` and `_` in
    /// the name; None for anything else (a scheme, a path, spaces, an empty name, a bad port).
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        let (name, port) = if let Some(rest) = text.strip_prefix('[') {
            let (inside, after) = rest.split_once(']')?;
            inside.parse::<std::net::Ipv6Addr>().ok()?;
            (format!("[{}]", inside.to_ascii_lowercase()), after)
        } else {
            match text.split_once(':') {
                Some((n, _)) => (n.to_ascii_lowercase(), &text[n.len()..]),
                None => (text.to_ascii_lowercase(), ""),
            }
        };
        let port = match port {
            "" => None,
            p => Some(p.strip_prefix(':')?.parse::<u16>().ok().filter(|p| *p > 0)?),
        };
        let plain = name.starts_with('[')
            || (!name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b)));
        plain.then_some(Self { name, port })
    }
}

/// The host of `[server] public_url` (`https://name[:port][/path]`): what a browser sends in
/// `Host` for it (any port unless one is written). None when it is empty or not such an address.
pub fn public_host(url: &str) -> Option<HostName> {
    let url = url.trim();
    let rest = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://"))?;
    let authority = rest.split('/').next().unwrap_or_default();
    if rest.contains(['?', '#', ' ']) || authority.contains('@') {
        return None;
    }
    HostName::parse(authority)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_urls() {
        let name = |n: &str, p: Option<u16>| Some(HostName { name: n.into(), port: p });
        let cases = [
            ("https://Butler.example.com", name("butler.example.com", None)),
            ("https://butler.example.com/", name("butler.example.com", None)),
            ("http://10.0.0.5:8080/butler", name("10.0.0.5", Some(8080))),
            ("", None),
            ("butler.example.com", None),
            ("ftp://butler.example.com", None),
            ("https://user@butler.example.com", None),
            ("https://butler.example.com/?x=1", None),
            ("https://", None),
        ];
        for (url, want) in cases {
            assert_eq!(public_host(url), want, "{url}");
        }
    }

    #[test]
    fn ranges_parse_and_match() {
        // (range, address, contained; None: the range does not parse)
        let cases: &[(&str, &str, Option<bool>)] = &[
            ("10.0.0.0/8", "10.1.2.3", Some(true)),
            ("10.0.0.0/8", "11.0.0.1", Some(false)),
            ("192.168.1.7", "192.168.1.7", Some(true)),
            ("192.168.1.7", "192.168.1.8", Some(false)),
            ("172.16.0.0/12", "172.31.255.1", Some(true)),
            ("172.16.0.0/12", "172.32.0.1", Some(false)),
            ("0.0.0.0/0", "8.8.8.8", Some(true)),
            ("::1", "::1", Some(true)),
            ("fd00::/8", "fd12::5", Some(true)),
            ("fd00::/8", "fe80::1", Some(false)),
            ("127.0.0.1", "::ffff:127.0.0.1", Some(true)),
            ("10.0.0.0/33", "10.0.0.1", None),
            ("10.0.0.0/", "10.0.0.1", None),
            ("10.0.0.0/x", "10.0.0.1", None),
            ("proxy.local", "10.0.0.1", None),
            ("", "10.0.0.1", None),
        ];
        for (range, ip, want) in cases {
            let got = IpRange::parse(range).map(|r| r.contains(ip.parse().unwrap()));
            assert_eq!(got, *want, "{range} {ip}");
        }
    }

    #[test]
    fn host_names_parse() {
        let h = |name: &str, port: Option<u16>| Some(HostName { name: name.into(), port });
        let cases: &[(&str, Option<HostName>)] = &[
            ("butler.example.com", h("butler.example.com", None)),
            ("Chat.Local:8443", h("chat.local", Some(8443))),
            ("127.0.0.1:8080", h("127.0.0.1", Some(8080))),
            ("[::1]:8080", h("[::1]", Some(8080))),
            ("[::1]", h("[::1]", None)),
            ("localhost", h("localhost", None)),
            ("https://butler.example.com", None),
            ("butler.example.com/chat", None),
            ("butler example", None),
            ("name:0", None),
            ("name:99999", None),
            ("name:", None),
            ("[nope]:80", None),
            ("", None),
            (":80", None),
        ];
        for (text, want) in cases {
            assert_eq!(&HostName::parse(text), want, "{text}");
        }
    }
}
