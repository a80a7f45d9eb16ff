//! The web chat as a [`Channel`]: sending writes the message to the web message log and pushes
//! it to open pages; editing a draft only pushes (streaming is not written to disk); the final
//! edit is written. Sends are idempotent on the outbox key, so a re-send after a crash shows
//! one message, not two. A message that answers no web event (a scheduled briefing, an alert,
//! a background result) marks its conversation as written to by Butler on its own. A file is
//! shown as a `📎` link under its caption (the bytes stay in the outbox's copy).

use super::hub::WebHub;
use super::stores::WebStores;
use super::uploads::Uploads;
use crate::store::{NewWebMessage, WebConversationStore, WebMessage, WebStore};
use async_trait::async_trait;
use butler_channel::{Caps, Channel, ChannelError, MessageRef, Outbound, TextFormat};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

pub(crate) struct WebChannel {
    store: Arc<dyn WebStore>,
    marks: Arc<dyn WebConversationStore>,
    hub: Arc<WebHub>,
    /// Where files Butler sends are registered, so the page can fetch them.
    uploads: Arc<Uploads>,
}

impl WebChannel {
    pub(crate) fn new(store: &WebStores, hub: Arc<WebHub>, uploads: Arc<Uploads>) -> Self {
        Self { store: store.messages.clone(), marks: store.conversations.clone(), hub, uploads }
    }

    /// The text shown for `msg`: with a file, its caption and then a `📎` link to the file.
    async fn text_of(&self, msg: &Outbound, key: &str) -> Result<String, ChannelError> {
        let Some(file) = &msg.file else { return Ok(msg.text.clone()) };
        let meta = self
            .uploads
            .record_sent(&msg.conversation.to_string(), key, file)
            .await
            .map_err(|e| ChannelError::Transient(format!("registering the file failed: {e}")))?;
        let link = format!(
            "📎 [{}](/api/v1/files/{}) ({})",
            meta.name.replace(['[', ']'], ""),
            meta.id,
            crate::media::human_size(meta.size)
        );
        Ok(if msg.text.is_empty() { link } else { format!("{}\n\n{link}", msg.text) })
    }
}

/// Whether a message with outbox key `key` was written without the user asking: anything but
/// the answer to a web event (`web:...`: a message, a click) or an approval request of a turn.
fn unprompted(key: Option<&str>) -> bool {
    key.is_none_or(|k| !(k.starts_with("web:") || k.starts_with("approval:")))
}

fn transient(e: crate::store::StoreError) -> ChannelError {
    ChannelError::Transient(e.to_string())
}

pub(crate) fn message_json(m: &WebMessage) -> serde_json::Value {
    json!({
        "id": m.id,
        "conversation": m.conversation,
        "role": m.role,
        "author": m.author,
        "text": m.text,
        "buttons": m.buttons,
        "created_ms": m.created_ms,
        "updated_ms": m.updated_ms,
    })
}

#[async_trait]
impl Channel for WebChannel {
    fn name(&self) -> &str {
        crate::ids::WEB_CHANNEL
    }

    fn caps(&self) -> Caps {
        Caps {
            buttons: true,
            edit: true,
            max_len: 100_000,
            typing: false,
            min_edit_interval: Duration::from_millis(100),
            format: TextFormat::Markdown,
            exclusive: false,
            reply_window: false,
        }
    }

    async fn send(&self, msg: &Outbound) -> Result<MessageRef, ChannelError> {
        // A bare acknowledgement of a click: the page needs nothing (a private answer with text
        // is shown as a normal message: only its owner reads a web conversation).
        if msg.private_to.is_some() && msg.text.is_empty() {
            return Ok(MessageRef { conversation: msg.conversation.clone(), id: "ack".into() });
        }
        let conversation = msg.conversation.to_string();
        let key = msg.key.clone().unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let text = self.text_of(msg, &key).await?;
        let new = NewWebMessage {
            conversation: conversation.clone(),
            key,
            role: "assistant".into(),
            author: "butler".into(),
            text: text.clone(),
            buttons: msg.buttons.clone(),
        };
        let mut row = self.store.web_insert(&new).await.map_err(transient)?;
        if unprompted(msg.key.as_deref()) {
            self.marks.web_mark_unprompted(&conversation, row.created_ms).await.map_err(transient)?;
        }
        if row.text != text || row.buttons != msg.buttons {
            // Sent before (e.g. as a draft, before a crash): bring it up to date.
            row = self.store.web_update(row.id, &text, &msg.buttons).await.map_err(transient)?.unwrap_or(row);
        }
        self.hub.publish(&conversation, "created", message_json(&row));
        Ok(MessageRef { conversation: msg.conversation.clone(), id: row.id.to_string() })
    }

    async fn edit(&self, target: &MessageRef, msg: &Outbound) -> Result<(), ChannelError> {
        let id: i64 = target.id.parse().map_err(|_| ChannelError::NotFound(target.id.clone()))?;
        let conversation = msg.conversation.to_string();
        if msg.draft {
            let data = json!({"id": id, "conversation": conversation, "text": msg.text, "buttons": msg.buttons, "draft": true});
            self.hub.publish(&conversation, "updated", data);
            return Ok(());
        }
        let row = self
            .store
            .web_update(id, &msg.text, &msg.buttons)
            .await
            .map_err(transient)?
            .ok_or_else(|| ChannelError::NotFound(target.id.clone()))?;
        self.hub.publish(&conversation, "updated", message_json(&row));
        Ok(())
    }
}
