//! Files people send, fetched through the Graph API ([`WhatsAppFiles`], Butler's
//! [`FileSource`] for WhatsApp): `GET {api_url}/{media_id}` answers a short-lived URL, which is
//! then fetched with the same bearer token and streamed piece by piece.
//!
//! The token is sent only to Meta's media host (`lookaside.fbsbx.com`) or to the origin of the
//! configured `api_url` (a test fake); a URL anywhere else is refused, and redirects are not
//! followed. This module must never log or return the token, nor read a file whole into memory.

use crate::api::{answer, transport};
use crate::Settings;
use butler_channel::{Attachment, ChannelError, Download, FileHosts, FileSource};
use futures_util::StreamExt;
use reqwest::header::CONTENT_LENGTH;

/// Meta's media host: the only public host that gets the token outside the Graph API.
pub const MEDIA_HOST: &str = "lookaside.fbsbx.com";

/// Downloads of the files people send to Butler's number.
pub struct WhatsAppFiles {
    settings: Settings,
    http: reqwest::Client,
    trusted: FileHosts,
}

impl WhatsAppFiles {
    pub(crate) fn new(settings: Settings, http: reqwest::Client) -> Self {
        let trusted = FileHosts::new(&[MEDIA_HOST], &settings.api_url);
        Self { settings, http, trusted }
    }
}

#[async_trait::async_trait]
impl FileSource for WhatsAppFiles {
    async fn open(&self, file: &Attachment) -> Result<Download, ChannelError> {
        let what = "asking WhatsApp for a file";
        if file.file_id.is_empty() || !file.file_id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            return Err(ChannelError::Rejected(format!("{what}: not a media id")));
        }
        let resp = self
            .http
            .get(self.settings.url(&file.file_id))
            .bearer_auth(&self.settings.access_token)
            .send()
            .await
            .map_err(|e| transport(what, e))?;
        let info = answer(what, resp).await?;
        let url = info["url"]
            .as_str()
            .and_then(|u| reqwest::Url::parse(u).ok())
            .ok_or_else(|| ChannelError::Transient(format!("{what}: the answer has no URL")))?;
        if !self.trusted.allows(&url) {
            return Err(ChannelError::Rejected(format!("{what}: the media URL is not on Meta's media host")));
        }
        let what = "downloading a file from WhatsApp";
        let resp =
            self.http.get(url).bearer_auth(&self.settings.access_token).send().await.map_err(|e| transport(what, e))?;
        if !resp.status().is_success() {
            return Err(crate::graph_error(what, resp.status().as_u16(), &serde_json::Value::Null));
        }
        let size = resp
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse().ok())
            .or_else(|| info["file_size"].as_u64());
        let body = resp.bytes_stream().map(|r| r.map_err(|e| transport("downloading a file from WhatsApp", e)));
        Ok(Download { size, body: Box::pin(body) })
    }
}
