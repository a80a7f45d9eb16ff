//! Messages out: Markdown as Matrix HTML (`org.matrix.custom.html`, with the plain text beside
//! it), split under [`MAX_LEN`], the first part a reply to the message answered (in a thread:
//! in the thread), edits as `m.replace`, a file uploaded (encrypted in encrypted rooms) with the
//! text as its caption. Requests list their choices by number, and approvals get ✅ 🔁 ❌
//! reactions from Butler so people answer with one tap.
//!
//! Each send carries a transaction id derived from the outbox key, so the homeserver takes a
//! retry after a crash as the same message. It must never read a file outside the path it is
//! given nor send one larger than [`MAX_FILE`].

use crate::{errors, MatrixChannel, MAX_LEN};
use butler_channel::{
    chunk_text, markdown_html, Button, ButtonStyle, ChannelError, ChunkLimit, MessageRef, OutFile, Outbound,
    ANSWER_REACTIONS,
};
use matrix_sdk::attachment::AttachmentConfig;
use matrix_sdk::config::SyncSettings;
use matrix_sdk::room::reply::{EnforceThread, Reply};
use matrix_sdk::ruma::events::room::message::{AddMentions, TextMessageEventContent};
use matrix_sdk::ruma::{OwnedEventId, OwnedRoomId, OwnedTransactionId};
use matrix_sdk::Room;
use serde_json::{json, Value};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// The largest file Butler uploads (Synapse's default `max_upload_size`).
pub const MAX_FILE: u64 = 50 * 1024 * 1024;

/// Matrix has no buttons: the choices as a numbered line under the text (a reply with the
/// number picks one), and for an approval the reactions that answer it.
pub fn choices(buttons: &[Button]) -> String {
    let tail = if approval(buttons) { ", or react ✅ once · 🔁 always · ❌ deny" } else { "" };
    format!("{}{tail}.", butler_channel::numbered_choices(buttons))
}

/// An approval request: a primary and a danger choice (a question has neither).
fn approval(buttons: &[Button]) -> bool {
    buttons.iter().any(|b| b.style == ButtonStyle::Primary) && buttons.iter().any(|b| b.style == ButtonStyle::Danger)
}

/// The text people see: the message and, for a request, its numbered choices. A streaming
/// draft's button (stop) has no numbered form: `/stop` does it.
fn shown_text(msg: &Outbound) -> String {
    if msg.buttons.is_empty() || msg.draft {
        msg.text.clone()
    } else {
        format!("{}\n\n{}", msg.text.trim_end(), choices(&msg.buttons))
    }
}

/// A transaction id from an outbox key and a part number (`None`: the SDK makes a random one).
pub(crate) fn txn_id(key: Option<&str>, part: &str) -> Option<OwnedTransactionId> {
    let key = key?;
    let clean: String = format!("butler.{key}.{part}")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c } else { '_' })
        .collect();
    Some(OwnedTransactionId::from(clean))
}

/// The text content of one part: plain and HTML.
fn text_content(text: &str) -> Value {
    json!({"msgtype": "m.text", "body": text, "format": "org.matrix.custom.html", "formatted_body": markdown_html(text)})
}

impl MatrixChannel {
    /// The joined room `id`. A process that does not run the sync loop catches up first (at most
    /// every 10 s), so it knows the room, its members and their devices.
    pub(crate) async fn room(&self, id: &str) -> Result<Room, ChannelError> {
        let client = self.client().await?;
        let room_id =
            OwnedRoomId::try_from(id).map_err(|_| ChannelError::Rejected(format!("`{id}` is not a room id")))?;
        if !self.syncing.load(Ordering::SeqCst) {
            let stale = {
                let mut last = self.caught_up.lock().unwrap_or_else(|e| e.into_inner());
                let stale = last.is_none_or(|t| t.elapsed() > Duration::from_secs(10));
                if stale {
                    *last = Some(std::time::Instant::now());
                }
                stale
            };
            if stale {
                client.sync_once(SyncSettings::default().timeout(Duration::ZERO)).await.map_err(errors::sdk)?;
            }
        }
        client.get_room(&room_id).ok_or_else(|| ChannelError::NotFound(format!("Butler is not in the room {id}")))
    }

    /// Sends a message (or a file with its caption); the event id of the last part.
    pub(crate) async fn send_message(&self, msg: &Outbound) -> Result<String, ChannelError> {
        if msg.private_to.is_some() && msg.text.trim().is_empty() {
            // Acknowledging a reaction or a reply: Matrix has nothing to answer.
            return Ok(String::new());
        }
        let room = self.room(&msg.conversation.id).await?;
        let text = shown_text(msg);
        let mut parts =
            if text.chars().count() > MAX_LEN { chunk_text(&text, ChunkLimit::Chars(MAX_LEN)) } else { vec![text] };
        if parts.is_empty() {
            parts.push(String::new());
        }
        let thread = msg.conversation.thread.as_deref();
        let count = parts.len();
        let mut last = String::new();
        for (n, part) in parts.iter().enumerate() {
            let reply_to = if n == 0 { msg.reply_to.as_deref() } else { None };
            let txn = txn_id(msg.key.as_deref(), &n.to_string());
            last = match (&msg.file, n + 1 == count) {
                (Some(file), true) => self.send_file(&room, file, part, reply_to.or(thread), txn).await?,
                _ => {
                    let mut content = text_content(part);
                    content["m.mentions"] = json!({});
                    match (thread, reply_to) {
                        (Some(root), reply) => {
                            content["m.relates_to"] = json!({"rel_type": "m.thread", "event_id": root,
                                "is_falling_back": reply.is_none(),
                                "m.in_reply_to": {"event_id": reply.unwrap_or(root)}});
                        }
                        (None, Some(reply)) => content["m.relates_to"] = json!({"m.in_reply_to": {"event_id": reply}}),
                        (None, None) => {}
                    }
                    let mut send = room.send_raw("m.room.message", content);
                    if let Some(txn) = &txn {
                        send = send.with_transaction_id(txn);
                    }
                    send.await.map_err(errors::sdk)?.response.event_id.to_string()
                }
            };
        }
        if approval(&msg.buttons) && !msg.draft {
            self.preset_reactions(&room, &last, msg.key.as_deref()).await;
        }
        Ok(last)
    }

    /// ✅ 🔁 ❌ under a request, from Butler, so people tap instead of typing; failures only
    /// logged (a numbered reply still works).
    async fn preset_reactions(&self, room: &Room, event_id: &str, key: Option<&str>) {
        for (n, emoji) in ANSWER_REACTIONS.iter().enumerate() {
            let content = json!({"m.relates_to": {"rel_type": "m.annotation", "event_id": event_id, "key": emoji}});
            let mut send = room.send_raw("m.reaction", content);
            let txn = txn_id(key, &format!("r{n}"));
            if let Some(txn) = &txn {
                send = send.with_transaction_id(txn);
            }
            if let Err(e) = send.await {
                tracing::debug!(channel = "matrix", error = %e, "preset reaction not sent");
            }
        }
    }

    /// Replaces a message's text (`m.replace`), as streaming and decided requests do.
    pub(crate) async fn edit_message(&self, target: &MessageRef, msg: &Outbound) -> Result<(), ChannelError> {
        if target.id.is_empty() {
            return Err(ChannelError::NotFound("no message to edit".into()));
        }
        let room = self.room(&target.conversation.id).await?;
        let text: String = shown_text(msg).chars().take(MAX_LEN).collect();
        let new = text_content(&text);
        let mut content = text_content(&format!("* {text}"));
        content["m.new_content"] = new;
        content["m.relates_to"] = json!({"rel_type": "m.replace", "event_id": target.id});
        room.send_raw("m.room.message", content).await.map_err(errors::sdk)?;
        Ok(())
    }

    async fn send_file(
        &self,
        room: &Room,
        file: &OutFile,
        caption: &str,
        reply_to: Option<&str>,
        txn: Option<OwnedTransactionId>,
    ) -> Result<String, ChannelError> {
        if file.size > MAX_FILE {
            return Err(ChannelError::Rejected(format!("{} is larger than the homeserver's 50 MiB", file.name)));
        }
        let bytes = tokio::fs::read(&file.path)
            .await
            .map_err(|e| ChannelError::Rejected(format!("the file to send cannot be read: {}", e.kind())))?;
        let mime: mime::Mime = file.mime.parse().unwrap_or(mime::APPLICATION_OCTET_STREAM);
        let mut config = AttachmentConfig::new();
        if !caption.trim().is_empty() {
            config = config.caption(Some(TextMessageEventContent::html(caption, markdown_html(caption))));
        }
        if let Some(reply) = reply_to.and_then(|r| OwnedEventId::try_from(r).ok()) {
            config = config.reply(Some(Reply {
                event_id: reply,
                enforce_thread: EnforceThread::MaybeThreaded,
                add_mentions: AddMentions::No,
            }));
        }
        if let Some(txn) = txn {
            config = config.txn_id(txn);
        }
        let sent = room.send_attachment(file.name.clone(), &mime, bytes, config).await.map_err(errors::sdk)?;
        Ok(sent.event_id.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_and_transaction_ids() {
        let approve = [
            Button::new("Approve once", "ap:a:once", ButtonStyle::Primary),
            Button::new("Always", "ap:a:session", ButtonStyle::Default),
            Button::new("Deny", "ap:a:deny", ButtonStyle::Danger),
        ];
        assert_eq!(
            choices(&approve),
            "Reply to this message with a number: 1 Approve once · 2 Always · 3 Deny, or react ✅ once · 🔁 always · ❌ deny."
        );
        assert_eq!(choices(&approve[1..2]), "Reply to this message with a number: 1 Always.");
        assert_eq!(txn_id(Some("outbox:12/a b"), "0").unwrap().as_str(), "butler.outbox_12_a_b.0");
        assert_eq!(txn_id(None, "0"), None);
        let c = text_content("**hi**");
        assert_eq!(c["formatted_body"], "<p><strong>hi</strong></p>");
        assert_eq!(c["body"], "**hi**");
    }
}
