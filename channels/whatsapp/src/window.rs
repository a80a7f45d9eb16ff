//! WhatsApp's 24-hour customer-service window: free-form messages reach a person only within 24
//! hours of their last message. When WhatsApp refuses one (131047), a text without buttons is
//! sent as the configured template, the text as its one body parameter (flattened to one
//! line: template parameters may hold no line breaks, tabs or runs of spaces); without a
//! template, or when the template is refused too, the caller gets
//! `ChannelError::OutsideWindow`, which is never retried blindly.
//!
//! It must never retry a refused message as free-form text.

use crate::send::envelope;
use crate::{Template, WhatsAppChannel};
use butler_channel::ChannelError;
use serde_json::{json, Value};

/// Longest template body parameter Butler sends, in characters.
const MAX_PARAMETER: usize = 1000;

/// `text` as one template parameter: one line, no runs of spaces, at most [`MAX_PARAMETER`].
pub fn parameter(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    let flat = words.join(" ");
    if flat.chars().count() <= MAX_PARAMETER {
        return flat;
    }
    let mut cut: String = flat.chars().take(MAX_PARAMETER - 1).collect();
    cut.push('…');
    cut
}

/// The `template` object of a template message carrying `text`.
pub fn template(t: &Template, text: &str) -> Value {
    json!({"name": t.name, "language": {"code": t.language},
        "components": [{"type": "body", "parameters": [{"type": "text", "text": parameter(text)}]}]})
}

impl WhatsAppChannel {
    /// `markdown` to `to` after WhatsApp refused it as free-form text (`why`).
    pub(crate) async fn outside_window(&self, to: &str, markdown: &str, why: String) -> Result<String, ChannelError> {
        let Some(t) = &self.settings.template else {
            tracing::info!(to, "outside WhatsApp's 24-hour window and no briefing_template; not sent");
            return Err(ChannelError::OutsideWindow(why));
        };
        let text = crate::render::render(markdown);
        match self.post_message(&envelope(to, None, "template", template(t, &text))).await {
            Ok(id) => {
                tracing::info!(to, template = %t.name, "outside WhatsApp's 24-hour window: sent as the template");
                Ok(id)
            }
            Err(ChannelError::Rejected(e)) => Err(ChannelError::OutsideWindow(format!("{why}; the template: {e}"))),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_parameters_are_one_short_line() {
        let cases = [
            ("Good morning", "Good morning".to_string()),
            ("*Today*\n\n- one\n\t- two     three", "*Today* - one - two three".to_string()),
            (&*"x".repeat(1500), format!("{}…", "x".repeat(999))),
        ];
        for (text, want) in cases {
            assert_eq!(parameter(text), want);
        }
        let t = Template { name: "daily_briefing".into(), language: "en_US".into() };
        let v = template(&t, "hi\nthere");
        assert_eq!(v["language"]["code"], "en_US");
        assert_eq!(v["components"][0]["parameters"][0]["text"], "hi there");
    }
}
