//! Messages out through `POST {api_url}/{phone_number_id}/messages`: text (rendered, no link
//! preview, split at paragraph breaks under 4,096 characters), replies quoting a message
//! (`context.message_id`), buttons as interactive reply buttons (at most 3, titles cut to 20
//! characters) or, for more options, a list message (at most 10 rows), files uploaded to
//! `{phone_number_id}/media` and sent as an image or document message with the text as caption,
//! and the read receipt with the typing indicator.
//!
//! It must never send a link preview, nor a button WhatsApp would refuse.

use crate::render::render;
use crate::{WhatsAppChannel, MAX_CAPTION, MAX_LEN};
use butler_channel::{chunk_text, Button, ChannelError, ChunkLimit, OutFile, Outbound};
use serde_json::{json, Value};

/// WhatsApp's limits on interactive messages.
const MAX_BUTTONS: usize = 3;
const MAX_BUTTON_TITLE: usize = 20;
const MAX_ROWS: usize = 10;
const MAX_ROW_TITLE: usize = 24;
const MAX_ROW_DESCRIPTION: usize = 72;
const MAX_INTERACTIVE_BODY: usize = 1024;

/// `text` cut to `max` characters, with `…` when cut.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut s: String = text.chars().take(max.saturating_sub(1)).collect();
    s.push('…');
    s
}

/// The `interactive` object for `buttons` under `body`: reply buttons, or a list beyond three.
pub fn interactive(body: &str, buttons: &[Button]) -> Value {
    if buttons.len() <= MAX_BUTTONS {
        let buttons: Vec<Value> = buttons
            .iter()
            .map(|b| json!({"type": "reply", "reply": {"id": b.action, "title": cut(&b.label, MAX_BUTTON_TITLE)}}))
            .collect();
        return json!({"type": "button", "body": {"text": body}, "action": {"buttons": buttons}});
    }
    if buttons.len() > MAX_ROWS {
        tracing::warn!(options = buttons.len(), "WhatsApp lists hold 10 rows; the rest are left out");
    }
    let rows: Vec<Value> = buttons
        .iter()
        .take(MAX_ROWS)
        .map(|b| {
            let mut row = json!({"id": b.action, "title": cut(&b.label, MAX_ROW_TITLE)});
            if b.label.chars().count() > MAX_ROW_TITLE {
                row["description"] = json!(cut(&b.label, MAX_ROW_DESCRIPTION));
            }
            row
        })
        .collect();
    json!({"type": "list", "body": {"text": body},
        "action": {"button": "Choose", "sections": [{"title": "Options", "rows": rows}]}})
}

/// A message object to `to`, quoting `reply_to` when given.
pub(crate) fn envelope(to: &str, reply_to: Option<&str>, kind: &str, content: Value) -> Value {
    let mut m = json!({"messaging_product": "whatsapp", "recipient_type": "individual", "to": to, "type": kind});
    m[kind] = content;
    if let Some(id) = reply_to {
        m["context"] = json!({"message_id": id});
    }
    m
}

fn text_content(body: &str) -> Value {
    json!({"preview_url": false, "body": body})
}

impl WhatsAppChannel {
    /// Sends a text message (with its buttons); the last WhatsApp message id.
    pub(crate) async fn send_message(&self, msg: &Outbound) -> Result<String, ChannelError> {
        let to = msg.conversation.id.as_str();
        let text = render(&msg.text);
        if msg.private_to.is_some() && text.trim().is_empty() {
            // Acknowledging a click: WhatsApp has nothing to answer.
            return Ok(String::new());
        }
        let mut parts =
            if text.chars().count() > MAX_LEN { chunk_text(&text, ChunkLimit::Chars(MAX_LEN)) } else { vec![text] };
        let last = parts.pop().unwrap_or_default();
        let mut reply_to = msg.reply_to.as_deref();
        for part in &parts {
            self.post_message(&envelope(to, reply_to, "text", text_content(part))).await?;
            reply_to = None;
        }
        if msg.buttons.is_empty() {
            let first = parts.is_empty();
            return match self.post_message(&envelope(to, reply_to, "text", text_content(&last))).await {
                Err(ChannelError::OutsideWindow(why)) if first => self.outside_window(to, &msg.text, why).await,
                other => other,
            };
        }
        let body = if last.chars().count() > MAX_INTERACTIVE_BODY {
            self.post_message(&envelope(to, reply_to, "text", text_content(&last))).await?;
            reply_to = None;
            "Choose:".to_string()
        } else if last.trim().is_empty() {
            "Choose:".to_string()
        } else {
            last
        };
        self.post_message(&envelope(to, reply_to, "interactive", interactive(&body, &msg.buttons))).await
    }

    /// Uploads `file` and sends it as an image or a document with the text as caption.
    pub(crate) async fn send_file(&self, msg: &Outbound, file: &OutFile) -> Result<String, ChannelError> {
        let media_id = self.upload(file).await?;
        let to = msg.conversation.id.as_str();
        let caption = render(&msg.text);
        let image = file.photo && matches!(file.mime.as_str(), "image/jpeg" | "image/png");
        let fits = caption.chars().count() <= MAX_CAPTION;
        let mut content = json!({"id": media_id});
        if fits && !caption.trim().is_empty() {
            content["caption"] = json!(caption);
        }
        let kind = if image {
            "image"
        } else {
            content["filename"] = json!(file.name);
            "document"
        };
        let id = self.post_message(&envelope(to, msg.reply_to.as_deref(), kind, content)).await?;
        if fits || caption.trim().is_empty() {
            return Ok(id);
        }
        let text = Outbound { file: None, reply_to: None, ..msg.clone() };
        self.send_message(&text).await
    }

    /// Streams `file` to `{phone_number_id}/media`; the media id.
    async fn upload(&self, file: &OutFile) -> Result<String, ChannelError> {
        let what = "uploading a file to WhatsApp";
        let handle = tokio::fs::File::open(&file.path)
            .await
            .map_err(|e| ChannelError::Rejected(format!("{what}: cannot open the file: {e}")))?;
        let stream = reqwest::Body::wrap_stream(tokio_util::io::ReaderStream::new(handle));
        let part = reqwest::multipart::Part::stream_with_length(stream, file.size)
            .file_name(file.name.clone())
            .mime_str(&file.mime)
            .map_err(|e| ChannelError::Rejected(format!("{what}: {e}")))?;
        let form = reqwest::multipart::Form::new()
            .text("messaging_product", "whatsapp")
            .text("type", file.mime.clone())
            .part("file", part);
        let url = self.settings.url(&format!("{}/media", self.settings.phone_number_id));
        let resp = self
            .transfer
            .post(url)
            .bearer_auth(&self.settings.access_token)
            .multipart(form)
            .send()
            .await
            .map_err(|e| crate::api::transport(what, e))?;
        let answer = crate::api::answer(what, resp).await?;
        answer["id"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| ChannelError::Transient(format!("{what}: the answer has no media id")))
    }

    /// Marks `message_id` read and shows the typing indicator.
    pub(crate) async fn read_and_typing(&self, message_id: &str) -> Result<(), ChannelError> {
        let body = json!({"messaging_product": "whatsapp", "status": "read", "message_id": message_id,
            "typing_indicator": {"type": "text"}});
        let tail = format!("{}/messages", self.settings.phone_number_id);
        self.post("marking a WhatsApp message read", &tail, &body).await.map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use butler_channel::ButtonStyle;

    #[test]
    fn buttons_become_reply_buttons_or_a_list() {
        let b = |label: &str, action: &str| Button::new(label, action, ButtonStyle::Default);
        let three = [b("Approve", "ap:1:once"), b("Always", "ap:1:always"), b("Deny", "ap:1:deny")];
        let v = interactive("Run `ls`?", &three);
        assert_eq!(v["type"], "button");
        let titles: Vec<&str> =
            v["action"]["buttons"].as_array().unwrap().iter().map(|b| b["reply"]["title"].as_str().unwrap()).collect();
        assert_eq!(titles, ["Approve", "Always", "Deny"]);
        assert_eq!(v["action"]["buttons"][2]["reply"]["id"], "ap:1:deny");
        let long = [b("A very long option label indeed", "q:1")];
        let title = interactive("?", &long)["action"]["buttons"][0]["reply"]["title"].as_str().unwrap().to_string();
        assert_eq!((title.chars().count(), title.ends_with('…')), (20, true));
        let many: Vec<Button> =
            (0..12).map(|i| b(&format!("Option number {i} with a long tail"), &format!("q:{i}"))).collect();
        let v = interactive("Pick", &many);
        let rows = v["action"]["sections"][0]["rows"].as_array().unwrap();
        assert_eq!((v["type"].as_str(), rows.len()), (Some("list"), 10));
        assert!(rows[0]["title"].as_str().unwrap().chars().count() <= 24 && rows[0]["description"].is_string());
        assert!(v["action"]["button"].as_str().unwrap().chars().count() <= 20);
    }

    #[test]
    fn messages_ask_for_no_preview_and_quote_replies() {
        let m = envelope("165", Some("wamid.Q"), "text", text_content("hi"));
        assert_eq!(m["text"]["preview_url"], false);
        assert_eq!(m["context"]["message_id"], "wamid.Q");
        assert_eq!((m["to"].as_str(), m["messaging_product"].as_str()), (Some("165"), Some("whatsapp")));
        assert!(envelope("165", None, "text", text_content("hi")).get("context").is_none());
    }
}
