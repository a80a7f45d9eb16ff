//! The words the agent and the person get for each attachment: one block of text for the model
//! (appended to the person's message; stable, so the same file always reads the same), an
//! image when the model can see, and a line for the person when something needs saying (what
//! was heard, what could not be read, how to turn something on).
//!
//! Pure rendering from what the other parts found: this file must never touch the disk, the
//! network, or a secret.

use super::document::DocText;
use super::error::MediaError;
use super::fetch::Fetched;
use super::picture::Shrunk;
use super::sniff::label;
use super::words::{count, duration, quoted, sentence, shorten, size};
use crate::llm::Image;
use butler_channel::MediaKind;

/// Longest transcript quoted back to the person, in characters.
const HEARD_CHARS: usize = 300;

/// What one attachment gives the agent.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Block {
    pub text: String,
    pub image: Option<Image>,
    pub note: Option<String>,
}

/// The word for what was sent: the platform's kind, corrected by the sniffed type (a "photo"
/// that is a PDF is a file; a document that is an image is an image).
pub fn word(kind: MediaKind, mime: &str) -> &'static str {
    let image = mime.starts_with("image/");
    match kind {
        MediaKind::Image if !image => "file",
        MediaKind::Document if image => "image",
        MediaKind::Document if mime.starts_with("audio/") => "audio file",
        kind => kind.word(),
    }
}

/// `[photo "IMG_1.jpg", <details>, saved as media/…` (not closed).
fn head(word: &str, f: &Fetched, details: &[String]) -> String {
    let mut out = format!("[{word}");
    if f.named {
        out.push(' ');
        out.push_str(&quoted(&f.shown));
    }
    for d in details.iter().filter(|d| !d.is_empty()) {
        out.push_str(", ");
        out.push_str(d);
    }
    out.push_str(", saved as ");
    out.push_str(&f.rel);
    out
}

/// `the photo "x.png"` / `your voice note`.
fn called(article: &str, word: &str, f: &Fetched) -> String {
    if f.named {
        format!("{article} {word} {}", quoted(&f.shown))
    } else {
        format!("{article} {word}")
    }
}

fn seconds(secs: Option<u64>) -> String {
    secs.map(duration).unwrap_or_default()
}

/// The file never reached the workspace (too large, no file source, download failed).
pub fn not_saved(word: &str, name: Option<&str>, e: &MediaError) -> Block {
    let named = name.map(|n| format!(" {}", quoted(n))).unwrap_or_default();
    Block {
        text: format!("[{word}{named} not saved: {e}; the person was told]"),
        image: None,
        note: Some(sentence(&e.to_string())),
    }
}

/// An image the model sees (attached as an image part).
pub fn seen(word: &str, f: &Fetched, s: &Shrunk) -> Block {
    let mut text = head(word, f, &[format!("{}×{} {}", s.width, s.height, label(f.mime)), size(f.size)]);
    text.push_str("; the image is attached");
    if (s.sent_width, s.sent_height) != (s.width, s.height) {
        text.push_str(&format!(" (shrunk to {}×{})", s.sent_width, s.sent_height));
    }
    text.push(']');
    Block { text, image: Some(s.image.clone()), note: None }
}

/// An image for a model without vision: described, and the person is told.
pub fn unseen(word: &str, f: &Fetched, dims: Option<(u32, u32)>) -> Block {
    let kind = match dims {
        Some((w, h)) => format!("{w}×{h} {}", label(f.mime)),
        None => label(f.mime).to_string(),
    };
    let mut text = head(word, f, &[kind, size(f.size)]);
    text.push_str(" — this model cannot see images; tell the person you cannot see it]");
    let note = format!("I can't see images with this model, so I only know a {word} was sent ([llm] vision is off).");
    Block { text, image: None, note: Some(note) }
}

/// A saved file that could not be read (a broken image, a malformed PDF).
pub fn unreadable(word: &str, f: &Fetched, e: &MediaError) -> Block {
    let what = called("the", word, f);
    let shown = if f.named { format!("[{word} {}", quoted(&f.shown)) } else { format!("[{word}") };
    Block {
        text: format!("{shown} could not be read: {e}; saved as {}]", f.rel),
        image: None,
        note: Some(sentence(&format!("I couldn't read {what}: {e}"))),
    }
}

/// A voice note or audio file with its transcript.
pub fn heard(word: &str, f: &Fetched, secs: Option<u64>, transcript: &str) -> Block {
    let mut text = format!("[{word}");
    if f.named {
        text.push(' ');
        text.push_str(&quoted(&f.shown));
    }
    if let Some(s) = secs {
        text.push_str(", ");
        text.push_str(&duration(s));
    }
    if transcript.is_empty() {
        text.push_str(&format!(", transcribed: no speech heard; saved as {}]", f.rel));
        let note = format!("🎤 I heard no speech in {}.", called("your", word, f));
        return Block { text, image: None, note: Some(note) };
    }
    text.push_str(&format!(", transcribed]:\n\"{transcript}\""));
    let note = format!("🎤 I heard: \"{}\"", shorten(transcript, HEARD_CHARS));
    Block { text, image: None, note: Some(note) }
}

/// A voice note or audio file that was not transcribed: `why` is `None` when no
/// speech-to-text is configured (the person is told how to set it up).
pub fn not_heard(word: &str, f: &Fetched, secs: Option<u64>, why: Option<&MediaError>) -> Block {
    let mut text = head(word, f, &[seconds(secs), size(f.size)]);
    let note = match why {
        None => {
            text.push_str("; not transcribed: speech-to-text is not set up (the person is told how to turn it on)]");
            let what = if word == "voice note" { "Voice notes" } else { "Audio files" };
            format!(
                "{what} need speech-to-text: set [media.transcription] base_url (OpenAI, Groq or a local whisper.cpp server) in the config."
            )
        }
        Some(e) => {
            text.push_str(&format!("; not transcribed: {e}]"));
            sentence(&format!("I couldn't transcribe {}: {e}", called("your", word, f)))
        }
    };
    Block { text, image: None, note: Some(note) }
}

/// A document with its text (cut at `[media] max_chars` with a marker).
pub fn document(word: &str, f: &Fetched, d: &DocText) -> Block {
    let pages =
        d.pages.map(|n| if n == 1 { "1 page".to_string() } else { format!("{} pages", count(n)) }).unwrap_or_default();
    let mut text = head(word, f, &[label(f.mime).to_string(), pages, size(f.size)]);
    if d.text.trim().is_empty() {
        let why = if d.pages.is_some() { "no text in it (a scan or only images?)" } else { "it is empty" };
        text.push_str(&format!("; {why}]"));
        return Block { text, image: None, note: None };
    }
    text.push_str("]\n");
    let fence = fence_for(&d.text);
    let lang = match f.mime {
        "application/json" => "json",
        "text/csv" => "csv",
        "text/markdown" => "markdown",
        _ => "",
    };
    // What a document says is data, whoever sent it: fenced as untrusted around the code fence.
    let body = format!("{fence}{lang}\n{}\n{fence}", d.text.trim_end_matches('\n'));
    text.push_str(&crate::tools::frame_untrusted("attachment", &body));
    if d.more > 0 {
        let (what, path) = match d.whole {
            Some(_) => ("text", format!("{}.txt", f.rel)),
            None => ("file", f.rel.clone()),
        };
        text.push_str(&format!(
            "\n[… cut: {} more characters; the whole {what} is {path} in your workspace (file_read)]",
            count(d.more)
        ));
    }
    Block { text, image: None, note: None }
}

/// A fence longer than any run of backticks in `text`, so the text cannot close it.
fn fence_for(text: &str) -> String {
    let (mut longest, mut run) = (0, 0);
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    "`".repeat(longest.max(2) + 1)
}

/// A file that is kept but not read (an archive, a video, an unknown type).
pub fn other(word: &str, f: &Fetched, secs: Option<u64>) -> Block {
    if f.size == 0 {
        return Block { text: format!("{}; it is empty]", head(word, f, &[])), image: None, note: None };
    }
    let video = f.mime.starts_with("video/") || matches!(word, "video" | "video note");
    let mut text = head(word, f, &[label(f.mime).to_string(), seconds(secs), size(f.size)]);
    text.push_str(if video { "; not watched]" } else { "; not read]" });
    Block { text, image: None, note: None }
}
