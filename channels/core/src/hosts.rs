//! Where a channel may fetch a file from: a platform's own HTTPS file hosts, or the origin of
//! the configured API URL (a self-hosted server or a test fake). Slack sends its bot token only
//! to these; Discord fetches attachments only from them.
//!
//! Plain data and one comparison: it must never do I/O.

use url::Url;

/// scheme, host (lower case), port.
type Origin = (String, String, u16);

fn origin(url: &Url) -> Option<Origin> {
    Some((url.scheme().to_string(), url.host_str()?.to_ascii_lowercase(), url.port_or_known_default()?))
}

/// The hosts a channel's file downloads (and their redirects) may go to.
#[derive(Clone, Debug)]
pub struct FileHosts {
    /// The platform's own hosts, reached over HTTPS on port 443 only.
    hosts: &'static [&'static str],
    /// The origin of the configured API URL, if it parses.
    api: Option<Origin>,
}

impl FileHosts {
    pub fn new(hosts: &'static [&'static str], api_url: &str) -> Self {
        Self { hosts, api: Url::parse(api_url).ok().as_ref().and_then(origin) }
    }

    pub fn allows(&self, url: &Url) -> bool {
        let Some(o) = origin(url) else { return false };
        (o.0 == "https" && o.2 == 443 && self.hosts.contains(&o.1.as_str())) || self.api.as_ref() == Some(&o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_platforms_https_hosts_and_the_apis_origin_are_allowed() {
        let hosts = FileHosts::new(&["files.example.com"], "http://127.0.0.1:8080/api");
        let cases = [
            ("https://files.example.com/a/b", true),
            ("https://FILES.example.com/a", true),
            ("http://files.example.com/a", false),
            ("https://files.example.com:8443/a", false),
            ("https://evil.example.com/a", false),
            ("http://127.0.0.1:8080/files/x", true),
            ("http://127.0.0.1:8081/files/x", false),
            ("https://127.0.0.1:8080/files/x", false),
        ];
        for (url, want) in cases {
            assert_eq!(hosts.allows(&Url::parse(url).unwrap()), want, "{url}");
        }
    }
}
