//! Downloads one attachment through its channel's [`FileSource`] into `<workspace>/media/`,
//! under `[media] max_bytes`: refused before the download when the platform's claimed size or
//! the server's announced size is over the cap, stopped (and the partial file deleted) as soon
//! as the streamed bytes pass it. Written to a `.part` file, synced, then renamed, under a name
//! that is stable per event and attachment, so a re-run of the event finds the file again.
//!
//! It must never hold more than one piece of the body in memory, use a sender's file name as a
//! path, write outside `<workspace>/media/`, or follow a link planted there.

use super::error::MediaError;
use super::sniff::{extension, sniff_file, SAMPLE};
use super::words::quoted;
use butler_channel::{Attachment, ByteStream, FileSource, MediaKind};
use futures::StreamExt;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Longest wait for the next piece of a download before it counts as stalled.
const STALL: Duration = Duration::from_secs(60);
/// Longest safe name kept from a sender's file name (bytes, all ASCII by then).
const MAX_NAME: usize = 80;

/// One attachment saved in the workspace.
#[derive(Clone, Debug)]
pub struct Fetched {
    /// Absolute path of the saved file.
    pub path: PathBuf,
    /// The path the agent's file tools take: `media/<file name>`.
    pub rel: String,
    /// The name as the person sees it: the sender's name (its last component, without control
    /// characters) or, without one, `<kind>-<n>.<ext>`.
    pub shown: String,
    /// The sender gave a name (`shown` is theirs, not made up).
    pub named: bool,
    pub size: u64,
    /// The sniffed type (see [`sniff_file`]); never the claimed one.
    pub mime: &'static str,
    /// The file's first bytes (at most [`SAMPLE`]).
    pub head: Vec<u8>,
}

/// Where and under which cap one attachment is fetched.
pub struct Fetch<'a> {
    pub source: &'a dyn FileSource,
    /// The user's workspace; the file goes to `<workspace>/media/`.
    pub workspace: &'a Path,
    pub event_id: &'a str,
    /// The attachment's position in the event (0-based).
    pub index: usize,
    /// `[media] max_bytes`.
    pub max: u64,
}

impl Fetch<'_> {
    /// Saves `a` (or finds it saved by an earlier run) and sniffs its type.
    pub async fn run(&self, a: &Attachment) -> Result<Fetched, MediaError> {
        let given = given_name(a);
        let what = match &given {
            Some(n) => format!("the file {}", quoted(n)),
            None => format!("the {}", a.kind.word()),
        };
        if let Some(claimed) = a.size.filter(|n| *n > self.max) {
            return Err(MediaError::TooLarge { what, size: Some(claimed), max: self.max });
        }
        let disk = |source| MediaError::Disk { what: what.clone(), source };
        let dir = media_dir(self.workspace).await.map_err(disk)?;
        let id = stable_id(self.event_id, self.index);
        let named = a.name.as_deref().and_then(safe_name).map(|n| format!("{id}-{n}"));
        if let Some(found) = find_saved(&dir, &id, named.as_deref(), a.kind, self.index).await.map_err(disk)? {
            return read_saved(&dir, &id, found, given, a.name.as_deref()).await.map_err(disk);
        }

        let download =
            self.source.open(a).await.map_err(|source| MediaError::Download { what: what.clone(), source })?;
        if let Some(announced) = download.size.filter(|n| *n > self.max) {
            return Err(MediaError::TooLarge { what, size: Some(announced), max: self.max });
        }
        let part = inside(&dir, &format!("{id}.part"))?;
        let (size, head) = match stream_to(&part, download.body, self.max, &what).await {
            Ok(done) => done,
            Err(e) => {
                let _ = tokio::fs::remove_file(&part).await;
                return Err(e);
            }
        };
        let mime = sniff_file(&head, size <= head.len() as u64, a.name.as_deref());
        let file_name =
            named.unwrap_or_else(|| format!("{id}-{}-{}.{}", kind_slug(a.kind), self.index + 1, extension(mime)));
        let path = inside(&dir, &file_name)?;
        if let Err(e) = tokio::fs::rename(&part, &path).await {
            let _ = tokio::fs::remove_file(&part).await;
            return Err(disk(e));
        }
        if let Ok(d) = tokio::fs::File::open(&dir).await {
            let _ = d.sync_all().await;
        }
        tracing::debug!(file = %file_name, size, mime, "media: saved attachment");
        let named = given.is_some();
        let shown = given.unwrap_or_else(|| file_name[id.len() + 1..].to_string());
        Ok(Fetched { rel: format!("media/{file_name}"), path, shown, named, size, mime, head })
    }
}

/// Streams `body` into `part` piece by piece, stopping past `max`; returns the size and the
/// first [`SAMPLE`] bytes.
async fn stream_to(part: &Path, mut body: ByteStream, max: u64, what: &str) -> Result<(u64, Vec<u8>), MediaError> {
    let disk = |source| MediaError::Disk { what: what.to_string(), source };
    let mut file =
        tokio::fs::OpenOptions::new().write(true).create(true).truncate(true).open(part).await.map_err(disk)?;
    let mut size = 0u64;
    let mut head = Vec::with_capacity(SAMPLE);
    loop {
        let piece = match tokio::time::timeout(STALL, body.next()).await {
            Err(_) => return Err(MediaError::Stalled { what: what.to_string(), secs: STALL.as_secs() }),
            Ok(None) => break,
            Ok(Some(Err(source))) => return Err(MediaError::Download { what: what.to_string(), source }),
            Ok(Some(Ok(piece))) => piece,
        };
        size += piece.len() as u64;
        if size > max {
            return Err(MediaError::TooLarge { what: what.to_string(), size: None, max });
        }
        if head.len() < SAMPLE {
            let take = (SAMPLE - head.len()).min(piece.len());
            head.extend_from_slice(&piece[..take]);
        }
        file.write_all(&piece).await.map_err(disk)?;
    }
    file.flush().await.map_err(disk)?;
    file.sync_all().await.map_err(disk)?;
    Ok((size, head))
}

/// `<workspace>/media`, created if needed, canonical, and inside the canonical workspace (a
/// `media` link pointing elsewhere is refused).
async fn media_dir(workspace: &Path) -> std::io::Result<PathBuf> {
    let dir = workspace.join("media");
    tokio::fs::create_dir_all(&dir).await?;
    let (root, dir) = (tokio::fs::canonicalize(workspace).await?, tokio::fs::canonicalize(&dir).await?);
    if !dir.starts_with(&root) || dir == root {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            "the media folder points outside the workspace",
        ));
    }
    Ok(dir)
}

/// `dir/name`, checked to be a direct child of `dir` (names are made safe before; this is the
/// last guard).
fn inside(dir: &Path, name: &str) -> Result<PathBuf, MediaError> {
    let path = dir.join(name);
    if name.is_empty() || name == "." || name == ".." || path.parent() != Some(dir) || path.file_name().is_none() {
        return Err(MediaError::Unreadable { reason: format!("the file name {name:?} is not safe") });
    }
    Ok(path)
}

/// A file an earlier run of the same event saved: the named one, or `<id>-<kind>-<n>.<ext>`.
/// Only regular files count (never a link).
async fn find_saved(
    dir: &Path,
    id: &str,
    named: Option<&str>,
    kind: MediaKind,
    index: usize,
) -> std::io::Result<Option<String>> {
    let is_file =
        |p: PathBuf| async move { tokio::fs::symlink_metadata(p).await.map(|m| m.is_file()).unwrap_or(false) };
    if let Some(name) = named {
        return Ok(is_file(dir.join(name)).await.then(|| name.to_string()));
    }
    let prefix = format!("{id}-{}-{}.", kind_slug(kind), index + 1);
    let mut entries = tokio::fs::read_dir(dir).await?;
    while let Some(e) = entries.next_entry().await? {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(ext) = name.strip_prefix(&prefix) else { continue };
        if !ext.is_empty() && !ext.contains('.') && is_file(e.path()).await {
            return Ok(Some(name));
        }
    }
    Ok(None)
}

/// A file saved by an earlier run, read back: its size, first bytes and sniffed type.
async fn read_saved(
    dir: &Path,
    id: &str,
    name: String,
    given: Option<String>,
    claimed: Option<&str>,
) -> std::io::Result<Fetched> {
    let path = dir.join(&name);
    let mut file = tokio::fs::File::open(&path).await?;
    let size = file.metadata().await?.len();
    let mut head = Vec::with_capacity(SAMPLE);
    (&mut file).take(SAMPLE as u64).read_to_end(&mut head).await?;
    let mime = sniff_file(&head, size <= head.len() as u64, claimed);
    let named = given.is_some();
    let shown = given.unwrap_or_else(|| name[id.len() + 1..].to_string());
    tracing::debug!(file = %name, size, mime, "media: attachment already saved by an earlier run");
    Ok(Fetched { rel: format!("media/{name}"), path, shown, named, size, mime, head })
}

/// A short id stable for one attachment of one event (a re-run finds the same file; different
/// events never share one).
pub fn stable_id(event_id: &str, index: usize) -> String {
    let digest =
        Sha256::new().chain_update(event_id.as_bytes()).chain_update(b"\0").chain_update(index.to_string()).finalize();
    hex::encode(&digest[..5])
}

/// A sender's file name made safe to use as one path component: its last component (after `/`
/// or `\`), characters outside `[A-Za-z0-9._-]` replaced by `_` (runs of them by one), no
/// leading dot, at most [`MAX_NAME`] bytes with the extension kept. `None` when nothing usable
/// is left (empty, `.`, `..`, only dots or underscores).
pub fn safe_name(claimed: &str) -> Option<String> {
    let last = claimed.rsplit(['/', '\\']).next().unwrap_or_default();
    let mut out = String::with_capacity(last.len());
    for c in last.chars() {
        let c = if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '_' };
        if !(c == '_' && out.ends_with('_')) {
            out.push(c);
        }
    }
    let out = out.trim_start_matches('.').to_string();
    if out.chars().all(|c| matches!(c, '.' | '_' | '-')) {
        return None;
    }
    Some(cap(out))
}

fn cap(name: String) -> String {
    if name.len() <= MAX_NAME {
        return name;
    }
    match name.rsplit_once('.') {
        Some((stem, ext)) if ext.len() <= 10 => format!("{}.{ext}", &stem[..MAX_NAME - ext.len() - 1]),
        _ => name[..MAX_NAME].to_string(),
    }
}

/// The sender's name as the person sees it: its last component, control characters dropped,
/// at most 100 characters; `None` when there is none.
pub fn given_name(a: &Attachment) -> Option<String> {
    let last = a.name.as_deref()?.rsplit(['/', '\\']).next().unwrap_or_default();
    let clean: String = last.chars().filter(|c| !c.is_control()).take(100).collect();
    let clean = clean.trim();
    (!clean.is_empty() && clean != "." && clean != "..").then(|| clean.to_string())
}

fn kind_slug(kind: MediaKind) -> &'static str {
    match kind {
        MediaKind::Image => "photo",
        MediaKind::Voice => "voice",
        MediaKind::Audio => "audio",
        MediaKind::Video => "video",
        MediaKind::VideoNote => "video-note",
        MediaKind::Document => "file",
    }
}
