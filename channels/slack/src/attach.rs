//! Slack file objects (the `files` of a message event, the `file` of a files.info answer) as
//! Butler's [`Attachment`]s: the kind from Slack's own markers and the MIME type, the claimed
//! MIME type, size and name, the file id, and `url_private_download` as the place to fetch it.
//!
//! - `subtype: "slack_audio"` (a clip recorded in Slack, sometimes labelled `video/mp4`), or
//!   an `audio/*` file named like Slack's recorded clips (`audio_message.*`): Voice;
//! - `subtype: "slack_video"`: Video;
//! - otherwise the MIME type's family (`image/*`, `audio/*`, `video/*`), then the `filetype`
//!   for files without a MIME type; anything else is a Document.
//!
//! Files without an id, and tombstones or files hidden by the workspace's plan (no content to
//! fetch), are left out. This module only maps: it must never fetch anything or trust what it
//! reads (names and types are the sender's claims; Butler sniffs the bytes later).

use butler_channel::{Attachment, MediaKind};
use serde::Deserialize;

/// The fields of a Slack file object Butler reads.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct SlackFile {
    pub id: Option<String>,
    pub name: Option<String>,
    pub title: Option<String>,
    pub mimetype: Option<String>,
    pub filetype: Option<String>,
    /// `slack_audio` / `slack_video` for clips recorded in Slack.
    pub subtype: Option<String>,
    pub size: Option<u64>,
    pub mode: Option<String>,
    pub url_private: Option<String>,
    pub url_private_download: Option<String>,
    /// Length of a recorded clip.
    pub duration_ms: Option<u64>,
}

fn nonempty(s: &Option<String>) -> Option<&str> {
    s.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

/// What kind of thing `f` is (see the module doc).
pub fn kind(f: &SlackFile) -> MediaKind {
    let mime = nonempty(&f.mimetype).unwrap_or("").to_ascii_lowercase();
    let family = mime.split('/').next().unwrap_or("");
    let name = nonempty(&f.name).unwrap_or("").to_ascii_lowercase();
    match f.subtype.as_deref() {
        Some("slack_audio") => return MediaKind::Voice,
        Some("slack_video") => return MediaKind::Video,
        _ => {}
    }
    match family {
        "audio" if name.starts_with("audio_message") => MediaKind::Voice,
        "image" => MediaKind::Image,
        "audio" => MediaKind::Audio,
        "video" => MediaKind::Video,
        "" => by_filetype(nonempty(&f.filetype).unwrap_or("")),
        _ => MediaKind::Document,
    }
}

/// The kind of a file Slack gave no MIME type for, from its `filetype`.
fn by_filetype(filetype: &str) -> MediaKind {
    match filetype.to_ascii_lowercase().as_str() {
        "png" | "jpg" | "jpeg" | "gif" | "webp" | "bmp" | "heic" | "heif" | "tiff" => MediaKind::Image,
        "mp3" | "m4a" | "wav" | "ogg" | "oga" | "opus" | "flac" | "aac" => MediaKind::Audio,
        "mp4" | "mov" | "m4v" | "webm" | "mkv" | "avi" | "mpg" | "mpeg" => MediaKind::Video,
        _ => MediaKind::Document,
    }
}

/// `f` as an attachment, or None when there is nothing to fetch.
pub fn attachment(f: &SlackFile) -> Option<Attachment> {
    let id = nonempty(&f.id)?;
    if matches!(f.mode.as_deref(), Some("tombstone" | "hidden_by_limit")) {
        return None;
    }
    let mut a = Attachment::new(kind(f), id);
    a.mime = nonempty(&f.mimetype).map(str::to_string);
    a.size = f.size;
    a.name = nonempty(&f.name).or(nonempty(&f.title)).map(str::to_string);
    a.url = nonempty(&f.url_private_download).or(nonempty(&f.url_private)).map(str::to_string);
    a.duration_secs = f.duration_ms.map(|ms| u32::try_from(ms.div_ceil(1000)).unwrap_or(u32::MAX));
    Some(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kinds_from_slack_markers_mime_and_filetype() {
        type Case = (&'static str, serde_json::Value, MediaKind);
        let cases: Vec<Case> = vec![
            ("a photo", json!({"mimetype": "image/png", "filetype": "png"}), MediaKind::Image),
            ("a recorded clip", json!({"mimetype": "audio/webm", "subtype": "slack_audio"}), MediaKind::Voice),
            (
                "a clip labelled video",
                json!({"mimetype": "video/mp4", "subtype": "slack_audio", "name": "audio_message.mp4"}),
                MediaKind::Voice,
            ),
            ("a clip without subtype", json!({"mimetype": "audio/mp4", "name": "audio_message.m4a"}), MediaKind::Voice),
            ("a song", json!({"mimetype": "audio/mpeg", "name": "song.mp3"}), MediaKind::Audio),
            ("a video clip", json!({"mimetype": "video/webm", "subtype": "slack_video"}), MediaKind::Video),
            ("a video", json!({"mimetype": "video/quicktime"}), MediaKind::Video),
            ("a PDF", json!({"mimetype": "application/pdf", "filetype": "pdf"}), MediaKind::Document),
            ("a snippet", json!({"mimetype": "text/plain", "filetype": "text"}), MediaKind::Document),
            ("no mime, jpg", json!({"filetype": "jpg"}), MediaKind::Image),
            ("no mime, m4a", json!({"mimetype": "", "filetype": "m4a"}), MediaKind::Audio),
            ("nothing known", json!({}), MediaKind::Document),
        ];
        for (what, file, want) in cases {
            let f: SlackFile = serde_json::from_value(file).unwrap();
            assert_eq!(kind(&f), want, "{what}");
        }
    }

    #[test]
    fn files_without_content_are_left_out() {
        let cases = [
            json!({"mimetype": "image/png"}),
            json!({"id": "", "mimetype": "image/png"}),
            json!({"id": "F1", "mode": "tombstone"}),
            json!({"id": "F1", "mode": "hidden_by_limit"}),
        ];
        for c in cases {
            let f: SlackFile = serde_json::from_value(c.clone()).unwrap();
            assert_eq!(attachment(&f), None, "{c}");
        }
        let f: SlackFile = serde_json::from_value(
            json!({"id": "F1", "title": "Notes", "url_private": "https://files.slack.com/files-pri/T-F1/notes", "duration_ms": 1001}),
        )
        .unwrap();
        let a = attachment(&f).unwrap();
        assert_eq!(a.name.as_deref(), Some("Notes"), "the title when there is no name");
        assert_eq!(a.url.as_deref(), Some("https://files.slack.com/files-pri/T-F1/notes"));
        assert_eq!(a.duration_secs, Some(2));
    }
}
