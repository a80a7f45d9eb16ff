//! The real type of a file, from its first bytes (magic numbers), never from the name or the
//! MIME type a platform or sender claims; the name only refines plain text (JSON, CSV,
//! Markdown). Also the short labels and file extensions of the types Butler knows.
//!
//! Pure functions over a byte sample: this file must never touch the disk or the network.

/// How many bytes of a file's start [`sniff_file`] wants (more is fine, less may miss text).
pub const SAMPLE: usize = 8192;

pub const OCTET_STREAM: &str = "application/octet-stream";

/// The MIME type the first bytes of a file show, if Butler knows it: images, PDF, audio and
/// video containers, ZIP and gzip by their magic numbers, then `text/plain` for UTF-8 without
/// NUL or other control bytes (a multi-byte character cut at the end of the sample is fine).
/// `None` for anything else, and for an empty sample.
pub fn sniff(head: &[u8]) -> Option<&'static str> {
    magic(head).or_else(|| is_text(head).then_some("text/plain"))
}

/// The type of a file: [`sniff`], with plain text refined to JSON (it parses, or is cut and
/// named `.json`), CSV or Markdown by its content and name, and `application/octet-stream`
/// when nothing is known. `complete` says `head` is the whole file.
pub fn sniff_file(head: &[u8], complete: bool, name: Option<&str>) -> &'static str {
    match sniff(head) {
        Some("text/plain") => refine_text(head, complete, name),
        Some(mime) => mime,
        None => OCTET_STREAM,
    }
}

fn magic(h: &[u8]) -> Option<&'static str> {
    const PREFIXES: &[(&[u8], &str)] = &[
        (b"\x89PNG\r\n\x1a\n", "image/png"),
        (b"\xff\xd8\xff", "image/jpeg"),
        (b"GIF87a", "image/gif"),
        (b"GIF89a", "image/gif"),
        (b"fLaC", "audio/flac"),
        (b"ID3", "audio/mpeg"),
        (b"PK\x03\x04", "application/zip"),
        (b"PK\x05\x06", "application/zip"),
        (b"\x1f\x8b\x08", "application/gzip"),
    ];
    if let Some((_, mime)) = PREFIXES.iter().find(|(m, _)| h.starts_with(m)) {
        return Some(mime);
    }
    if h.len() >= 12 && h.starts_with(b"RIFF") {
        return match &h[8..12] {
            b"WAVE" => Some("audio/wav"),
            b"WEBP" => Some("image/webp"),
            b"AVI " => Some("video/x-msvideo"),
            _ => None,
        };
    }
    if h.starts_with(b"OggS") {
        return Some(ogg(h));
    }
    if h.len() >= 12 && &h[4..8] == b"ftyp" {
        return Some(ftyp(&h[8..12]));
    }
    if h.starts_with(b"\x1a\x45\xdf\xa3") {
        let doc = &h[..h.len().min(64)];
        return Some(if contains(doc, b"webm") { "video/webm" } else { "video/x-matroska" });
    }
    if contains(&h[..h.len().min(1024)], b"%PDF-") {
        return Some("application/pdf");
    }
    if is_bmp(h) {
        return Some("image/bmp");
    }
    if h.len() >= 4 && h[0] == 0xff {
        // MPEG audio frame sync: 11 bits set; layer bits 00 are AAC in ADTS framing.
        if h[1] & 0xe0 == 0xe0 && (h[1] >> 1) & 0b11 != 0 && h[2] & 0xf0 != 0xf0 {
            return Some("audio/mpeg");
        }
        if h[1] & 0xf6 == 0xf0 {
            return Some("audio/aac");
        }
    }
    None
}

/// OGG: the first packet names the codec.
fn ogg(h: &[u8]) -> &'static str {
    let first = &h[..h.len().min(128)];
    if contains(first, b"\x80theora") {
        "video/ogg"
    } else {
        "audio/ogg"
    }
}

/// Whether an OGG file carries Opus (its first packet is `OpusHead`), as Telegram voice notes do.
pub fn is_ogg_opus(head: &[u8]) -> bool {
    head.starts_with(b"OggS") && contains(&head[..head.len().min(128)], b"OpusHead")
}

/// ISO base media (MP4, M4A, MOV, HEIC) by its major brand.
fn ftyp(brand: &[u8]) -> &'static str {
    match brand {
        b"M4A " | b"M4B " | b"M4P " => "audio/mp4",
        b"qt  " => "video/quicktime",
        b"heic" | b"heix" | b"heim" | b"heis" | b"mif1" | b"msf1" | b"hevc" => "image/heic",
        b"avif" | b"avis" => "image/avif",
        b if b.starts_with(b"3gp") || b.starts_with(b"3g2") => "video/3gpp",
        _ => "video/mp4",
    }
}

/// `BM`, then a DIB header size BMP files use (12, 40, 52, 56, 64, 108, 124), so text that
/// starts with "BM" is not taken for an image.
fn is_bmp(h: &[u8]) -> bool {
    h.len() >= 18
        && h.starts_with(b"BM")
        && matches!(u32::from_le_bytes([h[14], h[15], h[16], h[17]]), 12 | 40 | 52 | 56 | 64 | 108 | 124)
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// UTF-8 (allowing a character cut by the end of the sample) without NUL or control bytes other
/// than tab, newlines, form feed and escape.
fn is_text(h: &[u8]) -> bool {
    if h.is_empty() || h.iter().any(|&b| b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0c | 0x1b)) {
        return false;
    }
    match std::str::from_utf8(h) {
        Ok(_) => true,
        // Only an incomplete sequence at the very end (error_len None) is allowed.
        Err(e) => e.error_len().is_none() && h.len() - e.valid_up_to() < 4,
    }
}

fn refine_text(head: &[u8], complete: bool, name: Option<&str>) -> &'static str {
    let ext = name.and_then(extension_of).unwrap_or_default();
    let start = head.iter().find(|b| !b.is_ascii_whitespace());
    if matches!(start, Some(b'{') | Some(b'[')) {
        let parses = complete && serde_json::from_slice::<serde::de::IgnoredAny>(head).is_ok();
        if parses || (!complete && ext == "json") {
            return "application/json";
        }
    }
    match ext.as_str() {
        "csv" | "tsv" => return "text/csv",
        "md" | "markdown" => return "text/markdown",
        _ => {}
    }
    if looks_like_csv(head) {
        return "text/csv";
    }
    "text/plain"
}

/// At least three lines, each with the same number (two or more) of commas outside quotes.
fn looks_like_csv(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let mut lines = text.lines().filter(|l| !l.trim().is_empty()).take(6);
    let commas = |l: &str| {
        let mut quoted = false;
        l.chars()
            .filter(|c| {
                if *c == '"' {
                    quoted = !quoted;
                }
                *c == ',' && !quoted
            })
            .count()
    };
    let Some(first) = lines.next().map(commas) else { return false };
    let rest: Vec<usize> = lines.map(commas).collect();
    first >= 2 && rest.len() >= 2 && rest.iter().all(|n| *n == first)
}

/// The lower-case extension of a file name, if it has one.
pub fn extension_of(name: &str) -> Option<String> {
    let (stem, ext) = name.rsplit_once('.')?;
    (!stem.is_empty() && !ext.is_empty() && ext.len() <= 10).then(|| ext.to_ascii_lowercase())
}

/// The usual extension for a sniffed type (for files sent without a name).
pub fn extension(mime: &str) -> &'static str {
    match mime {
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/bmp" => "bmp",
        "image/heic" => "heic",
        "image/avif" => "avif",
        "application/pdf" => "pdf",
        "audio/ogg" => "ogg",
        "video/ogg" => "ogv",
        "audio/mpeg" => "mp3",
        "audio/aac" => "aac",
        "audio/wav" => "wav",
        "audio/flac" => "flac",
        "audio/mp4" => "m4a",
        "video/mp4" => "mp4",
        "video/quicktime" => "mov",
        "video/3gpp" => "3gp",
        "video/webm" => "webm",
        "video/x-matroska" => "mkv",
        "video/x-msvideo" => "avi",
        "application/zip" => "zip",
        "application/gzip" => "gz",
        "application/json" => "json",
        "text/csv" => "csv",
        "text/markdown" => "md",
        "text/plain" => "txt",
        _ => "bin",
    }
}

/// A short word for a type, as the agent reads it in a file's description.
pub fn label(mime: &str) -> &str {
    match mime {
        "image/png" => "PNG",
        "image/jpeg" => "JPEG",
        "image/gif" => "GIF",
        "image/webp" => "WebP",
        "image/bmp" => "BMP",
        "image/heic" => "HEIC",
        "image/avif" => "AVIF",
        "application/pdf" => "PDF",
        "audio/ogg" => "OGG audio",
        "audio/mpeg" => "MP3",
        "audio/aac" => "AAC audio",
        "audio/wav" => "WAV",
        "audio/flac" => "FLAC",
        "audio/mp4" => "M4A audio",
        "video/mp4" => "MP4 video",
        "video/quicktime" => "QuickTime video",
        "video/webm" => "WebM video",
        "application/json" => "JSON",
        "text/csv" => "CSV",
        "text/markdown" => "Markdown",
        "text/plain" => "text",
        other => other,
    }
}

/// Whether two MIME types name the same thing (`image/jpg` is `image/jpeg`, parameters and
/// case ignored, Telegram's `audio/oga` is OGG).
pub fn same_type(claimed: &str, sniffed: &str) -> bool {
    let c = claimed.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    let canon = |m: &str| match m {
        "image/jpg" | "image/pjpeg" => "image/jpeg".to_string(),
        "audio/oga" | "audio/opus" | "audio/x-opus+ogg" | "application/ogg" => "audio/ogg".to_string(),
        "audio/mp3" | "audio/x-mp3" | "audio/mpeg3" => "audio/mpeg".to_string(),
        "audio/x-wav" | "audio/wave" | "audio/vnd.wave" => "audio/wav".to_string(),
        "audio/x-m4a" | "audio/m4a" => "audio/mp4".to_string(),
        "application/x-pdf" => "application/pdf".to_string(),
        "application/x-zip-compressed" => "application/zip".to_string(),
        other => other.to_string(),
    };
    canon(&c) == canon(sniffed) || (c.starts_with("text/") && sniffed.starts_with("text/"))
}
