//! Files people attach to their mail, fetched from the mailbox ([`EmailFiles`], Butler's
//! `FileSource` for email): the attachment `<uidvalidity>:<uid>:<n>` is the n-th attachment of
//! the mail with that UID, read again with `BODY.PEEK[]` (the mail stays unread) while the
//! folder still has that UIDVALIDITY.
//!
//! IMAP gives the whole mail, so a file costs the mail's size in memory once (mail servers cap a
//! mail at a few tens of MB); it must never read another folder or a mail after UIDVALIDITY
//! changed.

use crate::Settings;
use butler_channel::{Attachment, ChannelError, Download, FileSource};
use futures_util::StreamExt;

/// Downloads of the files people mail to Butler.
pub struct EmailFiles {
    settings: Settings,
}

impl EmailFiles {
    pub(crate) fn new(settings: Settings) -> Self {
        Self { settings }
    }
}

fn parse_id(id: &str) -> Option<(u32, u32, usize)> {
    let mut parts = id.split(':');
    let v = parts.next()?.parse().ok()?;
    let uid = parts.next()?.parse().ok()?;
    let n = parts.next()?.parse().ok()?;
    parts.next().is_none().then_some((v, uid, n))
}

#[async_trait::async_trait]
impl FileSource for EmailFiles {
    async fn open(&self, file: &Attachment) -> Result<Download, ChannelError> {
        let (validity, uid, n) =
            parse_id(&file.file_id).ok_or_else(|| ChannelError::Rejected("not a mail attachment id".into()))?;
        let mut session = crate::imap::login(&self.settings.imap).await?;
        let t = |e: async_imap::error::Error| ChannelError::Transient(format!("IMAP: {e}"));
        let mailbox = session.examine(&self.settings.folder).await.map_err(t)?;
        if mailbox.uid_validity != Some(validity) {
            return Err(ChannelError::NotFound("the mailbox changed since the mail came".into()));
        }
        let raw = {
            let mut fetched = session.uid_fetch(uid.to_string(), "BODY.PEEK[]").await.map_err(t)?;
            let mut raw = None;
            while let Some(f) = fetched.next().await {
                if let Some(b) = f.map_err(t)?.body() {
                    raw = Some(b.to_vec());
                }
            }
            raw
        };
        let _ = session.logout().await;
        let raw = raw.ok_or_else(|| ChannelError::NotFound("the mail is gone".into()))?;
        let msg = mail_parser::MessageParser::default()
            .parse(&raw)
            .ok_or_else(|| ChannelError::NotFound("the mail cannot be read".into()))?;
        let part = msg.attachments().nth(n).ok_or_else(|| ChannelError::NotFound("no such attachment".into()))?;
        let bytes = bytes::Bytes::copy_from_slice(part.contents());
        let size = Some(bytes.len() as u64);
        Ok(Download { size, body: Box::pin(futures_util::stream::once(async move { Ok(bytes) })) })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn attachment_ids() {
        let cases = [("7:12:0", Some((7, 12, 0))), ("7:12", None), ("7:x:0", None), ("1:2:3:4", None)];
        for (id, want) in cases {
            assert_eq!(super::parse_id(id), want, "{id}");
        }
    }
}
