//! Butler's [`FileSource`] for Discord ([`DiscordFiles`]): an attachment is fetched from its
//! own URL, which Discord signs (`?ex=…&is=…&hm=…`) so no token goes with it, and only from
//! Discord's CDN (`https://cdn.discordapp.com`, `https://media.discordapp.net`) or the origin of
//! the configured `api_url` (a stand-in such as a test fake); any other URL is refused, and
//! redirects are followed only within those hosts. The body is streamed piece by piece; the
//! size is the `Content-Length`, else the size the attachment claimed.
//!
//! This module must never send the bot token with a download, read a file whole into memory,
//! or fetch from a host that is not Discord's.

use butler_channel::{Attachment, ChannelError, Download, FileHosts, FileSource};
use futures_util::StreamExt;
use reqwest::header::RETRY_AFTER;
use reqwest::Url;
use std::time::Duration;

/// The hosts Discord serves attachments from.
pub const CDN_HOSTS: [&str; 2] = ["cdn.discordapp.com", "media.discordapp.net"];

/// Downloads attachments from Discord's CDN.
#[derive(Clone)]
pub struct DiscordFiles {
    http: reqwest::Client,
    allowed: FileHosts,
}

impl DiscordFiles {
    /// A file source for the Discord that `api_url` names (or stands in for).
    pub fn new(api_url: &str) -> Result<Self, ChannelError> {
        let allowed = FileHosts::new(&CDN_HOSTS, api_url);
        let follow = allowed.clone();
        let policy = reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() >= 5 {
                attempt.error("too many redirects")
            } else if follow.allows(attempt.url()) {
                attempt.follow()
            } else {
                attempt.stop()
            }
        });
        let http = reqwest::Client::builder()
            .redirect(policy)
            .connect_timeout(Duration::from_secs(10))
            .read_timeout(Duration::from_secs(60))
            .build()
            .map_err(|e| ChannelError::Rejected(format!("cannot build the HTTP client for attachments: {e}")))?;
        Ok(Self { http, allowed })
    }

    /// Whether Butler fetches from `url`.
    pub fn allows(&self, url: &str) -> bool {
        Url::parse(url).is_ok_and(|u| self.allowed.allows(&u))
    }
}

#[async_trait::async_trait]
impl FileSource for DiscordFiles {
    async fn open(&self, file: &Attachment) -> Result<Download, ChannelError> {
        let what = "downloading the attachment from Discord";
        let url = file
            .url
            .as_deref()
            .ok_or_else(|| ChannelError::Rejected(format!("attachment {} has no URL", file.file_id)))?;
        let url = Url::parse(url)
            .map_err(|_| ChannelError::Rejected(format!("attachment {} has no valid URL", file.file_id)))?;
        if !self.allowed.allows(&url) {
            return Err(ChannelError::Rejected(format!(
                "attachment {} is not on Discord's CDN ({}); Butler fetches attachments only from {}",
                file.file_id,
                url.host_str().unwrap_or("no host"),
                CDN_HOSTS.join(" or ")
            )));
        }
        let resp = self.http.get(url).send().await.map_err(|e| {
            let e = e.without_url();
            ChannelError::Transient(format!("{what}: {e}"))
        })?;
        let status = resp.status().as_u16();
        if !(200..300).contains(&status) {
            let wait =
                resp.headers().get(RETRY_AFTER).and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse().ok());
            return Err(match status {
                429 => ChannelError::RateLimited {
                    retry_after: Duration::from_secs_f64(wait.unwrap_or(1.0f64).clamp(0.05, 3600.0)),
                },
                403 | 404 | 410 => {
                    ChannelError::NotFound(format!("{what}: HTTP {status} (deleted, or its signed URL expired)"))
                }
                300..=399 => {
                    ChannelError::Rejected(format!("{what}: HTTP {status}, a redirect away from Discord's CDN"))
                }
                408 | 500..=599 => ChannelError::Transient(format!("{what}: HTTP {status}")),
                _ => ChannelError::Rejected(format!("{what}: HTTP {status}")),
            });
        }
        let size = resp.content_length().or(file.size);
        let body = resp.bytes_stream().map(|piece| {
            piece.map_err(|e| ChannelError::Transient(format!("reading the attachment: {}", e.without_url())))
        });
        Ok(Download { size, body: Box::pin(body) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_discords_cdn_and_the_stand_in() {
        let real = DiscordFiles::new("https://discord.com").unwrap();
        let fake = DiscordFiles::new("http://127.0.0.1:5000").unwrap();
        let cases = [
            ("https://cdn.discordapp.com/attachments/1/2/a.png?ex=1&is=2&hm=3", true, true),
            ("https://media.discordapp.net/attachments/1/2/a.png", true, true),
            ("http://cdn.discordapp.com/attachments/1/2/a.png", false, false),
            ("https://cdn.discordapp.com:8443/attachments/1/2/a.png", false, false),
            ("https://cdn.discordapp.com.evil.example/a.png", false, false),
            ("https://evil.example/cdn.discordapp.com/a.png", false, false),
            ("http://127.0.0.1:5000/attachments/1/2/a.png", false, true),
            ("http://localhost:5000/attachments/1/2/a.png", false, false),
            ("http://127.0.0.1:5001/attachments/1/2/a.png", false, false),
            ("nonsense", false, false),
        ];
        for (url, with_real, with_fake) in cases {
            assert_eq!(real.allows(url), with_real, "{url} (Discord)");
            assert_eq!(fake.allows(url), with_fake, "{url} (a stand-in)");
        }
    }
}
