//! The adapter contract: what a channel can do (as data) and the six things Butler asks of it.

use crate::{ConversationRef, InboundEvent, MessageRef, Outbound};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How a platform formats text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextFormat {
    /// Markdown passed through (web chat renders it safely itself).
    Markdown,
    /// Plain text, no markup.
    Plain,
    /// A platform dialect the adapter renders itself (Telegram HTML, Slack mrkdwn, ...).
    Native,
}

/// What a channel can do. Delivery, streaming and approvals read these instead of asking
/// "which platform is this".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caps {
    /// Inline buttons can be attached to messages. Without them an adapter still gets the
    /// buttons and writes the choices into the text its own way.
    pub buttons: bool,
    /// Sent messages can be edited (enables streaming by editing in place).
    pub edit: bool,
    /// Longest message the platform accepts, in characters of the rendered text.
    pub max_len: usize,
    /// A typing indicator exists.
    pub typing: bool,
    /// Shortest interval between two edits of one message while streaming.
    pub min_edit_interval: Duration,
    pub format: TextFormat,
    /// The receiver may run in one process at a time (long polling, a gateway, a socket):
    /// with several replicas it runs under a leader lease.
    pub exclusive: bool,
    /// The platform takes free-form messages to a person only within a window after their last
    /// message (WhatsApp's 24 hours): a reply refused for it is held, and released when the
    /// person next writes.
    pub reply_window: bool,
}

/// Errors an adapter reports; each variant tells the caller what to do next.
#[derive(Debug, thiserror::Error)]
pub enum ChannelError {
    /// Wait `retry_after` and try again; nothing was delivered.
    #[error("rate limited by the platform; retry after {retry_after:?}")]
    RateLimited { retry_after: Duration },
    /// An edit changed nothing; treat as success.
    #[error("message is not modified")]
    NotModified,
    /// The message or conversation no longer exists (or Butler was removed from it).
    #[error("not found: {0}")]
    NotFound(String),
    /// The credentials were refused; retrying will not help until the operator fixes them.
    #[error("the platform refused Butler's credentials: {0}")]
    Unauthorized(String),
    /// The platform rejected the request as malformed; retrying the same request will not help.
    #[error("rejected by the platform: {0}")]
    Rejected(String),
    /// Network trouble or a 5xx: retry with backoff.
    #[error("temporary failure: {0}")]
    Transient(String),
    /// The platform accepts free-form messages to this person only within a window after their
    /// last message (WhatsApp's 24 hours) and it has closed: sending the same message again will
    /// not help until they write; hold it, or send an approved template instead.
    #[error("outside the platform's reply window: {0}")]
    OutsideWindow(String),
}

impl ChannelError {
    /// Whether delivering the same message again later may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::RateLimited { .. } | Self::Transient(_))
    }
}

/// The outcome of handing an event to the ingress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accepted {
    /// Stored durably for the first time: acknowledge the platform.
    New,
    /// Already stored earlier (a redelivery): acknowledge the platform, do nothing else.
    Duplicate,
}

#[derive(Debug, thiserror::Error)]
pub enum IngressError {
    /// The event could not be made durable: do NOT acknowledge the platform, let it redeliver.
    #[error("could not store the event: {0}")]
    Unavailable(String),
    /// The event is malformed; acknowledging it is fine, it will never succeed.
    #[error("invalid event: {0}")]
    Invalid(String),
}

/// Where adapters hand inbound events. `accept` returns only after the event is durable.
#[async_trait::async_trait]
pub trait Ingress: Send + Sync {
    async fn accept(&self, event: InboundEvent) -> Result<Accepted, IngressError>;

    /// The read position `name` saved last (a sync token), shared by the replicas: where a
    /// receiver resumes after a restart or a takeover. `None` before the first save.
    async fn cursor(&self, _name: &str) -> Result<Option<String>, IngressError> {
        Ok(None)
    }

    /// Saves a read position; call it only after every event before it was accepted.
    async fn save_cursor(&self, _name: &str, _cursor: &str) -> Result<(), IngressError> {
        Err(IngressError::Unavailable("this ingress keeps no read positions".into()))
    }
}

/// One chat platform. Adapters know their platform and nothing else.
#[async_trait::async_trait]
pub trait Channel: Send + Sync {
    /// The channel name used in identities and conversations (`telegram`, `web`).
    fn name(&self) -> &str;

    fn caps(&self) -> Caps;

    /// Delivers a new message and returns the platform's id for it.
    async fn send(&self, msg: &Outbound) -> Result<MessageRef, ChannelError>;

    /// Replaces the text and buttons of a message sent earlier.
    async fn edit(&self, target: &MessageRef, msg: &Outbound) -> Result<(), ChannelError>;

    /// Shows a typing indicator where the platform has one.
    async fn typing(&self, _conversation: &ConversationRef) -> Result<(), ChannelError> {
        Ok(())
    }

    /// Receives events (polling, a gateway socket) until `cancel` fires. Adapters fed by HTTP
    /// requests to Butler's own server return at once.
    async fn run(&self, _ingress: Arc<dyn Ingress>, _cancel: CancellationToken) -> Result<(), ChannelError> {
        Ok(())
    }
}
