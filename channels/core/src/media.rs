//! Files people send and files Butler sends back: the attachment of an inbound message as the
//! platform describes it, the [`FileSource`] a channel fetches it through, and the [`OutFile`] an
//! outbound message carries.
//!
//! Nothing here is trusted: names, MIME types and sizes are what the platform (or the sender)
//! claims. Butler's media component checks sizes while streaming and sniffs the real type; this
//! module must never read a file into memory or write one to disk.

use crate::ChannelError;
use serde::{Deserialize, Serialize};
use std::pin::Pin;

/// What kind of thing was attached, as the platform presents it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MediaKind {
    /// A photo or an image file shown inline.
    Image,
    /// A recorded voice message (Telegram voice, a Slack audio clip, a Discord voice message).
    Voice,
    /// A music or audio file.
    Audio,
    Video,
    /// Telegram's round video message.
    VideoNote,
    /// Any other file.
    Document,
}

impl MediaKind {
    /// The word used in descriptions ("a photo", "a voice note").
    pub fn word(self) -> &'static str {
        match self {
            Self::Image => "photo",
            Self::Voice => "voice note",
            Self::Audio => "audio file",
            Self::Video => "video",
            Self::VideoNote => "video note",
            Self::Document => "file",
        }
    }
}

/// One file attached to an inbound message, as the platform describes it (before download).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attachment {
    pub kind: MediaKind,
    /// The MIME type the platform (or the sender) claims; sniffed again after download.
    #[serde(default)]
    pub mime: Option<String>,
    /// The size in bytes the platform claims, if it says.
    #[serde(default)]
    pub size: Option<u64>,
    /// The file name the sender gave, if any (never used as a path as is).
    #[serde(default)]
    pub name: Option<String>,
    /// The platform's handle of the file: a Telegram `file_id`, a Slack file id, a Discord
    /// attachment id, a web chat upload id.
    pub file_id: String,
    /// Where the platform serves the file when it says so in the event (Slack
    /// `url_private_download`, a Discord attachment URL); the channel's [`FileSource`] decides
    /// how to use it.
    #[serde(default)]
    pub url: Option<String>,
    /// Length in seconds of a voice note, audio or video, when the platform says.
    #[serde(default)]
    pub duration_secs: Option<u32>,
}

impl Attachment {
    pub fn new(kind: MediaKind, file_id: impl Into<String>) -> Self {
        Self { kind, mime: None, size: None, name: None, file_id: file_id.into(), url: None, duration_secs: None }
    }
}

/// The bytes of a file, streamed in pieces.
pub type ByteStream = Pin<Box<dyn futures_core::Stream<Item = Result<bytes::Bytes, ChannelError>> + Send>>;

/// A download in progress: the size the server announced (its `Content-Length`), then the body.
pub struct Download {
    pub size: Option<u64>,
    pub body: ByteStream,
}

/// How a channel fetches the files people attach, through the platform's own API (Telegram
/// `getFile` and the file URL, Slack's private URLs with the bot token, Discord attachment
/// URLs, the web chat's upload store).
#[async_trait::async_trait]
pub trait FileSource: Send + Sync {
    /// Starts downloading `file`. The body is read by the caller piece by piece (and dropped
    /// as soon as it passes the size cap), so implementations must not buffer it.
    async fn open(&self, file: &Attachment) -> Result<Download, ChannelError>;
}

/// A file Butler sends: an outbound message carrying one is delivered as a platform document
/// (or a photo), with the message text as its caption.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutFile {
    /// Absolute path of a copy Butler keeps until the message is delivered.
    pub path: String,
    /// The name the recipient sees.
    pub name: String,
    /// Sniffed MIME type.
    pub mime: String,
    pub size: u64,
    /// Shown as a photo (Telegram `sendPhoto`, an inline image) rather than as a document.
    #[serde(default)]
    pub photo: bool,
}
