//! Outbound side: what Butler says and the buttons it offers.

use crate::ConversationRef;
use serde::{Deserialize, Serialize};

/// A button. `action` is an opaque id (never raw tool arguments); a click comes back as
/// [`crate::EventBody::Action`] carrying the same id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Button {
    pub label: String,
    pub action: String,
    #[serde(default)]
    pub style: ButtonStyle,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ButtonStyle {
    #[default]
    Default,
    Primary,
    Danger,
}

impl Button {
    pub fn new(label: impl Into<String>, action: impl Into<String>, style: ButtonStyle) -> Self {
        Self { label: label.into(), action: action.into(), style }
    }
}

/// One message to deliver. `text` is Markdown as the agent wrote it; each adapter renders it
/// for its platform.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outbound {
    pub conversation: ConversationRef,
    pub text: String,
    #[serde(default)]
    pub buttons: Vec<Button>,
    /// The platform message id this answers, if the platform threads replies.
    pub reply_to: Option<String>,
    /// True while a reply is still streaming; adapters may skip persisting drafts.
    #[serde(default)]
    pub draft: bool,
    /// Idempotency key of this message (outbox key and chunk number). Platforms that support
    /// idempotent sends (Discord nonces, Butler's own web chat) use it so a retried send after
    /// a crash does not show the message twice.
    #[serde(default)]
    pub key: Option<String>,
    /// Only for one person: the answer to their click (an alert, an ephemeral message). An empty
    /// text just acknowledges the click. Platforms without private replies show it normally.
    #[serde(default)]
    pub private_to: Option<PrivateTo>,
    /// A file to send with this message (the text becomes its caption).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<crate::OutFile>,
    /// A heading for platforms that show one apart from the text (a mail's subject): a scheduled
    /// job's name on its briefing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// The person a private reply is for, and the click it answers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrivateTo {
    /// Their platform user id.
    pub user_id: String,
    /// The platform's handle of the click (see `EventBody::Action::interaction`).
    pub interaction: Option<String>,
}

impl Outbound {
    pub fn text(conversation: ConversationRef, text: impl Into<String>) -> Self {
        Self {
            conversation,
            text: text.into(),
            buttons: Vec::new(),
            reply_to: None,
            draft: false,
            key: None,
            private_to: None,
            file: None,
            title: None,
        }
    }
}

/// A message as the platform knows it, for later edits.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageRef {
    pub conversation: ConversationRef,
    pub id: String,
}
