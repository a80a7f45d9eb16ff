//! Files people send, fetched through the daemon's `getAttachment` ([`SignalFiles`], Butler's
//! `FileSource` for Signal). signal-cli has already downloaded and decrypted them; it answers
//! the bytes base64-encoded, with the sender (`recipient`) or the group the attachment came in.
//!
//! The daemon answers a file whole in one JSON document, so a file the sender says is larger
//! than Signal's limit is refused before asking; it must never pass an id that is not one.

use crate::rpc::Rpc;
use base64::Engine;
use butler_channel::{Attachment, ChannelError, Download, FileSource};
use serde_json::json;

/// Downloads of the files people send to Butler's number.
pub struct SignalFiles {
    rpc: Rpc,
}

impl SignalFiles {
    pub(crate) fn new(rpc: Rpc) -> Self {
        Self { rpc }
    }
}

#[async_trait::async_trait]
impl FileSource for SignalFiles {
    async fn open(&self, file: &Attachment) -> Result<Download, ChannelError> {
        let id_ok = !file.file_id.is_empty()
            && file.file_id.len() <= 200
            && file.file_id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        if !id_ok {
            return Err(ChannelError::Rejected("asking Signal for a file: not an attachment id".into()));
        }
        if file.size.is_some_and(|s| s > crate::send::MAX_FILE) {
            return Err(ChannelError::Rejected("asking Signal for a file: larger than Signal's 100 MiB".into()));
        }
        let mut params = json!({"id": file.file_id});
        match file.url.as_deref() {
            Some(whose) if whose.starts_with(crate::normalize::GROUP) => {
                params["groupId"] = json!(crate::normalize::group_id(whose));
            }
            Some(whose) if whose.starts_with("recipient:") => {
                params["recipient"] = json!(&whose["recipient:".len()..]);
            }
            _ => return Err(ChannelError::Rejected("asking Signal for a file: whose it is is unknown".into())),
        }
        let answer = self.rpc.call("getAttachment", params).await?;
        let data =
            answer["data"].as_str().ok_or_else(|| ChannelError::Transient("getAttachment answered no data".into()))?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|_| ChannelError::Transient("getAttachment answered data that is not base64".into()))?;
        let size = Some(bytes.len() as u64);
        let body = futures_util::stream::once(async move { Ok(bytes::Bytes::from(bytes)) });
        Ok(Download { size, body: Box::pin(body) })
    }
}
