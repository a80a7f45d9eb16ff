//! Files people send: each attachment of a message is fetched through its channel's
//! [`FileSource`], streamed to the user's workspace under `[media] max_bytes`, sniffed, and
//! turned into what the model can use (an image, a transcript, a document's text, or a named
//! and sized file). Also the sniffing other components use for files they send or receive.
//!
//! This file composes the parts (fetch, sniff, picture, document, transcribe, wav, describe);
//! they share nothing through it. It must never hold a whole file in memory while downloading,
//! trust a name, MIME type or size a platform claims, write outside `<workspace>/media/`, or
//! panic on a malformed file.

mod config;
mod describe;
mod document;
mod error;
mod fetch;
mod picture;
mod sniff;
mod transcribe;
mod wav;
mod words;

#[cfg(test)]
mod tests;

pub use config::check_config;
pub use error::MediaError;
pub use fetch::{safe_name, stable_id};
pub use sniff::{extension, label, sniff, sniff_file, OCTET_STREAM, SAMPLE};
pub use words::size as human_size;

use crate::config::{AudioConvert, MediaConfig};
use crate::llm::Image;
use butler_channel::{Attachment, FileSource, MediaKind};
use describe::Block;
use fetch::{Fetch, Fetched};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use transcribe::Transcriber;
pub(crate) use transcribe::{service_client, service_message};

/// The media component: the channels' file sources and the `[media]` settings.
pub struct Media {
    cfg: MediaConfig,
    sources: BTreeMap<String, Arc<dyn FileSource>>,
    /// Set when `[media.transcription]` has a base URL.
    transcriber: Option<Transcriber>,
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
    /// Text for the model, to append to the message: one block per attachment, in order,
    /// separated by a blank line, without a leading or trailing newline (empty without
    /// attachments).
    pub text: String,
    /// Images for a vision model, already shrunk.
    pub images: Vec<Image>,
    /// Lines shown to the person with the answer (what was heard, what could not be read),
    /// each once.
    pub notes: Vec<String>,
    /// The files saved in the workspace (absolute paths), in attachment order.
    pub saved: Vec<PathBuf>,
}

/// How a saved file is read, by its sniffed type (and, for sound, the platform's kind).
enum Route {
    Image,
    Sound,
    Document,
    Other,
}

impl Media {
    pub fn new(cfg: &MediaConfig, sources: BTreeMap<String, Arc<dyn FileSource>>) -> Self {
        let transcriber = cfg.transcription.as_ref().filter(|t| !t.base_url.trim().is_empty()).map(Transcriber::new);
        Self { cfg: cfg.clone(), sources, transcriber }
    }

    pub fn max_bytes(&self) -> u64 {
        self.cfg.max_bytes
    }

    /// Fetches and reads every attachment, one at a time; problems become text and notes,
    /// never errors.
    pub async fn prepare(&self, req: PrepareRequest<'_>) -> Prepared {
        let mut out = Prepared::default();
        for (index, a) in req.attachments.iter().enumerate() {
            let (block, saved) = self.one(&req, index, a).await;
            if !out.text.is_empty() {
                out.text.push_str("\n\n");
            }
            out.text.push_str(&block.text);
            out.images.extend(block.image);
            if let Some(note) = block.note.filter(|n| !out.notes.contains(n)) {
                out.notes.push(note);
            }
            out.saved.extend(saved);
        }
        out
    }

    async fn one(&self, req: &PrepareRequest<'_>, index: usize, a: &Attachment) -> (Block, Option<PathBuf>) {
        let given = fetch::given_name(a);
        let refused = |e: MediaError| {
            tracing::warn!(event = req.event_id, index, kind = a.kind.word(), error = %e, "media: attachment not saved");
            (describe::not_saved(a.kind.word(), given.as_deref(), &e), None)
        };
        let Some(source) = self.sources.get(req.channel) else {
            return refused(MediaError::NoSource { channel: req.channel.to_string() });
        };
        let fetch = Fetch {
            source: source.as_ref(),
            workspace: req.workspace,
            event_id: req.event_id,
            index,
            max: self.cfg.max_bytes,
        };
        let f = match fetch.run(a).await {
            Ok(f) => f,
            Err(e) => return refused(e),
        };
        if let Some(claimed) = a.mime.as_deref().filter(|c| !sniff::same_type(c, f.mime)) {
            tracing::debug!(claimed, sniffed = f.mime, file = %f.rel, "media: the claimed type is not what the file is; using the sniffed one");
        }
        let word = describe::word(a.kind, f.mime);
        let secs = a.duration_secs.map(u64::from);
        let block = match route(a.kind, f.mime) {
            Route::Image => self.image(word, &f, req.vision).await,
            Route::Sound => self.sound(a.kind, word, &f, secs).await,
            Route::Document => self.document(word, &f).await,
            Route::Other => describe::other(word, &f, secs),
        };
        (block, Some(f.path))
    }

    async fn image(&self, word: &str, f: &Fetched, vision: bool) -> Block {
        if matches!(f.mime, "image/heic" | "image/avif") {
            let reason =
                format!("{} images cannot be decoded here; a JPEG or PNG (or a screenshot) can", sniff::label(f.mime));
            return describe::unreadable(word, f, &MediaError::Unreadable { reason });
        }
        if !vision {
            return describe::unseen(word, f, picture::dimensions(&f.path).await.ok());
        }
        match picture::shrink(&f.path, self.cfg.image_max_side).await {
            Ok(s) => describe::seen(word, f, &s),
            Err(e) => {
                tracing::info!(file = %f.rel, error = %e, "media: image unreadable");
                describe::unreadable(word, f, &e)
            }
        }
    }

    async fn sound(&self, kind: MediaKind, word: &str, f: &Fetched, secs: Option<u64>) -> Block {
        let Some(t) = &self.transcriber else {
            return describe::not_heard(word, f, secs, None);
        };
        let stem = if kind == MediaKind::Voice { "voice" } else { "audio" };
        let (result, secs) = if t.config().convert == AudioConvert::Wav && sniff::is_ogg_opus(&f.head) {
            let mut wav = f.path.clone().into_os_string();
            wav.push(".wav.part");
            let wav = PathBuf::from(wav);
            match wav::ogg_opus_to_wav(&f.path, &wav).await {
                Ok(samples) => {
                    let secs = secs.or(Some(samples.div_ceil(u64::from(wav::RATE))));
                    let heard = t.transcribe(&wav, &format!("{stem}.wav"), "audio/wav").await;
                    let _ = tokio::fs::remove_file(&wav).await;
                    (heard, secs)
                }
                Err(e) => (Err(e), secs),
            }
        } else {
            let mime = match f.mime.strip_prefix("video/") {
                Some(sub) => format!("audio/{sub}"),
                None => f.mime.to_string(),
            };
            (t.transcribe(&f.path, &format!("{stem}.{}", sniff::extension(f.mime)), &mime).await, secs)
        };
        match result {
            Ok(text) => describe::heard(word, f, secs, &text),
            Err(e) => {
                tracing::warn!(file = %f.rel, error = %e, "media: transcription failed");
                describe::not_heard(word, f, secs, Some(&e))
            }
        }
    }

    async fn document(&self, word: &str, f: &Fetched) -> Block {
        let read = if f.mime == "application/pdf" {
            document::read_pdf(&f.path, self.cfg.max_chars).await
        } else {
            document::read_text(&f.path, self.cfg.max_chars).await
        };
        match read {
            Ok(d) => describe::document(word, f, &d),
            Err(e) => {
                tracing::info!(file = %f.rel, error = %e, "media: document unreadable");
                describe::unreadable(word, f, &e)
            }
        }
    }
}

/// Images by their bytes whatever the platform called them; sound when the platform says voice
/// or audio (or a document is audio) and the container can carry it; documents by type.
fn route(kind: MediaKind, mime: &str) -> Route {
    let audio_container = matches!(mime, "video/mp4" | "video/webm" | "video/3gpp" | "video/x-matroska" | "video/ogg");
    match mime {
        "image/png" | "image/jpeg" | "image/gif" | "image/webp" | "image/bmp" | "image/heic" | "image/avif" => {
            Route::Image
        }
        m if m.starts_with("audio/") && !matches!(kind, MediaKind::Video | MediaKind::VideoNote) => Route::Sound,
        _ if audio_container && matches!(kind, MediaKind::Voice | MediaKind::Audio) => Route::Sound,
        "application/pdf" | "application/json" => Route::Document,
        m if m.starts_with("text/") => Route::Document,
        _ => Route::Other,
    }
}
