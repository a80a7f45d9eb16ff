//! Messages out through JSON-RPC `send`: Markdown split under [`MAX_LEN`] characters (never
//! inside a code block) and rendered to text styles, the first part quoting the message it
//! answers (`quoteTimestamp` + `quoteAuthor`, from a `<timestamp>:<author>` id), a file as a
//! data-URI attachment with the text as its caption. The platform id of what was sent is
//! `<timestamp>:<account>`, the form reactions and quotes name it by.
//!
//! It must never send a file larger than [`MAX_FILE`] or read one outside the path it is given.

use crate::render::render;
use crate::{SignalChannel, MAX_LEN};
use base64::Engine;
use butler_channel::{chunk_text, Button, ButtonStyle, ChannelError, ChunkLimit, OutFile, Outbound};
use serde_json::{json, Value};

/// Signal's limit on an attachment.
pub const MAX_FILE: u64 = 100 * 1024 * 1024;

/// `quoteTimestamp` and `quoteAuthor` of a `<timestamp>:<author>` message id.
fn quote(id: &str) -> Option<(i64, &str)> {
    let (ts, author) = id.split_once(':')?;
    Some((ts.parse().ok()?, author)).filter(|(_, a): &(i64, &str)| !a.is_empty())
}

/// A file as the data URI `send` takes (`data:<mime>;filename=<name>;base64,<data>`).
fn data_uri(file: &OutFile, bytes: &[u8]) -> String {
    let name: String = file.name.chars().filter(|c| !matches!(c, ';' | ',' | '/' | '\\') && !c.is_control()).collect();
    let data = base64::engine::general_purpose::STANDARD.encode(bytes);
    format!("data:{};filename={};base64,{data}", file.mime, if name.is_empty() { "file" } else { &name })
}

/// Signal has no buttons: the choices as a line under the text, numbered in the buttons' order
/// (Butler reads a numbered reply quoting the message, or a 👍 / 👎 reaction, as a click).
pub fn choices(buttons: &[Button]) -> String {
    let react = buttons.iter().any(|b| b.style == ButtonStyle::Primary)
        && buttons.iter().any(|b| b.style == ButtonStyle::Danger);
    let tail = if react { ", or react 👍 / 👎" } else { "" };
    format!("{}{tail}.", butler_channel::numbered_choices(buttons))
}

impl SignalChannel {
    /// Sends a message (or a file with its caption); the platform id of the last part.
    pub(crate) async fn send_message(&self, msg: &Outbound) -> Result<String, ChannelError> {
        if msg.private_to.is_some() && msg.text.trim().is_empty() {
            // Acknowledging a reaction or a reply: Signal has nothing to answer.
            return Ok(String::new());
        }
        let text = if msg.buttons.is_empty() {
            msg.text.clone()
        } else {
            format!("{}\n\n{}", msg.text.trim_end(), choices(&msg.buttons))
        };
        let mut parts =
            if text.chars().count() > MAX_LEN { chunk_text(&text, ChunkLimit::Chars(MAX_LEN)) } else { vec![text] };
        if parts.is_empty() {
            parts.push(String::new());
        }
        let mut quoting = msg.reply_to.as_deref().and_then(quote);
        let count = parts.len();
        let mut last = String::new();
        for (n, part) in parts.iter().enumerate() {
            let styled = render(part);
            let mut params = Self::target(&msg.conversation.id);
            params["message"] = json!(styled.text);
            if !styled.styles.is_empty() {
                params["textStyle"] = json!(styled.styles);
            }
            if let Some((ts, author)) = quoting.take() {
                params["quoteTimestamp"] = json!(ts);
                params["quoteAuthor"] = json!(author);
            }
            if let (Some(file), true) = (&msg.file, n + 1 == count) {
                params["attachments"] = json!([self.attachment(file).await?]);
            }
            last = self.post(params).await?;
        }
        Ok(last)
    }

    async fn post(&self, params: Value) -> Result<String, ChannelError> {
        let result = self.rpc.call("send", params).await?;
        let ts = result["timestamp"]
            .as_i64()
            .ok_or_else(|| ChannelError::Transient("signal-cli's send answer has no timestamp".into()))?;
        Ok(format!("{ts}:{}", self.settings.account))
    }

    async fn attachment(&self, file: &OutFile) -> Result<String, ChannelError> {
        if file.size > MAX_FILE {
            return Err(ChannelError::Rejected(format!("{} is larger than Signal's 100 MiB", file.name)));
        }
        let bytes = tokio::fs::read(&file.path)
            .await
            .map_err(|e| ChannelError::Rejected(format!("the file to send cannot be read: {}", e.kind())))?;
        Ok(data_uri(file, &bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_and_data_uris() {
        assert_eq!(quote("1700000000000:+15550000222"), Some((1700000000000, "+15550000222")));
        assert_eq!(quote("17:"), None);
        assert_eq!(quote("x:+1"), None);
        let file = OutFile {
            path: "/x".into(),
            name: "re;port,1.pdf".into(),
            mime: "application/pdf".into(),
            size: 3,
            photo: false,
        };
        assert_eq!(data_uri(&file, b"abc"), "data:application/pdf;filename=report1.pdf;base64,YWJj");
        let approve = [
            Button::new("Approve once", "ap:a:once", ButtonStyle::Primary),
            Button::new("Always", "ap:a:session", ButtonStyle::Default),
            Button::new("Deny", "ap:a:deny", ButtonStyle::Danger),
        ];
        assert_eq!(
            choices(&approve),
            "Reply to this message with a number: 1 Approve once · 2 Always · 3 Deny, or react 👍 / 👎."
        );
        assert_eq!(choices(&approve[1..2]), "Reply to this message with a number: 1 Always.");
    }
}
