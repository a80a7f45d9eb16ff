//! The network guard of the web tools: which addresses a tool may reach, a DNS resolver that
//! enforces it after resolution, a redirect policy that re-checks every hop, and a body reader
//! with a size cap.
//!
//! It must never let a request reach a loopback, private, link-local, cloud-metadata or other
//! non-public address (unless the operator allowed local addresses for `http_request`, and even
//! then never link-local or metadata), whether named directly, as an IP literal in any spelling
//! the URL parser accepts, through DNS, or through a redirect. It never uses a proxy (a proxy
//! would resolve names itself). Production code uses [`NetGuard::public_only`] or
//! [`NetGuard::allowing_local`] with real DNS; the `with_*` methods exist for tests.

use crate::tools::ToolError;
use futures::StreamExt;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::Url;
use std::collections::HashMap;
use std::error::Error as StdError;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A request the guard refused, with the reason in plain words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused(pub String);

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl StdError for Refused {}

/// Where an address belongs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddrClass {
    /// A public internet address.
    Public,
    /// This machine or a local network: loopback, private, CGNAT, unique-local IPv6.
    Local(&'static str),
    /// Never reachable by a tool: unspecified, link-local (cloud metadata), multicast, broadcast,
    /// documentation, reserved, tunnel forms.
    Forbidden(&'static str),
}

/// Classifies `ip`; IPv6 forms that embed an IPv4 address (mapped, compatible, NAT64, 6to4)
/// are classified by the address they embed.
pub fn classify(ip: IpAddr) -> AddrClass {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> AddrClass {
    use AddrClass::*;
    let o = ip.octets();
    match o {
        [169, 254, 169, 254] | [100, 100, 100, 200] => Forbidden("a cloud metadata address"),
        [0, ..] => Forbidden("an unspecified (\"this network\") address"),
        [127, ..] => Local("a loopback address"),
        [10, ..] | [192, 168, ..] => Local("a private address"),
        [172, b, ..] if (16..=31).contains(&b) => Local("a private address"),
        [100, b, ..] if (64..=127).contains(&b) => Local("a shared (carrier-grade NAT) address"),
        [169, 254, ..] => Forbidden("a link-local address"),
        [192, 0, 0, _] => Forbidden("a reserved protocol address"),
        [192, 0, 2, _] | [198, 51, 100, _] | [203, 0, 113, _] => Forbidden("a documentation address"),
        [198, 18 | 19, ..] => Forbidden("a benchmarking address"),
        [255, 255, 255, 255] => Forbidden("the broadcast address"),
        [a, ..] if (224..=239).contains(&a) => Forbidden("a multicast address"),
        [a, ..] if a >= 240 => Forbidden("a reserved address"),
        _ => Public,
    }
}

fn classify_v6(ip: Ipv6Addr) -> AddrClass {
    use AddrClass::*;
    let s = ip.segments();
    if ip.is_unspecified() {
        return Forbidden("an unspecified address");
    }
    if ip.is_loopback() {
        return Local("a loopback address");
    }
    if let Some(v4) = embedded_v4(ip) {
        return classify_v4(v4);
    }
    match s[0] {
        0xfd00 if s[1..] == [0xec2, 0, 0, 0, 0, 0, 0x254] => Forbidden("a cloud metadata address"),
        x if x & 0xfe00 == 0xfc00 => Local("a private (unique local) address"),
        x if x & 0xffc0 == 0xfe80 => Forbidden("a link-local address"),
        x if x & 0xffc0 == 0xfec0 => Forbidden("a site-local address"),
        x if x & 0xff00 == 0xff00 => Forbidden("a multicast address"),
        0x2001 if s[1] == 0xdb8 => Forbidden("a documentation address"),
        0x2001 if s[1] == 0 => Forbidden("a Teredo tunnel address"),
        0x0100 if s[1..4] == [0, 0, 0] => Forbidden("a discard address"),
        0x0064 if s[1] == 0xff9b => Forbidden("a local NAT64 address"),
        0 => Forbidden("a reserved address"),
        _ => Public,
    }
}

/// The IPv4 address inside `::ffff:a.b.c.d`, `::a.b.c.d`, `64:ff9b::a.b.c.d` or `2002:AABB:CCDD::`.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let tail = || Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    match s {
        [0, 0, 0, 0, 0, 0xffff, _, _] | [0, 0, 0, 0, 0, 0, _, _] => Some(tail()),
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => Some(tail()),
        [0x2002, a, b, ..] => Some(Ipv4Addr::new((a >> 8) as u8, a as u8, (b >> 8) as u8, b as u8)),
        _ => None,
    }
}

/// Host names that are refused before any lookup: cloud metadata names and local-only zones.
fn blocked_name(host: &str) -> Option<&'static str> {
    const METADATA: &[&str] = &[
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "metadata.azure.internal",
        "instance-data",
        "instance-data.ec2.internal",
    ];
    if METADATA.contains(&host) {
        return Some("a cloud metadata host name");
    }
    if host == "localhost" || host.ends_with(".localhost") {
        return Some("a name for this machine");
    }
    if host.ends_with(".internal") || host.ends_with(".local") || host.ends_with(".home.arpa") {
        return Some("a local-network name");
    }
    None
}

/// Why a host pattern of `allowed_hosts` names only hosts the guard never fetches (cloud
/// metadata names, this machine, local-network zones), or None. A `*.zone` pattern counts when
/// every name below the zone is refused. For config validation, so the operator hears at load.
pub fn refused_host_pattern(pattern: &str) -> Option<&'static str> {
    let host = normalize_host(pattern);
    match host.strip_prefix("*.") {
        Some(zone) => blocked_name(&format!("x.{zone}")),
        None => blocked_name(&host),
    }
}

/// Says `true` to make an address count as public (tests only).
pub type PublicOverride = Arc<dyn Fn(IpAddr) -> bool + Send + Sync>;

/// Which addresses the web tools may reach, and how names are resolved.
#[derive(Clone)]
pub struct NetGuard {
    allow_local: bool,
    hosts: HashMap<String, Vec<IpAddr>>,
    treat_as_public: Option<PublicOverride>,
}

impl NetGuard {
    /// Public internet addresses only, names resolved by the system resolver: `web_fetch`.
    pub fn public_only() -> Self {
        Self { allow_local: false, hosts: HashMap::new(), treat_as_public: None }
    }

    /// Also loopback and private networks (never link-local, metadata and the like): for
    /// `http_request` to operator-listed hosts when `allow_private_addresses` is set.
    pub fn allowing_local() -> Self {
        Self { allow_local: true, ..Self::public_only() }
    }

    /// Tests: resolve `name` to `ips` instead of asking DNS (the answer is still checked).
    pub fn with_static_host(mut self, name: &str, ips: Vec<IpAddr>) -> Self {
        self.hosts.insert(normalize_host(name), ips);
        self
    }

    /// Tests: treat the addresses `f` accepts as public (e.g. a local test server), so that a
    /// redirect from there to another non-public address can be shown to be refused.
    pub fn with_public_override(mut self, f: PublicOverride) -> Self {
        self.treat_as_public = Some(f);
        self
    }

    /// `Ok` when a request may go to `ip`.
    pub fn check_ip(&self, ip: IpAddr) -> Result<(), Refused> {
        if self.treat_as_public.as_ref().is_some_and(|f| f(ip)) {
            return Ok(());
        }
        match classify(ip) {
            AddrClass::Public => Ok(()),
            AddrClass::Local(_) if self.allow_local => Ok(()),
            AddrClass::Local(what) | AddrClass::Forbidden(what) => Err(Refused(format!(
                "{ip} is {what}; only public internet addresses may be reached{}",
                if self.allow_local { " or local ones" } else { "" }
            ))),
        }
    }

    /// Checks what can be checked before connecting: the scheme, refused names, and IP-literal
    /// hosts (which never reach the resolver).
    pub fn check_url(&self, url: &Url) -> Result<(), Refused> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Refused(format!("the scheme `{}:` is not allowed; use http:// or https://", url.scheme())));
        }
        let Some(host) = url.host_str() else {
            return Err(Refused("the URL has no host".into()));
        };
        match host_ip(host) {
            Some(ip) => self.check_ip(ip),
            None => self.check_name(host),
        }
    }

    fn check_name(&self, host: &str) -> Result<(), Refused> {
        let host = normalize_host(host);
        if let Some(what) = blocked_name(&host) {
            return Err(Refused(format!("`{host}` is {what} and is never fetched")));
        }
        Ok(())
    }

    /// Resolves `host` and checks every address it resolves to.
    pub async fn resolve(&self, host: &str) -> Result<Vec<IpAddr>, Refused> {
        self.check_name(host)?;
        let name = normalize_host(host);
        let ips: Vec<IpAddr> = match self.hosts.get(&name) {
            Some(ips) => ips.clone(),
            None => tokio::net::lookup_host((name.as_str(), 0))
                .await
                .map_err(|e| Refused(format!("could not resolve `{name}`: {e}")))?
                .map(|a| a.ip())
                .collect(),
        };
        if ips.is_empty() {
            return Err(Refused(format!("`{name}` has no addresses")));
        }
        for ip in &ips {
            self.check_ip(*ip).map_err(|r| Refused(format!("`{name}` resolves to {r}")))?;
        }
        Ok(ips)
    }
}

/// `example.com.` and `Example.COM` -> `example.com`.
fn normalize_host(host: &str) -> String {
    host.trim_end_matches('.').to_ascii_lowercase()
}

/// The address of an IP-literal host as the URL parser normalized it (`[::1]`, `127.0.0.1`).
fn host_ip(host: &str) -> Option<IpAddr> {
    host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host).parse().ok()
}

struct GuardResolver(Arc<NetGuard>);

impl Resolve for GuardResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let guard = self.0.clone();
        Box::pin(async move {
            let ips = guard.resolve(name.as_str()).await?;
            let addrs: Addrs = Box::new(ips.into_iter().map(|ip| SocketAddr::new(ip, 0)));
            Ok(addrs)
        })
    }
}

/// Host patterns a tool may call: `api.github.com` (exactly) or `*.example.com` (any
/// subdomain, not `example.com` itself).
#[derive(Clone, Debug, Default)]
pub struct HostList(Vec<String>);

impl HostList {
    pub fn new(patterns: &[String]) -> Self {
        Self(patterns.iter().map(|p| normalize_host(p.trim())).collect())
    }

    pub fn matches(&self, host: &str) -> bool {
        let host = normalize_host(host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host));
        self.0.iter().any(|p| match p.strip_prefix("*.") {
            Some(suffix) => host.len() > suffix.len() + 1 && host.ends_with(&format!(".{suffix}")),
            None => *p == host,
        })
    }

    pub fn describe(&self) -> String {
        self.0.join(", ")
    }
}

/// Whether `pattern` is a well-formed `allowed_hosts` entry; the reason when not.
pub fn check_host_pattern(pattern: &str) -> Result<(), String> {
    let name = pattern.strip_prefix("*.").unwrap_or(pattern);
    if host_ip(name).is_some() && !pattern.starts_with("*.") {
        return Ok(());
    }
    let labels_ok = !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|l| {
            (1..=63).contains(&l.len())
                && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        });
    if labels_ok {
        Ok(())
    } else {
        Err(format!(
            "`{pattern}` is not a host name; write `api.example.com`, `*.example.com` or an IP address, \
             without scheme, port or path"
        ))
    }
}

/// How a guarded client behaves.
#[derive(Clone)]
pub struct ClientOptions {
    pub timeout: Duration,
    pub max_redirects: usize,
    /// When set, every redirect target must match it too.
    pub hosts: Option<HostList>,
}

/// A client whose every connection goes through `guard`: its resolver, a redirect policy that
/// checks each hop (and `hosts`, when set), no proxy, no Referer.
pub fn client(guard: Arc<NetGuard>, opts: ClientOptions) -> Result<reqwest::Client, String> {
    let redirect_guard = guard.clone();
    let (max, hosts) = (opts.max_redirects, opts.hosts);
    let policy = reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() > max {
            let err = Refused(format!("too many redirects (more than {max})"));
            return attempt.error(err);
        }
        if let Err(e) = redirect_guard.check_url(attempt.url()) {
            let err = Refused(format!("redirect to {} refused: {e}", attempt.url()));
            return attempt.error(err);
        }
        if let Some(list) = &hosts {
            let host = attempt.url().host_str().unwrap_or_default().to_string();
            if !list.matches(&host) {
                let err = Refused(format!("redirect to `{host}` refused: it is not in allowed_hosts"));
                return attempt.error(err);
            }
        }
        attempt.follow()
    });
    reqwest::Client::builder()
        .dns_resolver(Arc::new(GuardResolver(guard)))
        .redirect(policy)
        .no_proxy()
        .referer(false)
        .timeout(opts.timeout)
        .connect_timeout(opts.timeout)
        .user_agent(concat!("Butler/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("could not build the HTTP client: {e}"))
}

/// A response read up to a size cap.
pub struct Fetched {
    pub status: reqwest::StatusCode,
    pub url: Url,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
    /// The body was longer than the cap and was cut.
    pub truncated: bool,
}

/// Sends `req` (its URL checked first), reads at most `max_bytes` of the body, gives up after
/// `timeout` or when `cancel` fires.
pub async fn send(
    guard: &NetGuard,
    client: &reqwest::Client,
    req: reqwest::Request,
    max_bytes: usize,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<Fetched, ToolError> {
    guard.check_url(req.url()).map_err(|r| ToolError::Failed(format!("refused: {r}")))?;
    let work = async {
        let resp = client.execute(req).await.map_err(|e| request_error(&e, timeout))?;
        let status = resp.status();
        let url = resp.url().clone();
        // A redirect the client did not follow: only one to another scheme (the policy refuses
        // everything else with an error). Say so rather than return an empty 3xx.
        if status.is_redirection() {
            let location = resp.headers().get(reqwest::header::LOCATION).and_then(|v| v.to_str().ok());
            if let Some(next) = location.and_then(|l| url.join(l).ok()) {
                if let Err(r) = guard.check_url(&next) {
                    return Err(ToolError::Failed(format!("refused: redirect to {next} not followed: {r}")));
                }
            }
        }
        let content_type =
            resp.headers().get(reqwest::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(str::to_string);
        let mut body = Vec::new();
        let mut truncated = false;
        let mut stream = resp.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| request_error(&e, timeout))?;
            let room = max_bytes - body.len();
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                truncated = true;
                break;
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Fetched { status, url, content_type, body, truncated })
    };
    tokio::select! {
        r = tokio::time::timeout(timeout, work) => {
            r.unwrap_or_else(|_| Err(ToolError::Failed(format!("timed out after {} s", timeout.as_secs_f32()))))
        }
        _ = cancel.cancelled() => Err(ToolError::Failed("stopped".into())),
    }
}

/// A reqwest error in plain words: the guard's refusal when there is one in the chain.
fn request_error(e: &reqwest::Error, timeout: Duration) -> ToolError {
    let mut source: Option<&(dyn StdError + 'static)> = Some(e);
    while let Some(err) = source {
        if let Some(r) = err.downcast_ref::<Refused>() {
            return ToolError::Failed(format!("refused: {r}"));
        }
        source = err.source();
    }
    if e.is_timeout() {
        return ToolError::Failed(format!("timed out after {} s", timeout.as_secs_f32()));
    }
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(err) = source {
        text.push_str(": ");
        text.push_str(&err.to_string());
        source = err.source();
    }
    ToolError::Failed(format!("request failed: {text}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_addresses() {
        let cases: &[(&str, bool)] = &[
            ("8.8.8.8", true),
            ("1.1.1.1", true),
            ("2606:4700:4700::1111", true),
            ("127.0.0.1", false),
            ("127.8.9.10", false),
            ("10.1.2.3", false),
            ("172.16.0.1", false),
            ("172.31.255.255", false),
            ("172.32.0.1", true),
            ("192.168.1.1", false),
            ("169.254.169.254", false),
            ("169.254.1.1", false),
            ("100.64.0.1", false),
            ("100.100.100.200", false),
            ("0.0.0.0", false),
            ("255.255.255.255", false),
            ("224.0.0.1", false),
            ("::1", false),
            ("::", false),
            ("fc00::1", false),
            ("fd00:ec2::254", false),
            ("fe80::1", false),
            ("ff02::1", false),
            ("::ffff:127.0.0.1", false),
            ("::ffff:169.254.169.254", false),
            ("::ffff:8.8.8.8", true),
            ("::127.0.0.1", false),
            ("64:ff9b::a00:1", false),
            ("2002:7f00:1::", false),
            ("2002:808:808::", true),
        ];
        for (ip, public) in cases {
            let got = classify(ip.parse().unwrap());
            assert_eq!(got == AddrClass::Public, *public, "{ip}: {got:?}");
        }
        assert!(matches!(classify("169.254.169.254".parse().unwrap()), AddrClass::Forbidden(_)));
        assert!(matches!(classify("192.168.0.1".parse().unwrap()), AddrClass::Local(_)));
    }

    #[test]
    fn host_patterns() {
        let list = HostList::new(&["api.github.com".into(), "*.example.com".into(), "10.0.0.5".into()]);
        for (host, ok) in [
            ("api.github.com", true),
            ("API.GitHub.com.", true),
            ("github.com", false),
            ("evilapi.github.com", false),
            ("a.example.com", true),
            ("a.b.example.com", true),
            ("example.com", false),
            ("badexample.com", false),
            ("10.0.0.5", true),
        ] {
            assert_eq!(list.matches(host), ok, "{host}");
        }
        for (p, ok) in [
            ("api.github.com", true),
            ("*.example.com", true),
            ("10.0.0.5", true),
            ("::1", true),
            ("https://x.com", false),
            ("x.com:443", false),
            ("x.com/path", false),
            ("", false),
            ("*", false),
            ("a..b", false),
        ] {
            assert_eq!(check_host_pattern(p).is_ok(), ok, "{p}");
        }
    }
}
