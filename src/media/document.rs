//! The text of documents people send, for the agent: text, Markdown, CSV and JSON read as UTF-8
//! (invalid bytes replaced), PDF text extracted with `lopdf` page by page. At most `[media]
//! max_chars` characters are kept for the message; the rest is counted, and for a PDF the whole
//! text is written beside the file (`<name>.txt`) so the agent can read on with its file tools.
//!
//! Reading runs on the blocking pool, a file at a time, in pieces for text; a malformed or
//! hostile PDF must end as an error (a panic inside the parser included), never a crash, and
//! extraction is bounded in time and in decompressed bytes.

use super::error::MediaError;
use super::words::shorten;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Longest time spent extracting a PDF's text.
const PDF_TIME: Duration = Duration::from_secs(30);
/// Most bytes one PDF stream (a page's content, a font) may inflate to.
const PDF_INFLATE: usize = 64 * 1024 * 1024;
/// Most text kept from one PDF (the `.txt` beside it), in bytes.
const PDF_TEXT: usize = 16 * 1024 * 1024;
/// Piece size for reading text files.
const PIECE: usize = 64 * 1024;

/// What a document says, cut for the message.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DocText {
    /// At most `max_chars` characters.
    pub text: String,
    /// Characters left out of `text`.
    pub more: usize,
    /// A PDF's page count.
    pub pages: Option<usize>,
    /// Where the whole text is, when it is not the file itself (a PDF's `<name>.txt`).
    pub whole: Option<PathBuf>,
}

/// Reads a text file (UTF-8, invalid bytes replaced, a leading BOM dropped).
pub async fn read_text(path: &Path, max_chars: usize) -> Result<DocText, MediaError> {
    let path = path.to_path_buf();
    match tokio::task::spawn_blocking(move || read_text_now(&path, max_chars)).await {
        Ok(done) => done,
        Err(_) => Err(MediaError::Unreadable { reason: "reading it failed".into() }),
    }
}

/// Extracts a PDF's text, page by page, within [`PDF_TIME`].
pub async fn read_pdf(path: &Path, max_chars: usize) -> Result<DocText, MediaError> {
    let path = path.to_path_buf();
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let task = tokio::task::spawn_blocking(move || read_pdf_now(&path, max_chars, &flag));
    match tokio::time::timeout(PDF_TIME, task).await {
        Ok(Ok(done)) => done,
        Ok(Err(e)) if e.is_panic() => {
            Err(MediaError::Unreadable { reason: "the PDF reader failed on it (the file is malformed)".into() })
        }
        Ok(Err(_)) => Err(MediaError::Unreadable { reason: "reading it was cancelled".into() }),
        Err(_) => {
            // The parser cannot be interrupted inside a page; it stops at the next one.
            stop.store(true, Ordering::Relaxed);
            Err(MediaError::Slow { secs: PDF_TIME.as_secs() })
        }
    }
}

/// Keeps the first `max` characters pushed and counts the rest.
struct Cut {
    text: String,
    kept: usize,
    more: usize,
    max: usize,
}

impl Cut {
    fn new(max: usize) -> Self {
        Self { text: String::new(), kept: 0, more: 0, max }
    }

    fn push(&mut self, s: &str) {
        for c in s.chars() {
            if self.kept < self.max {
                self.text.push(c);
                self.kept += 1;
            } else {
                self.more += 1;
            }
        }
    }
}

fn read_text_now(path: &Path, max_chars: usize) -> Result<DocText, MediaError> {
    let io = |e: std::io::Error| MediaError::Unreadable { reason: format!("it could not be read ({e})") };
    let mut file = std::fs::File::open(path).map_err(io)?;
    let mut cut = Cut::new(max_chars);
    let mut buf = vec![0u8; PIECE];
    let mut pending: Vec<u8> = Vec::new();
    let mut first = true;
    loop {
        let n = file.read(&mut buf).map_err(io)?;
        let eof = n == 0;
        pending.extend_from_slice(&buf[..n]);
        let mut rest: &[u8] = &pending;
        if first && rest.len() >= 3 {
            rest = rest.strip_prefix(b"\xef\xbb\xbf").unwrap_or(rest);
            first = false;
        }
        loop {
            match std::str::from_utf8(rest) {
                Ok(s) => {
                    cut.push(s);
                    rest = &[];
                    break;
                }
                Err(e) => {
                    let (valid, after) = rest.split_at(e.valid_up_to());
                    cut.push(std::str::from_utf8(valid).unwrap_or_default());
                    match e.error_len() {
                        Some(bad) => {
                            cut.push("\u{fffd}");
                            rest = &after[bad..];
                        }
                        None if eof => {
                            cut.push("\u{fffd}");
                            rest = &[];
                            break;
                        }
                        None => {
                            rest = after;
                            break;
                        }
                    }
                }
            }
        }
        pending = rest.to_vec();
        if eof {
            break;
        }
    }
    Ok(DocText { text: cut.text, more: cut.more, pages: None, whole: None })
}

fn read_pdf_now(path: &Path, max_chars: usize, stop: &AtomicBool) -> Result<DocText, MediaError> {
    let options = lopdf::LoadOptions { max_decompressed_size: Some(PDF_INFLATE), ..Default::default() };
    let doc = lopdf::Document::load_with_options(path, options)
        .map_err(|e| MediaError::Unreadable { reason: pdf_reason(&e) })?;
    let pages = doc.get_pages();
    let (mut all, mut failed) = (String::new(), 0usize);
    for number in pages.keys() {
        if stop.load(Ordering::Relaxed) || all.len() >= PDF_TEXT {
            break;
        }
        let mut page_ok = false;
        for chunk in doc.extract_text_chunks_with_limit(&[*number], PDF_INFLATE) {
            match chunk {
                Ok(text) => {
                    all.push_str(&text);
                    page_ok = true;
                }
                Err(e) => tracing::debug!(page = number, error = %e, "media: part of a PDF page unreadable"),
            }
        }
        if !page_ok {
            failed += 1;
        }
        if !all.ends_with('\n') && !all.is_empty() {
            all.push('\n');
        }
    }
    if !pages.is_empty() && failed == pages.len() && all.trim().is_empty() {
        return Err(MediaError::Unreadable { reason: "no page of it could be read".into() });
    }
    let all = tidy(&all);
    let mut cut = Cut::new(max_chars);
    cut.push(&all);
    let mut whole = None;
    if cut.more > 0 {
        let txt = text_beside(path);
        if std::fs::write(&txt, all.as_bytes()).is_ok() {
            whole = Some(txt);
        }
    }
    Ok(DocText { text: cut.text, more: cut.more, pages: Some(pages.len()), whole })
}

/// `<file>.txt` beside the PDF.
fn text_beside(path: &Path) -> PathBuf {
    let mut name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".txt");
    path.with_file_name(name)
}

/// Extracted text without trailing spaces on lines and without runs of more than one empty line.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut empty = 0;
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            empty += 1;
            if empty > 1 || out.is_empty() {
                continue;
            }
        } else {
            empty = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim_end().to_string()
}

fn pdf_reason(e: &lopdf::Error) -> String {
    let text = e.to_string();
    if text.to_ascii_lowercase().contains("decrypt") || text.to_ascii_lowercase().contains("password") {
        "it is encrypted with a password".into()
    } else {
        format!("it is not a readable PDF ({})", shorten(&text, 160))
    }
}
