//! Files people send, through Butler's media component exactly as a turn uses it
//! (`Media::prepare`): downloaded from a channel's file source under `[media] max_bytes`,
//! sniffed, then decoded as what they are (photos shrunk for the model, PDF text, voice notes
//! converted to WAV for transcription).
//!
//! Limits are small here so inputs reach them: files of at most [`MAX_BYTES`], images shrunk to
//! [`MAX_SIDE`] pixels a side. The transcription endpoint is a local port that refuses, so a
//! voice note is converted and then not heard. Each call works in a folder of its own, removed
//! afterwards; the body must never reach any other host or folder.

use crate::harness::{block_on, scratch};
use async_trait::async_trait;
use butler::config::{AudioConvert, MediaConfig, TranscriptionConfig};
use butler::media::{Media, PrepareRequest, Prepared};
use butler_channel::{Attachment, ChannelError, Download, FileSource, MediaKind};
use std::collections::{BTreeMap, HashMap};
use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// `[media] max_bytes` here.
pub const MAX_BYTES: u64 = 48 * 1024;
/// `[media] image_max_side` here.
pub const MAX_SIDE: u32 = 64;
const MAX_CHARS: usize = 2_000;
/// The piece size of a download.
const PIECE: usize = 4096;

/// A channel's file source that serves the bytes registered under an attachment's id.
#[derive(Default)]
struct Bytes {
    files: Mutex<HashMap<String, Vec<u8>>>,
}

#[async_trait]
impl FileSource for Bytes {
    async fn open(&self, file: &Attachment) -> Result<Download, ChannelError> {
        let data = self.files.lock().unwrap_or_else(|p| p.into_inner()).get(&file.file_id).cloned();
        let data = data.ok_or_else(|| ChannelError::Rejected("no such file".into()))?;
        let pieces: Vec<_> = data.chunks(PIECE).map(|c| Ok(bytes::Bytes::copy_from_slice(c))).collect();
        Ok(Download { size: None, body: Box::pin(futures::stream::iter(pieces)) })
    }
}

struct Shared {
    media: Media,
    source: Arc<Bytes>,
    root: PathBuf,
    next: AtomicU64,
}

fn shared() -> &'static Shared {
    static SHARED: OnceLock<Shared> = OnceLock::new();
    SHARED.get_or_init(|| {
        let transcription = TranscriptionConfig {
            base_url: "http://127.0.0.1:1/v1".into(),
            convert: AudioConvert::Wav,
            timeout_secs: 5,
            ..TranscriptionConfig::default()
        };
        let cfg = MediaConfig {
            max_bytes: MAX_BYTES,
            max_chars: MAX_CHARS,
            image_max_side: MAX_SIDE,
            transcription: Some(transcription),
        };
        let source = Arc::new(Bytes::default());
        let sources: BTreeMap<String, Arc<dyn FileSource>> = [("fuzz".to_string(), source.clone() as _)].into();
        Shared { media: Media::new(&cfg, sources), source, root: scratch("media"), next: AtomicU64::new(0) }
    })
}

/// Prepares `data` as an attachment like `template` in a fresh workspace, checks the outcome
/// against the limits, and removes the workspace.
fn prepare(data: &[u8], template: &Attachment, vision: bool) {
    let s = shared();
    let n = s.next.fetch_add(1, Ordering::Relaxed);
    let mut a = template.clone();
    a.file_id = format!("file-{n}");
    s.source.files.lock().unwrap_or_else(|p| p.into_inner()).insert(a.file_id.clone(), data.to_vec());
    let workspace = s.root.join(n.to_string());
    let event_id = format!("fuzz:{n}");
    let req = PrepareRequest {
        channel: "fuzz",
        attachments: std::slice::from_ref(&a),
        workspace: &workspace,
        event_id: &event_id,
        vision,
    };
    let prepared = block_on(s.media.prepare(req));
    s.source.files.lock().unwrap_or_else(|p| p.into_inner()).remove(&a.file_id);
    let checked = std::panic::catch_unwind(|| check(&prepared, &workspace, vision));
    let _ = std::fs::remove_dir_all(&workspace);
    if let Err(panic) = checked {
        std::panic::resume_unwind(panic);
    }
}

fn check(p: &Prepared, workspace: &Path, vision: bool) {
    assert!(!p.text.is_empty(), "an attachment without a word about it");
    assert!(vision || p.images.is_empty(), "images for a model that cannot see");
    for path in &p.saved {
        assert!(path.starts_with(workspace.join("media")), "{} is outside the workspace's media", path.display());
        if let Ok(meta) = std::fs::metadata(path) {
            assert!(meta.len() <= MAX_BYTES, "{} is {} bytes", path.display(), meta.len());
        }
    }
    for image in &p.images {
        use base64::Engine as _;
        assert!(matches!(image.mime.as_str(), "image/jpeg" | "image/png"), "sent as {}", image.mime);
        let bytes = base64::engine::general_purpose::STANDARD.decode(&image.data).expect("base64");
        let (w, h) = image::ImageReader::new(Cursor::new(bytes))
            .with_guessed_format()
            .expect("a cursor reads")
            .into_dimensions()
            .expect("the image sent to the model reads back");
        assert!(w <= MAX_SIDE && h <= MAX_SIDE && w > 0 && h > 0, "an image of {w}x{h} went to the model");
    }
}

/// A photo, for a model that sees (shrunk) and one that does not (its size from the header).
pub fn media_image(data: &[u8]) {
    let mut a = Attachment::new(MediaKind::Image, "");
    a.mime = Some("image/jpeg".into());
    prepare(data, &a, true);
    prepare(data, &a, false);
}

/// A document said to be a PDF (read as what it is sniffed to be).
pub fn media_pdf(data: &[u8]) {
    let mut a = Attachment::new(MediaKind::Document, "");
    a.mime = Some("application/pdf".into());
    a.name = Some("statement.pdf".into());
    prepare(data, &a, false);
}

/// A voice note (OGG/Opus, converted to WAV for the transcription endpoint).
pub fn media_ogg(data: &[u8]) {
    let mut a = Attachment::new(MediaKind::Voice, "");
    a.mime = Some("audio/ogg".into());
    a.duration_secs = Some(3);
    prepare(data, &a, false);
}
