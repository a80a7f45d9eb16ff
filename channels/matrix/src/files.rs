//! The files people send, fetched from the homeserver's media repository through the SDK,
//! which also decrypts those sent in encrypted rooms. The attachment's `file_id` is its media
//! source as JSON (`{"url": "mxc://…"}` or `{"file": {…}}`), as `normalize` wrote it.
//!
//! It must never fetch anything but an `mxc://` source, nor buffer more than the claimed
//! file (the media path caps sizes as it reads).

use crate::{errors, MatrixChannel};
use butler_channel::{Attachment, ChannelError, Download, FileSource};
use matrix_sdk::media::{MediaFormat, MediaRequestParameters};
use matrix_sdk::ruma::events::room::MediaSource;
use std::sync::Arc;

/// Fetches Matrix media for the media path.
pub struct MatrixFiles {
    channel: Arc<MatrixChannel>,
}

impl MatrixFiles {
    pub(crate) fn new(channel: Arc<MatrixChannel>) -> Self {
        Self { channel }
    }
}

/// The media source of an attachment, if it is one `normalize` wrote.
pub(crate) fn source(file: &Attachment) -> Result<MediaSource, ChannelError> {
    let bad = || ChannelError::Rejected("not a Matrix media source".into());
    let source: MediaSource = serde_json::from_str(&file.file_id).map_err(|_| bad())?;
    let mxc = match &source {
        MediaSource::Plain(uri) => uri.as_str(),
        MediaSource::Encrypted(file) => file.url.as_str(),
    };
    if !mxc.starts_with("mxc://") {
        return Err(bad());
    }
    Ok(source)
}

#[async_trait::async_trait]
impl FileSource for MatrixFiles {
    async fn open(&self, file: &Attachment) -> Result<Download, ChannelError> {
        let source = source(file)?;
        let client = self.channel.client().await?;
        let request = MediaRequestParameters { source, format: MediaFormat::File };
        let bytes = client.media().get_media_content(&request, false).await.map_err(errors::sdk)?;
        let size = bytes.len() as u64;
        let body = futures_util::stream::once(async move { Ok(bytes::Bytes::from(bytes)) });
        Ok(Download { size: Some(size), body: Box::pin(body) })
    }
}

#[cfg(test)]
mod tests {
    use butler_channel::{Attachment, MediaKind};

    #[test]
    fn only_mxc_sources_are_fetched() {
        let cases = [
            (r#"{"url":"mxc://hs.test/abc"}"#, true),
            (r#"{"url":"https://evil.example/abc"}"#, false),
            ("not json", false),
        ];
        for (id, ok) in cases {
            assert_eq!(super::source(&Attachment::new(MediaKind::Image, id)).is_ok(), ok, "{id}");
        }
    }
}
