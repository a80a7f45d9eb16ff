//! A MESSAGE_CREATE's `attachments` as Butler's [`Attachment`]s: the attachment id, its
//! claimed `content_type`, size and file name, its CDN `url`, and `duration_secs` of audio.
//!
//! The kind: a message flagged IS_VOICE_MESSAGE (1 << 13) carries a voice message (its one
//! audio file, OGG/Opus, is Voice); otherwise `image/*` is Image, `audio/*` Audio, `video/*`
//! Video, a file without a content type is judged by its extension, anything else is a
//! Document. This module only maps: it must never fetch anything or trust what it reads.

use butler_channel::{Attachment, MediaKind};
use serenity::model::channel::{Message, MessageFlags};

/// The kind of an attachment with content type `mime` and file name `name`.
pub(crate) fn kind(mime: Option<&str>, name: &str, voice_message: bool) -> MediaKind {
    let mime = mime.unwrap_or("").trim().to_ascii_lowercase();
    let family = mime.split('/').next().unwrap_or("");
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    let family = match family {
        "" => match ext.as_str() {
            "png" | "jpg" | "jpeg" | "gif" | "webp" | "bmp" | "heic" | "heif" => "image",
            "mp3" | "m4a" | "wav" | "ogg" | "oga" | "opus" | "flac" | "aac" => "audio",
            "mp4" | "mov" | "m4v" | "webm" | "mkv" => "video",
            _ => "",
        },
        f => f,
    };
    match family {
        "audio" if voice_message => MediaKind::Voice,
        "" if voice_message => MediaKind::Voice,
        "image" => MediaKind::Image,
        "audio" => MediaKind::Audio,
        "video" => MediaKind::Video,
        _ => MediaKind::Document,
    }
}

/// The attachments of `msg`.
pub(crate) fn attachments(msg: &Message) -> Vec<Attachment> {
    let voice = msg.flags.is_some_and(|f| f.contains(MessageFlags::IS_VOICE_MESSAGE));
    msg.attachments
        .iter()
        .map(|a| {
            let mime = a.content_type.as_deref().map(str::trim).filter(|m| !m.is_empty());
            let mut out = Attachment::new(kind(mime, &a.filename, voice), a.id.to_string());
            out.mime = mime.map(str::to_string);
            out.size = Some(u64::from(a.size));
            out.name = Some(a.filename.clone()).filter(|n| !n.is_empty());
            out.url = Some(a.url.clone()).filter(|u| !u.is_empty());
            out.duration_secs = a.duration_secs.filter(|d| d.is_finite() && *d >= 0.0).map(|d| d.ceil() as u32);
            out
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_table() {
        let cases = [
            (Some("image/png"), "a.png", false, MediaKind::Image),
            (Some("image/jpeg"), "IMG_1.JPG", true, MediaKind::Image),
            (Some("audio/ogg"), "voice-message.ogg", true, MediaKind::Voice),
            (None, "voice-message.ogg", true, MediaKind::Voice),
            (Some("audio/ogg"), "song.ogg", false, MediaKind::Audio),
            (Some("audio/mpeg"), "song.mp3", false, MediaKind::Audio),
            (Some("video/mp4"), "clip.mp4", false, MediaKind::Video),
            (Some("application/pdf; charset=binary"), "r.pdf", false, MediaKind::Document),
            (Some("text/plain; charset=utf-8"), "notes.txt", false, MediaKind::Document),
            (None, "photo.webp", false, MediaKind::Image),
            (None, "clip.mov", false, MediaKind::Video),
            (None, "archive.zip", false, MediaKind::Document),
            (None, "noextension", false, MediaKind::Document),
        ];
        for (mime, name, voice, want) in cases {
            assert_eq!(kind(mime, name, voice), want, "{mime:?} {name} voice={voice}");
        }
    }
}
