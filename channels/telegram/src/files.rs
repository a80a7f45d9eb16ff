//! [`TelegramFiles`]: how Butler fetches the files people send on Telegram. `getFile` turns a
//! `file_id` into a path on the Bot API server, and the file is then streamed from
//! `{api_url}/file/bot<token>/<file_path>`, piece by piece as the caller reads it.
//!
//! Telegram lets bots download files of at most 20 MB; a larger one is refused by `getFile`
//! ("file is too big") and comes back as `ChannelError::Rejected` saying so. The file URL holds
//! the bot token, so no error text here may carry a URL or the token. This module must never
//! buffer a file or write it anywhere: the caller decides what to keep.

use crate::send::classify;
use butler_channel::{Attachment, ChannelError, Download, FileSource};
use futures_util::{stream, StreamExt};
use std::time::Duration;
use teloxide::net::Download as _;
use teloxide::requests::Requester;
use teloxide::types::FileId;
use teloxide::{ApiError, Bot, RequestError};

/// The largest file Telegram lets a bot download through the public Bot API.
pub const MAX_DOWNLOAD: u64 = 20 * 1024 * 1024;

/// The Telegram channel's [`FileSource`].
pub struct TelegramFiles {
    /// For getFile (short calls).
    bot: Bot,
    /// For the download itself (no overall timeout a large file could run into).
    transfer: Bot,
    /// Masked in every error text.
    token: String,
}

impl TelegramFiles {
    pub(crate) fn new(bot: Bot, transfer: Bot, token: String) -> Self {
        Self { bot, transfer, token }
    }
}

/// What went wrong with getFile, for the caller to act on.
fn get_file_error(e: RequestError, token: &str) -> ChannelError {
    let description = match &e {
        RequestError::Api(api) => api.to_string().to_ascii_lowercase(),
        _ => String::new(),
    };
    let unknown = matches!(e, RequestError::Api(ApiError::FileIdInvalid | ApiError::WrongFileId))
        || ["invalid file_id", "invalid file id", "wrong file id"].iter().any(|s| description.contains(s));
    if description.contains("file is too big") {
        ChannelError::Rejected(format!(
            "the file is larger than the {} MB Telegram lets bots download",
            MAX_DOWNLOAD / (1024 * 1024)
        ))
    } else if unknown {
        ChannelError::NotFound("Telegram does not know this file (an unknown or expired file_id)".into())
    } else {
        classify(e, token)
    }
}

/// What went wrong while downloading (the answer of the file URL, or the connection).
fn download_error(e: &reqwest_error::Error, token: &str) -> ChannelError {
    let text = crate::redact(&reqwest_error::text(e), token);
    match reqwest_error::status(e) {
        Some(404) => ChannelError::NotFound(format!("the Bot API no longer serves this file ({text})")),
        Some(401) => ChannelError::Unauthorized(text),
        Some(429) => ChannelError::RateLimited { retry_after: Duration::from_secs(1) },
        Some(s) if (400..500).contains(&s) => ChannelError::Rejected(text),
        _ => ChannelError::Transient(text),
    }
}

/// teloxide's download errors are reqwest's (a crate this one does not name): read through
/// their methods only, never their `Display` with the URL in it.
mod reqwest_error {
    use teloxide::net::Download;

    pub type Error = <teloxide::Bot as Download>::StreamErr;

    pub fn status(e: &Error) -> Option<u16> {
        e.status().map(|s| s.as_u16())
    }

    /// The error and its causes, without the URL (which holds the bot token).
    pub fn text(e: &Error) -> String {
        let mut msg = match e.status() {
            Some(s) => format!("HTTP {s}"),
            None if e.is_timeout() => "timed out".to_string(),
            None if e.is_connect() => "could not connect".to_string(),
            None => "the download failed".to_string(),
        };
        let mut cur = std::error::Error::source(e);
        while let Some(s) = cur {
            msg = format!("{msg}: {s}");
            cur = s.source();
        }
        msg
    }
}

#[async_trait::async_trait]
impl FileSource for TelegramFiles {
    async fn open(&self, file: &Attachment) -> Result<Download, ChannelError> {
        let found =
            self.bot.get_file(FileId(file.file_id.clone())).await.map_err(|e| get_file_error(e, &self.token))?;
        let size = crate::normalize::known_size(found.meta.size);
        let mut body = self.transfer.download_file_stream(&found.path);
        // The first piece shows whether the server serves the file at all (a 404 comes as the
        // stream's first item): the caller gets that error from `open`, not from the body.
        let first = match body.next().await {
            None => return Ok(Download { size, body: Box::pin(stream::empty()) }),
            Some(Err(e)) => return Err(download_error(&e, &self.token)),
            Some(Ok(piece)) => piece,
        };
        let token = self.token.clone();
        let rest = body.map(move |piece| {
            piece.map_err(|e| {
                let error = download_error(&e, &token);
                tracing::warn!(error = %error, "a Telegram file download broke off");
                error
            })
        });
        Ok(Download { size, body: Box::pin(stream::once(async move { Ok(first) }).chain(rest)) })
    }
}
