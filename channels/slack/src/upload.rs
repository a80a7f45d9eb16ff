//! Butler's files to Slack, with Slack's current upload flow (`files.upload` is retired):
//! files.getUploadURLExternal (name, length) -> the bytes streamed from disk to the returned
//! upload URL -> files.completeUploadExternal, which shares the file in the conversation's
//! channel and thread with the message text (as mrkdwn) as its comment.
//!
//! The two Web API calls go through the per-method 429 holds like every other call. Slack
//! shares the file in the background and answers with the file, not a message `ts`, so the
//! [`MessageRef`] of a file message is the file's id (`F…`), which cannot be edited. A retry
//! after a failure uploads again from the start (an upload that was never completed stays
//! unshared and Slack drops it).
//!
//! This module must never read the file whole into memory, or send it to anyone but Slack.

use crate::render::to_mrkdwn;
use crate::Shared;
use butler_channel::{ChannelError, MessageRef, OutFile, Outbound};

/// Whether `id` is a file's id rather than a message `ts` ("1700000000.000100").
pub fn is_file_id(id: &str) -> bool {
    !id.contains('.') && id.starts_with('F')
}

impl Shared {
    /// Sends `file` in `msg`'s conversation with `msg.text` as its comment.
    pub(crate) async fn send_file(&self, msg: &Outbound, file: &OutFile) -> Result<MessageRef, ChannelError> {
        let channel = self.resolve(&msg.conversation.id).await?;
        let thread = msg.conversation.thread.as_deref();
        let disk = tokio::fs::File::open(&file.path)
            .await
            .map_err(|e| ChannelError::Rejected(format!("cannot read the file to send ({}): {e}", file.name)))?;
        let len = disk
            .metadata()
            .await
            .map_err(|e| ChannelError::Rejected(format!("cannot read the file to send ({}): {e}", file.name)))?
            .len();
        if len == 0 {
            return Err(ChannelError::Rejected(format!("{} is empty; Slack takes no empty files", file.name)));
        }
        let (upload_url, id) = self.api.upload_url(&file.name, len).await?;
        self.transfer.upload(&upload_url, disk, len, &file.mime).await?;
        let comment = Some(to_mrkdwn(msg.text.trim())).filter(|c| !c.trim().is_empty());
        let id = self.api.complete_upload(&id, &file.name, &channel, thread, comment).await?;
        if let Some(t) = thread {
            // Butler has spoken in this thread: replies there are for it.
            self.threads.add(&channel, t);
        }
        self.done_working(msg).await;
        tracing::debug!(file = %id, bytes = len, "file shared on Slack");
        Ok(MessageRef { conversation: msg.conversation.clone(), id })
    }
}
