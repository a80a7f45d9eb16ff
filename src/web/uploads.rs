//! The web chat's file store: files people upload (`POST /api/v1/files`) wait here until the
//! message that carries them is handled, and files Butler sends in a web conversation are
//! registered here so the page can fetch them (`GET /api/v1/files/{id}`).
//!
//! Each file is `<dir>/<id>` with its description in `<dir>/<id>.json`; ids are 32 hex digits,
//! so no name a person gives ever becomes a path. Uploads are streamed to disk under
//! `[media] max_bytes` (refused before a byte is read when the declared length is over it,
//! stopped and deleted as soon as the bytes pass it); uploads a day old are swept. A sent file
//! is not copied: its description points at the copy the outbox keeps in the user's workspace.
//!
//! As the web channel's [`FileSource`], this opens an upload for the media component, which
//! copies it into the user's workspace. It must never hold a whole file in memory.

use crate::store::now_ms;
use async_trait::async_trait;
use butler_channel::{Attachment, ChannelError, Download, FileSource, OutFile};
use bytes::Bytes;
use futures::{Stream, StreamExt};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;
use tokio::io::AsyncWriteExt;

/// Uploads older than this are deleted (their message was sent long ago, or never).
const KEEP_UPLOADS_MS: i64 = 24 * 3600 * 1000;
/// How often a new upload sweeps old ones.
const SWEEP_EVERY_MS: i64 = 3600 * 1000;
/// The least an upload must send in each `[server] body_timeout_secs` (unless it ends): a
/// phone link sending a big file slowly goes on, a client dripping bytes gets 408.
pub(crate) const MIN_BYTES_PER_WINDOW: u64 = 64 * 1024;
/// Longest name kept (characters).
const MAX_NAME: usize = 120;

/// What is known of one stored file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileMeta {
    pub id: String,
    /// Who uploaded it (`web:<user>`); `None` for a file Butler sent.
    #[serde(default)]
    pub owner: Option<String>,
    /// The conversation (`web:<id>`) Butler sent it in; `None` for an upload.
    #[serde(default)]
    pub conversation: Option<String>,
    /// Where a sent file's bytes are (the outbox's copy); `None`: `<dir>/<id>`.
    #[serde(default)]
    pub path: Option<String>,
    pub name: String,
    /// The type the uploader claimed (sniffed again by the media component), or the sniffed
    /// type of a sent file.
    pub mime: String,
    pub size: u64,
    pub created_ms: i64,
}

/// Why an upload was not stored.
#[derive(Debug, thiserror::Error)]
pub enum UploadError {
    #[error("the file is larger than the {max}-byte limit")]
    TooLarge { max: u64 },
    #[error("the upload broke off before its end")]
    Broken,
    #[error("the upload stalled")]
    Stalled,
    #[error("the file could not be stored: {0}")]
    Disk(#[from] std::io::Error),
}

pub struct Uploads {
    dir: PathBuf,
    max: u64,
    /// `[server] body_timeout_secs`: each such window must bring [`MIN_BYTES_PER_WINDOW`].
    window: Duration,
    last_sweep_ms: AtomicI64,
}

/// Whether `id` is one of ours (and so safe as a file name).
pub(crate) fn valid_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The name shown for a file: the last component of what the sender gave, without control
/// characters, at most [`MAX_NAME`] characters; `file` when nothing is left.
pub(crate) fn clean_name(given: &str) -> String {
    let last = given.rsplit(['/', '\\']).next().unwrap_or("");
    let name: String = last.chars().filter(|c| !c.is_control()).take(MAX_NAME).collect();
    // Leading dots and spaces in any order (`. .x` too: found by fuzzing, fuzz/regressions/upload/).
    let name = name.trim_start_matches(|c: char| c == '.' || c.is_whitespace()).trim_end().to_string();
    if name.is_empty() {
        "file".into()
    } else {
        name
    }
}

impl Uploads {
    /// Files live in `dir` (created on first use); uploads may be at most `max` bytes and must
    /// bring [`MIN_BYTES_PER_WINDOW`] (or their end) in every `window`.
    pub fn new(dir: PathBuf, max: u64, window: Duration) -> Self {
        Self { dir, max, window, last_sweep_ms: AtomicI64::new(0) }
    }

    /// `<workspace_dir>/.web-files`, under `[media] max_bytes`: beside the users' workspaces
    /// (never inside one, so no file tool reaches another person's upload); the pace is
    /// `[server] body_timeout_secs`'s.
    pub(crate) fn from_config(cfg: &crate::config::Config) -> Self {
        let window = Duration::from_secs(cfg.server.body_timeout_secs);
        Self::new(Path::new(&cfg.tools.workspace_dir).join(".web-files"), cfg.media.max_bytes, window)
    }

    /// The largest upload taken, in bytes.
    pub(crate) fn max_bytes(&self) -> u64 {
        self.max
    }

    /// Streams `body` to disk as an upload of `owner`. `declared` is the request's
    /// `Content-Length`: over the cap, nothing is read.
    pub async fn save<S, E>(
        &self,
        owner: &str,
        name: &str,
        mime: &str,
        declared: Option<u64>,
        body: S,
    ) -> Result<FileMeta, UploadError>
    where
        S: Stream<Item = Result<Bytes, E>> + Unpin,
    {
        if declared.is_some_and(|n| n > self.max) {
            return Err(UploadError::TooLarge { max: self.max });
        }
        tokio::fs::create_dir_all(&self.dir).await?;
        self.sweep_now_and_then().await;
        let id = uuid::Uuid::new_v4().simple().to_string();
        let part = self.dir.join(format!("{id}.part"));
        let written = self.write(&part, body).await;
        let size = match written {
            Ok(size) => size,
            Err(e) => {
                let _ = tokio::fs::remove_file(&part).await;
                return Err(e);
            }
        };
        tokio::fs::rename(&part, self.dir.join(&id)).await?;
        let meta = FileMeta {
            id: id.clone(),
            owner: Some(owner.to_string()),
            conversation: None,
            path: None,
            name: clean_name(name),
            mime: clean_mime(mime),
            size,
            created_ms: now_ms(),
        };
        self.write_meta(&meta).await?;
        Ok(meta)
    }

    async fn write<S, E>(&self, part: &Path, mut body: S) -> Result<u64, UploadError>
    where
        S: Stream<Item = Result<Bytes, E>> + Unpin,
    {
        let mut file = tokio::fs::File::create(part).await?;
        let mut size = 0u64;
        // Each window must bring MIN_BYTES_PER_WINDOW: a slow drip ends at the first window's end.
        let (mut window_end, mut window_start_size) = (tokio::time::Instant::now() + self.window, 0u64);
        loop {
            let piece = match tokio::time::timeout_at(window_end, body.next()).await {
                Err(_) if size - window_start_size >= MIN_BYTES_PER_WINDOW => {
                    (window_end, window_start_size) = (window_end + self.window, size);
                    continue;
                }
                Err(_) => return Err(UploadError::Stalled),
                Ok(None) => break,
                Ok(Some(Err(_))) => return Err(UploadError::Broken),
                Ok(Some(Ok(piece))) => piece,
            };
            size += piece.len() as u64;
            if size > self.max {
                return Err(UploadError::TooLarge { max: self.max });
            }
            file.write_all(&piece).await?;
        }
        file.sync_all().await?;
        Ok(size)
    }

    /// Registers a file Butler sends in web conversation `conversation` under an id fixed by
    /// the outbox key `key` (a re-send registers the same one). The bytes stay where they are.
    pub(crate) async fn record_sent(
        &self,
        conversation: &str,
        key: &str,
        file: &OutFile,
    ) -> Result<FileMeta, std::io::Error> {
        let id = hex::encode(&Sha256::digest(format!("sent:{key}").as_bytes())[..16]);
        if let Some(meta) = self.get(&id).await {
            return Ok(meta);
        }
        tokio::fs::create_dir_all(&self.dir).await?;
        let meta = FileMeta {
            id,
            owner: None,
            conversation: Some(conversation.to_string()),
            path: Some(file.path.clone()),
            name: clean_name(&file.name),
            mime: clean_mime(&file.mime),
            size: file.size,
            created_ms: now_ms(),
        };
        self.write_meta(&meta).await?;
        Ok(meta)
    }

    /// The description of file `id`, if there is one.
    pub(crate) async fn get(&self, id: &str) -> Option<FileMeta> {
        if !valid_id(id) {
            return None;
        }
        let raw = tokio::fs::read(self.dir.join(format!("{id}.json"))).await.ok()?;
        serde_json::from_slice(&raw).ok()
    }

    /// Opens the bytes of `meta`.
    pub(crate) async fn open_file(&self, meta: &FileMeta) -> std::io::Result<tokio::fs::File> {
        match &meta.path {
            Some(path) => tokio::fs::File::open(path).await,
            None => tokio::fs::File::open(self.dir.join(&meta.id)).await,
        }
    }

    /// Written beside, synced, then renamed: a reader never sees half a description.
    async fn write_meta(&self, meta: &FileMeta) -> std::io::Result<()> {
        let tmp = self.dir.join(format!("{}.json.part", meta.id));
        let raw = serde_json::to_vec(meta).map_err(std::io::Error::other)?;
        let mut f = tokio::fs::File::create(&tmp).await?;
        f.write_all(&raw).await?;
        f.sync_all().await?;
        tokio::fs::rename(&tmp, self.dir.join(format!("{}.json", meta.id))).await
    }

    /// At most once an hour: deletes uploads (never sent files) older than a day.
    async fn sweep_now_and_then(&self) {
        let now = now_ms();
        let last = self.last_sweep_ms.load(Ordering::Relaxed);
        if now - last < SWEEP_EVERY_MS
            || self.last_sweep_ms.compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed).is_err()
        {
            return;
        }
        match self.sweep(now - KEEP_UPLOADS_MS).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(deleted = n, "old web uploads deleted"),
            Err(e) => tracing::warn!(error = %e, "sweeping old web uploads failed"),
        }
    }

    /// Deletes uploads created before `before_ms`, and parts of uploads a crash cut short last
    /// written before it; returns how many uploads went.
    pub(crate) async fn sweep(&self, before_ms: i64) -> std::io::Result<usize> {
        let mut deleted = 0;
        let mut entries = tokio::fs::read_dir(&self.dir).await?;
        while let Some(entry) = entries.next_entry().await? {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.ends_with(".part") {
                let modified = entry.metadata().await?.modified()?;
                let age = modified.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
                if age < before_ms {
                    tokio::fs::remove_file(entry.path()).await?;
                }
                continue;
            }
            let Some(id) = name.strip_suffix(".json").filter(|id| valid_id(id)) else {
                continue;
            };
            let Some(meta) = self.get(id).await else { continue };
            if meta.owner.is_some() && meta.created_ms < before_ms {
                let _ = tokio::fs::remove_file(self.dir.join(id)).await;
                tokio::fs::remove_file(entry.path()).await?;
                deleted += 1;
            }
        }
        Ok(deleted)
    }
}

/// A claimed MIME type kept only if it looks like one (`type/subtype`, no parameters).
fn clean_mime(claimed: &str) -> String {
    let base = claimed.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    let ok = base.split_once('/').is_some_and(|(t, s)| {
        !t.is_empty()
            && !s.is_empty()
            && base.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'.' | b'+' | b'-'))
    });
    if ok && base.len() <= 100 {
        base
    } else {
        "application/octet-stream".into()
    }
}

#[async_trait]
impl FileSource for Uploads {
    async fn open(&self, file: &Attachment) -> Result<Download, ChannelError> {
        let meta = self
            .get(&file.file_id)
            .await
            .filter(|m| m.owner.is_some())
            .ok_or_else(|| ChannelError::NotFound(format!("upload {}", file.file_id)))?;
        let f = self.open_file(&meta).await.map_err(|e| ChannelError::NotFound(format!("upload {}: {e}", meta.id)))?;
        let body = tokio_util::io::ReaderStream::new(f).map(|r| r.map_err(|e| ChannelError::Transient(e.to_string())));
        Ok(Download { size: Some(meta.size), body: Box::pin(body) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_cleaned_to_their_last_component() {
        let cases = [
            ("report.pdf", "report.pdf"),
            ("../../etc/passwd", "passwd"),
            ("C:\\Users\\me\\notes.txt", "notes.txt"),
            ("..", "file"),
            ("", "file"),
            (".bashrc", "bashrc"),
            ("a\u{0}b\nc.txt", "abc.txt"),
            ("dir/", "file"),
        ];
        for (given, want) in cases {
            assert_eq!(clean_name(given), want, "{given:?}");
        }
        assert_eq!(clean_name(&"x".repeat(500)).chars().count(), MAX_NAME);
    }

    #[test]
    fn claimed_types_are_kept_only_when_well_formed() {
        let cases = [
            ("image/png", "image/png"),
            ("Text/Plain; charset=utf-8", "text/plain"),
            ("", "application/octet-stream"),
            ("nonsense", "application/octet-stream"),
            ("text/html\r\nX-Evil: 1", "application/octet-stream"),
            ("application/vnd.ms-excel", "application/vnd.ms-excel"),
        ];
        for (claimed, want) in cases {
            assert_eq!(clean_mime(claimed), want, "{claimed:?}");
        }
    }

    #[test]
    fn ids_are_32_lowercase_hex_digits() {
        let cases = [
            ("0123456789abcdef0123456789abcdef", true),
            ("0123456789ABCDEF0123456789abcdef", false),
            ("../0123456789abcdef0123456789ab", false),
            ("0123", false),
        ];
        for (id, want) in cases {
            assert_eq!(valid_id(id), want, "{id}");
        }
    }

    fn chunks(sizes: &[usize]) -> impl Stream<Item = Result<Bytes, std::io::Error>> + Unpin {
        futures::stream::iter(sizes.iter().map(|n| Ok(Bytes::from(vec![7u8; *n]))).collect::<Vec<_>>())
    }

    /// `n` pieces of `size` bytes, `gap` apart.
    fn paced(n: usize, size: usize, gap: Duration) -> impl Stream<Item = Result<Bytes, std::io::Error>> + Unpin {
        Box::pin(futures::stream::iter(0..n).then(move |_| async move {
            tokio::time::sleep(gap).await;
            Ok(Bytes::from(vec![7u8; size]))
        }))
    }

    #[tokio::test]
    async fn each_window_must_bring_enough_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let up = Uploads::new(dir.path().join("files"), 10 << 20, Duration::from_secs(1));
        let piece = MIN_BYTES_PER_WINDOW as usize;
        // Steady: a window's worth every 300 ms, across several windows.
        let got = up.save("web:a", "steady.bin", "", None, paced(6, piece, Duration::from_millis(300))).await;
        assert_eq!(got.expect("a steady upload is stored").size, 6 * MIN_BYTES_PER_WINDOW);
        // A drip: one byte every 300 ms never fills a window.
        let got = up.save("web:a", "drip.bin", "", None, paced(100, 1, Duration::from_millis(300))).await;
        assert!(matches!(got, Err(UploadError::Stalled)), "{got:?}");
    }

    #[tokio::test]
    async fn uploads_are_capped_while_streaming_and_swept_when_old() {
        let dir = tempfile::tempdir().unwrap();
        let up = Uploads::new(dir.path().join("files"), 100, Duration::from_secs(30));
        // (declared length, pieces, stored?)
        let cases: &[(Option<u64>, &[usize], bool)] =
            &[(None, &[40, 60], true), (Some(101), &[], false), (None, &[60, 60], false), (Some(10), &[60, 60], false)];
        for (declared, pieces, stored) in cases {
            let got = up.save("web:a", "x.bin", "application/x", *declared, chunks(pieces)).await;
            match (got, stored) {
                (Ok(meta), true) => {
                    assert_eq!(meta.size, pieces.iter().sum::<usize>() as u64);
                    assert_eq!(up.get(&meta.id).await.unwrap(), meta);
                }
                (Err(UploadError::TooLarge { max: 100 }), false) => {}
                (other, _) => panic!("{declared:?} {pieces:?}: {other:?}"),
            }
        }
        // Only the stored upload and its description are left: no parts.
        let left = std::fs::read_dir(dir.path().join("files")).unwrap().count();
        assert_eq!(left, 2);
        // A part left by a crash mid-upload, last written two days ago.
        let crashed = dir.path().join("files/0123456789abcdef0123456789abcdef.part");
        let f = std::fs::File::create(&crashed).unwrap();
        f.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(2 * 86_400)).unwrap();
        drop(f);
        assert_eq!(up.sweep(now_ms() - 60_000).await.unwrap(), 0, "a fresh upload stays");
        assert!(!crashed.exists(), "the old part is gone");
        assert_eq!(up.sweep(now_ms() + 1).await.unwrap(), 1);
        assert_eq!(std::fs::read_dir(dir.path().join("files")).unwrap().count(), 0);
    }
}
