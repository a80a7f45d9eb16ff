//! The files of a Telegram message as Butler's `Attachment`s: a photo (its largest size), a
//! voice note, an audio file, a document, a video, a round video note, an animation (as a
//! video), each with what Telegram says about it (MIME type, size, name, duration) and the
//! `file_id` the channel's file source downloads it by.
//!
//! Everything here is a claim of the platform or the sender: the media component checks sizes
//! while downloading and sniffs the real type. This module is pure: it must never call Telegram.

use butler_channel::{Attachment, MediaKind as Kind};
use teloxide::types::{FileMeta, MediaKind, Seconds};

/// What Telegram serves every photo as (a photo object carries no MIME type).
const PHOTO_MIME: &str = "image/jpeg";
/// What Telegram serves every video note as (a video note object carries no MIME type).
const VIDEO_NOTE_MIME: &str = "video/mp4";

/// The file a message carries, if its content is one Butler downloads; `None` for text,
/// stickers, locations, polls and the rest (those are described in the text instead).
pub fn attachment(media: &MediaKind) -> Option<Attachment> {
    let (kind, file, mime, name, duration) = match media {
        MediaKind::Photo(p) => {
            let best = p.photo.iter().max_by_key(|s| (u64::from(s.width) * u64::from(s.height), s.file.size))?;
            (Kind::Image, &best.file, Some(PHOTO_MIME.to_string()), None, None)
        }
        MediaKind::Voice(v) => {
            let v = &v.voice;
            (Kind::Voice, &v.file, mime(v.mime_type.as_ref()), None, Some(v.duration))
        }
        MediaKind::Audio(a) => {
            let a = &a.audio;
            (Kind::Audio, &a.file, mime(a.mime_type.as_ref()), a.file_name.clone(), Some(a.duration))
        }
        MediaKind::Document(d) => {
            let d = &d.document;
            (Kind::Document, &d.file, mime(d.mime_type.as_ref()), d.file_name.clone(), None)
        }
        MediaKind::Video(v) => {
            let v = &v.video;
            (Kind::Video, &v.file, mime(v.mime_type.as_ref()), v.file_name.clone(), Some(v.duration))
        }
        MediaKind::VideoNote(v) => {
            let v = &v.video_note;
            (Kind::VideoNote, &v.file, Some(VIDEO_NOTE_MIME.to_string()), None, Some(v.duration))
        }
        // A GIF is sent by Telegram as a silent MP4: to Butler it is a video.
        MediaKind::Animation(a) => {
            let a = &a.animation;
            (Kind::Video, &a.file, mime(a.mime_type.as_ref()), a.file_name.clone(), Some(a.duration))
        }
        _ => return None,
    };
    Some(described(kind, file, mime, name, duration))
}

fn described(
    kind: Kind,
    file: &FileMeta,
    mime: Option<String>,
    name: Option<String>,
    duration: Option<Seconds>,
) -> Attachment {
    Attachment {
        mime,
        size: known_size(file.size),
        name: name.filter(|n| !n.trim().is_empty()),
        duration_secs: duration.map(|d| d.seconds()),
        ..Attachment::new(kind, file.id.0.clone())
    }
}

/// A `file_size` as Telegram said it: teloxide reads a missing one as `u32::MAX`.
pub(crate) fn known_size(size: u32) -> Option<u64> {
    (size != u32::MAX).then_some(u64::from(size))
}

/// The MIME type as Telegram wrote it (teloxide's `Mime` is not named in its public API).
fn mime(m: Option<&impl std::fmt::Display>) -> Option<String> {
    m.map(ToString::to_string).filter(|m| !m.is_empty())
}
