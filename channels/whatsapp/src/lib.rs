//! Butler's WhatsApp channel, on Meta's WhatsApp Business Cloud API over plain HTTP (reqwest).
//!
//! - Intake: `GET /channels/whatsapp/webhook` answers Meta's verification handshake; `POST`
//!   checks `X-Hub-Signature-256` (HMAC-SHA256 of the raw body with the app secret, constant
//!   time) before anything is parsed, and answers 200 only after the ingress made every message
//!   of the delivery durable. Messages become `InboundEvent`s with the id
//!   `whatsapp:msg:<wamid>`, so Meta's redeliveries (it retries for days) are one event. Status
//!   callbacks (sent, delivered, read, failed) are logged and counted, never a turn.
//! - Output: Markdown rendered to WhatsApp's formatting (`render`), text to
//!   `{api_url}/{phone_number_id}/messages` without link previews, buttons as interactive reply
//!   buttons (at most 3) or a list message, files uploaded to `{api_url}/{phone_number_id}/media`
//!   then sent as media messages. WhatsApp cannot edit a message: `Caps::edit` is false.
//! - The 24-hour window: a free-form message WhatsApp refuses with 131047 is sent again as the
//!   configured template (`window`), else reported as `ChannelError::OutsideWindow` (Butler's
//!   outbox then holds it until the person writes again).
//! - Files people send: attachments on the event, fetched through [`WhatsAppFiles`]
//!   (`{api_url}/{media_id}`, then the URL it returns, with the token, streamed).
//!
//! This crate knows WhatsApp and nothing else: it must never use SQL, Redis, an LLM or the root
//! crate, and it never decides what to say.

mod api;
mod files;
pub mod normalize;
pub mod render;
mod send;
mod webhook;
mod window;

pub use api::{check, graph_error, PhoneNumber, PAIR_RATE};
pub use files::WhatsAppFiles;
pub use normalize::CHANNEL;
pub use webhook::{routes as webhook_routes, SIGNATURE_HEADER, WEBHOOK_PATH};

use butler_channel::limit::Gate;
use butler_channel::{Caps, Channel, ChannelError, ConversationRef, MessageRef, Outbound, TextFormat};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// WhatsApp's limit on a text message body, in characters.
pub const MAX_LEN: usize = 4096;
/// Longest caption of a media message.
pub const MAX_CAPTION: usize = 1024;
/// What a secret prints as in Debug output.
const MASK: &str = "********";

/// Everything the adapter needs, mapped from `[channels.whatsapp]` by the root's glue. Its
/// Debug form masks the access token, the app secret and the verify token.
#[derive(Clone)]
pub struct Settings {
    /// The system user's (or a temporary) access token, sent as `Authorization: Bearer`.
    pub access_token: String,
    /// The business phone number's id (not the number itself).
    pub phone_number_id: String,
    /// Signs every webhook delivery (`X-Hub-Signature-256`).
    pub app_secret: String,
    /// The token typed into the app dashboard's webhook form, echoed back by the handshake.
    pub verify_token: String,
    /// The Graph API base with its version (`https://graph.facebook.com/v23.0`, or a fake).
    pub api_url: String,
    /// An approved message template with one body parameter, sent (with the text as that
    /// parameter) when WhatsApp refuses a free-form message because the person's 24-hour window
    /// has closed.
    pub template: Option<Template>,
    /// Where rate-limit holds are kept: this process's, or the replicas' shared gate.
    pub gate: Gate,
}

/// A message template: its name and language code as approved in WhatsApp Manager.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template {
    pub name: String,
    pub language: String,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("access_token", &MASK)
            .field("phone_number_id", &self.phone_number_id)
            .field("app_secret", &MASK)
            .field("verify_token", &MASK)
            .field("api_url", &self.api_url)
            .field("template", &self.template)
            .field("gate", &self.gate)
            .finish()
    }
}

impl Settings {
    /// `{api_url}/{tail}` without a doubled slash.
    pub(crate) fn url(&self, tail: &str) -> String {
        format!("{}/{}", self.api_url.trim_end_matches('/'), tail.trim_start_matches('/'))
    }
}

/// Why the channel could not start (or `butler doctor`'s check failed).
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("`{0}` is not a valid Graph API URL")]
    BadUrl(String),
    #[error("the Graph API refused the access token: {0}")]
    BadToken(String),
    #[error("the Graph API does not know phone number id {id}: {why}")]
    BadPhoneNumber { id: String, why: String },
    #[error("cannot reach the Graph API at {url}: {error}")]
    Unreachable { url: String, error: String },
    #[error("the Graph API answered with an error: {0}")]
    Other(String),
}

/// The WhatsApp channel: a `Channel` for delivery; intake is the webhook route.
pub struct WhatsAppChannel {
    settings: Settings,
    /// For messages and short calls.
    http: reqwest::Client,
    /// For uploads and downloads of files (long overall limit, a limit on silence).
    transfer: reqwest::Client,
    /// The newest inbound message per person, for the read receipt + typing indicator.
    last_inbound: Mutex<HashMap<String, Inbound>>,
}

/// A person's newest message and when its read receipt + typing indicator last went out.
struct Inbound {
    id: String,
    shown: Option<std::time::Instant>,
}

/// How long a typing indicator is left to WhatsApp before it is shown again (it shows one for
/// up to 25 seconds).
const TYPING_SHOWN_FOR: Duration = Duration::from_secs(20);

/// Longest a file upload or download may take as a whole.
const TRANSFER_TIMEOUT: Duration = Duration::from_secs(600);
/// Longest a transfer may go without receiving anything.
const TRANSFER_STALL: Duration = Duration::from_secs(60);

fn client(timeout: Duration) -> Result<reqwest::Client, ConnectError> {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .timeout(timeout)
        .read_timeout(TRANSFER_STALL)
        .build()
        .map_err(|e| ConnectError::Other(e.to_string()))
}

impl WhatsAppChannel {
    /// Builds the channel without calling Meta (the webhook must answer even when the Graph API
    /// is briefly away); `butler doctor` checks the token and phone number id with [`check`].
    pub fn new(settings: Settings) -> Result<Arc<Self>, ConnectError> {
        reqwest::Url::parse(&settings.api_url).map_err(|_| ConnectError::BadUrl(settings.api_url.clone()))?;
        let http = client(Duration::from_secs(20))?;
        let transfer = client(TRANSFER_TIMEOUT)?;
        Ok(Arc::new(Self { settings, http, transfer, last_inbound: Mutex::new(HashMap::new()) }))
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// How the files people send to this number are fetched (for `Built.files`).
    pub fn files(&self) -> Arc<WhatsAppFiles> {
        Arc::new(WhatsAppFiles::new(self.settings.clone(), self.transfer.clone()))
    }

    /// Remembers the newest message a person sent (the typing indicator answers it).
    pub(crate) fn seen(&self, wa_id: &str, message_id: &str) {
        let mut last = self.last_inbound.lock().unwrap_or_else(|e| e.into_inner());
        if last.len() > 10_000 {
            last.clear();
        }
        last.insert(wa_id.to_string(), Inbound { id: message_id.to_string(), shown: None });
    }

    /// Notes that the read receipt + typing indicator for `message_id` just went out.
    pub(crate) fn shown(&self, wa_id: &str, message_id: &str) {
        let mut last = self.last_inbound.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(m) = last.get_mut(wa_id).filter(|m| m.id == message_id) {
            m.shown = Some(std::time::Instant::now());
        }
    }

    /// The newest message of `wa_id` whose indicator is due again (none shown in the last
    /// [`TYPING_SHOWN_FOR`]).
    fn due_for_typing(&self, wa_id: &str) -> Option<String> {
        let last = self.last_inbound.lock().unwrap_or_else(|e| e.into_inner());
        let m = last.get(wa_id)?;
        m.shown.is_none_or(|at| at.elapsed() >= TYPING_SHOWN_FOR).then(|| m.id.clone())
    }
}

#[async_trait::async_trait]
impl Channel for WhatsAppChannel {
    fn name(&self) -> &str {
        CHANNEL
    }

    fn caps(&self) -> Caps {
        Caps {
            buttons: true,
            edit: false,
            max_len: MAX_LEN,
            typing: true,
            min_edit_interval: Duration::from_secs(1),
            format: TextFormat::Native,
            exclusive: false,
            reply_window: true,
        }
    }

    async fn send(&self, msg: &Outbound) -> Result<MessageRef, ChannelError> {
        let id = match &msg.file {
            Some(file) if msg.private_to.is_none() => self.send_file(msg, file).await?,
            _ => self.send_message(msg).await?,
        };
        Ok(MessageRef { conversation: msg.conversation.clone(), id })
    }

    /// WhatsApp has no edits: the caller sends a new message instead.
    async fn edit(&self, _target: &MessageRef, _msg: &Outbound) -> Result<(), ChannelError> {
        Err(ChannelError::NotFound("WhatsApp cannot edit messages".into()))
    }

    /// Marks the person's newest message read and shows the typing indicator (WhatsApp shows
    /// it for up to 25 seconds or until the answer arrives), unless it went out moments ago
    /// (at intake, or by an earlier call).
    async fn typing(&self, conversation: &ConversationRef) -> Result<(), ChannelError> {
        let Some(message_id) = self.due_for_typing(&conversation.id) else { return Ok(()) };
        self.read_and_typing(&message_id).await?;
        self.shown(&conversation.id, &message_id);
        Ok(())
    }
}

#[cfg(test)]
mod debug_tests {
    use super::*;

    #[test]
    fn debug_output_masks_the_secrets() {
        let settings = Settings {
            access_token: "canary-token-1".into(),
            phone_number_id: "106540352242922".into(),
            app_secret: "canary-secret-2".into(),
            verify_token: "canary-verify-3".into(),
            api_url: "https://graph.facebook.com/v23.0".into(),
            template: None,
            gate: Gate::local(),
        };
        for text in [format!("{settings:?}"), format!("{settings:#?}")] {
            assert!(!text.contains("canary"), "{text}");
            assert!(text.contains("106540352242922") && text.contains(MASK), "{text}");
        }
        assert_eq!(settings.url("/123/messages"), "https://graph.facebook.com/v23.0/123/messages");
    }
}
