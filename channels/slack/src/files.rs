//! Files over plain HTTP with the bot token: downloading what people share (Butler's
//! [`FileSource`] for Slack, [`SlackFiles`]) and sending the bytes of Butler's own files to the
//! upload URL Slack hands out.
//!
//! Downloads: the bot token (`Authorization: Bearer xoxb-…`) is sent only to Slack's file host
//! (`https://files.slack.com`) or to the origin of the configured `api_url` (a test fake). An
//! event's `url_private_download` anywhere else is not used: files.info is asked for the file
//! and its answer is held to the same rule; redirects are followed only within it. The body is
//! streamed piece by piece with the size Slack announced. Slack answers a token without the
//! `files:read` scope with its HTML login page (200, `text/html`): that is reported as
//! `Unauthorized` with the fix.
//!
//! This module must never log or return the token, never read a file whole into memory, and
//! never send the token to a host that is not Slack's.

use crate::Shared;
use butler_channel::{Attachment, ChannelError, Download, FileHosts, FileSource};
use futures_util::StreamExt;
use reqwest::header::{CONTENT_LENGTH, CONTENT_TYPE, RETRY_AFTER};
use reqwest::{StatusCode, Url};
use std::sync::Arc;
use std::time::Duration;

/// Slack's file host: the only public host that gets the bot token outside the Web API.
pub const FILE_HOST: &str = "files.slack.com";

/// What to tell an operator whose bot token cannot read files.
pub const FILES_READ_FIX: &str = "Slack answered its login page instead of the file: the bot token lacks the \
     files:read scope; add the files:read scope under OAuth & Permissions (deploy/slack-manifest.yaml lists it) \
     and reinstall the app";

/// The HTTP side of files: one client, the token, and where the token may go.
pub struct Transfer {
    http: reqwest::Client,
    token: String,
    trusted: FileHosts,
}

fn failed(what: &str, e: reqwest::Error) -> ChannelError {
    let e = e.without_url();
    if e.is_redirect() {
        return ChannelError::Rejected(format!("{what}: too many redirects"));
    }
    ChannelError::Transient(format!("{what}: {e}"))
}

/// An unsuccessful answer of a file host as what the caller should do next.
fn status_error(what: &str, status: StatusCode, retry_after: Option<u64>) -> ChannelError {
    let code = status.as_u16();
    match code {
        429 => ChannelError::RateLimited { retry_after: Duration::from_secs(retry_after.unwrap_or(1).max(1)) },
        401 | 403 => ChannelError::Unauthorized(format!(
            "{what}: HTTP {code}; the bot token may lack the files:read scope (add it under OAuth & Permissions)"
        )),
        404 | 410 => ChannelError::NotFound(format!("{what}: HTTP {code} (the file was deleted?)")),
        300..=399 => ChannelError::Rejected(format!(
            "{what}: HTTP {code}, a redirect to a host that is not Slack's (Butler sends the token only to Slack)"
        )),
        408 | 500..=599 => ChannelError::Transient(format!("{what}: HTTP {code}")),
        _ => ChannelError::Rejected(format!("{what}: HTTP {code}")),
    }
}

fn retry_after(resp: &reqwest::Response) -> Option<u64> {
    resp.headers().get(RETRY_AFTER)?.to_str().ok()?.trim().parse().ok()
}

impl Transfer {
    /// A client for `api_url`'s Slack with the bot token, on `tls` (the Web API client's).
    pub fn new(api_url: &str, token: &str, tls: &rustls::ClientConfig) -> Result<Self, ChannelError> {
        let trusted = FileHosts::new(&[FILE_HOST], api_url);
        let follow = trusted.clone();
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
            .use_preconfigured_tls(tls.clone())
            .redirect(policy)
            .connect_timeout(Duration::from_secs(10))
            .read_timeout(Duration::from_secs(60))
            .build()
            .map_err(|e| ChannelError::Rejected(format!("cannot build the HTTP client for files: {e}")))?;
        Ok(Self { http, token: token.to_string(), trusted })
    }

    /// Whether the bot token may be sent to `url`.
    pub fn may_carry_token(&self, url: &str) -> bool {
        Url::parse(url).is_ok_and(|u| self.trusted.allows(&u))
    }

    /// Starts downloading `url` (which must be trusted) with the bot token. `html_expected`:
    /// the file itself is an HTML page, so an HTML answer is not Slack's login page.
    pub async fn download(&self, url: &str, html_expected: bool) -> Result<Download, ChannelError> {
        let url = Url::parse(url).map_err(|_| ChannelError::Rejected("the file's URL is not a URL".into()))?;
        if !self.trusted.allows(&url) {
            return Err(ChannelError::Rejected("the file's URL is not on Slack's file host".into()));
        }
        let resp = self
            .http
            .get(url)
            .bearer_auth(&self.token)
            .send()
            .await
            .map_err(|e| failed("downloading the file from Slack", e))?;
        let status = resp.status();
        if !status.is_success() {
            return Err(status_error("downloading the file from Slack", status, retry_after(&resp)));
        }
        let html = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.trim().to_ascii_lowercase().starts_with("text/html"));
        if html && !html_expected {
            return Err(ChannelError::Unauthorized(FILES_READ_FIX.into()));
        }
        let size = resp.content_length();
        let body = resp.bytes_stream().map(|piece| {
            piece.map_err(|e| ChannelError::Transient(format!("reading the file from Slack: {}", e.without_url())))
        });
        Ok(Download { size, body: Box::pin(body) })
    }

    /// POSTs the file at `path` (`len` bytes, streamed from disk) to an upload URL from
    /// files.getUploadURLExternal. The URL is its own credential: no token goes with it.
    pub async fn upload(
        &self,
        upload_url: &str,
        file: tokio::fs::File,
        len: u64,
        mime: &str,
    ) -> Result<(), ChannelError> {
        let body = reqwest::Body::wrap_stream(tokio_util::io::ReaderStream::new(file));
        let mime = if mime.trim().is_empty() { "application/octet-stream" } else { mime };
        let resp = self
            .http
            .post(upload_url)
            .header(CONTENT_TYPE, mime)
            .header(CONTENT_LENGTH, len)
            .body(body)
            .send()
            .await
            .map_err(|e| failed("uploading the file to Slack", e))?;
        let status = resp.status();
        if status.is_success() {
            return Ok(());
        }
        Err(status_error("uploading the file to Slack", status, retry_after(&resp)))
    }
}

/// Slack's [`FileSource`]: the event's `url_private_download` when it is Slack's, else the URL
/// files.info gives for the file id.
#[derive(Clone)]
pub struct SlackFiles {
    shared: Arc<Shared>,
}

impl SlackFiles {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }
}

#[async_trait::async_trait]
impl FileSource for SlackFiles {
    async fn open(&self, file: &Attachment) -> Result<Download, ChannelError> {
        let s = &self.shared;
        let given = file.url.as_deref().filter(|u| s.transfer.may_carry_token(u));
        let url = match given {
            Some(u) => u.to_string(),
            None => {
                if file.url.is_some() {
                    tracing::debug!(file = %file.file_id, "the event's file URL is not Slack's; asking files.info");
                }
                let found = s.api.file_url(&file.file_id).await.map_err(|e| match e {
                    ChannelError::Unauthorized(code) => ChannelError::Unauthorized(format!(
                        "files.info refused the bot token ({code}); add the files:read scope under OAuth & \
                         Permissions and reinstall the app"
                    )),
                    e => e,
                })?;
                let found = found.ok_or_else(|| {
                    ChannelError::NotFound(format!("files.info gives no download URL for {}", file.file_id))
                })?;
                if !s.transfer.may_carry_token(&found) {
                    return Err(ChannelError::Rejected(format!(
                        "file {} is not stored on Slack (an external file?); Butler sends the token only to Slack",
                        file.file_id
                    )));
                }
                found
            }
        };
        let html = file.mime.as_deref().is_some_and(|m| m.trim().eq_ignore_ascii_case("text/html"));
        s.transfer.download(&url, html).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tls() -> rustls::ClientConfig {
        rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth()
    }

    #[test]
    fn the_token_goes_only_to_slack() {
        let fake = Transfer::new("http://127.0.0.1:4000/api", "xoxb-t", &tls()).unwrap();
        let real = Transfer::new("https://slack.com/api", "xoxb-t", &tls()).unwrap();
        let cases = [
            ("https://files.slack.com/files-pri/T1-F1/download/a.png", true, true),
            ("https://files.slack.com:443/files-pri/T1-F1/a.png", true, true),
            ("http://files.slack.com/files-pri/T1-F1/a.png", false, false),
            ("https://files.slack.com:8443/x", false, false),
            ("https://files.slack.com.evil.example/x", false, false),
            ("https://evil.example/files.slack.com/x", false, false),
            ("https://slack.com/api/files.info", false, true),
            ("http://127.0.0.1:4000/files/F1", true, false),
            ("http://127.0.0.1:4001/files/F1", false, false),
            ("http://localhost:4000/files/F1", false, false),
            ("not a url", false, false),
        ];
        for (url, with_fake, with_real) in cases {
            assert_eq!(fake.may_carry_token(url), with_fake, "{url} (api_url on a fake)");
            assert_eq!(real.may_carry_token(url), with_real, "{url} (api_url at Slack)");
        }
    }
}
