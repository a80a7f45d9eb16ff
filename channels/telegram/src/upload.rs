//! Files Butler sends on Telegram: an `Outbound` with a `file` goes out as `sendPhoto` (a
//! JPEG, PNG or WebP marked as a photo, at most 10 MB) or else `sendDocument`, streamed from
//! its path on disk, with the message text rendered to HTML as its caption when it fits
//! Telegram's 1,024 characters. Sends go through the same scheduler, 429 handling and error
//! mapping as text messages.
//!
//! It must never read a file into memory: teloxide streams it from the path into the upload.

use crate::render::{plain, to_html, utf16_len};
use crate::send::{cant_parse, chat_of, classify, keyboard, thread_of};
use crate::{TelegramChannel, MAX_LEN};
use butler_channel::{chunk_text, ChannelError, ChunkLimit, MessageRef, OutFile, Outbound};
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use teloxide::payloads::{SendDocumentSetters, SendPhotoSetters};
use teloxide::requests::Requester;
use teloxide::types::{
    ChatId, InlineKeyboardMarkup, InputFile, Message, MessageId, ParseMode, ReplyParameters, ThreadId,
};
use teloxide::{ApiError, Bot, RequestError};

/// Telegram's limit on a caption, in characters (UTF-16 units) after entity parsing.
pub const MAX_CAPTION: usize = 1024;
/// The largest photo `sendPhoto` takes; anything larger goes as a document.
pub const MAX_PHOTO: u64 = 10 * 1000 * 1000;
/// The image types Telegram shows as photos.
const PHOTO_TYPES: [&str; 3] = ["image/jpeg", "image/png", "image/webp"];

/// The Bot API method a file goes out with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Photo,
    Document,
}

/// How one message with a file is delivered.
///
/// A text too long for a caption is sent first, as ordinary messages, and the file after it
/// without a caption: cutting the text to fit would lose part of the answer, a caption cannot
/// be continued in another message, and the text usually introduces the file, so it reads
/// best before it.
#[derive(Debug, PartialEq, Eq)]
pub struct Plan<'a> {
    pub method: Method,
    /// The Markdown shown as the file's caption.
    pub caption: Option<&'a str>,
    /// The Markdown sent as ordinary message(s) before the file.
    pub text_first: Option<&'a str>,
}

/// Photo or document, caption or text first: a pure decision on the file and the text.
pub fn plan<'a>(file: &OutFile, text: &'a str) -> Plan<'a> {
    let mime = file.mime.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    let photo = file.photo && PHOTO_TYPES.contains(&mime.as_str()) && file.size <= MAX_PHOTO;
    let method = if photo { Method::Photo } else { Method::Document };
    let (caption, text_first) = if text.trim().is_empty() {
        (None, None)
    } else if utf16_len(&plain(text)) <= MAX_CAPTION {
        (Some(text), None)
    } else {
        (None, Some(text))
    };
    Plan { method, caption, text_first }
}

/// Telegram refused the picture as a photo (its dimensions or format), not the request.
fn photo_refused(e: &RequestError) -> bool {
    match e {
        RequestError::Api(ApiError::ImageProcessFailed) => true,
        RequestError::Api(ApiError::Unknown(d)) => {
            ["PHOTO_INVALID_DIMENSIONS", "PHOTO_SAVE_FILE_INVALID", "PHOTO_EXT_INVALID", "IMAGE_PROCESS_FAILED"]
                .iter()
                .any(|s| d.contains(s))
        }
        _ => false,
    }
}

type Sent = Pin<Box<dyn Future<Output = Result<Message, RequestError>> + Send>>;

/// One upload request, built anew for every try (each try streams the file from its path).
struct Upload<'a> {
    chat: ChatId,
    thread: Option<ThreadId>,
    reply: Option<MessageId>,
    markup: Option<InlineKeyboardMarkup>,
    file: &'a OutFile,
}

/// Sets the options photo and document requests share (their setters are different traits).
macro_rules! options {
    ($req:ident, $up:expr, $caption:expr) => {{
        let mut req = $req;
        if let Some((text, html)) = $caption {
            req = req.caption(text);
            if html {
                req = req.parse_mode(ParseMode::Html);
            }
        }
        if let Some(t) = $up.thread {
            req = req.message_thread_id(t);
        }
        if let Some(r) = $up.reply {
            req = req.reply_parameters(ReplyParameters::new(r).allow_sending_without_reply());
        }
        if let Some(m) = $up.markup.clone() {
            req = req.reply_markup(m);
        }
        req
    }};
}

impl Upload<'_> {
    fn call(&self, bot: &Bot, method: Method, caption: Option<(String, bool)>) -> Sent {
        let input = InputFile::file(&self.file.path).file_name(self.file.name.clone());
        match method {
            Method::Photo => {
                let req = bot.send_photo(self.chat, input);
                Box::pin(options!(req, self, caption).into_future())
            }
            Method::Document => {
                let req = bot.send_document(self.chat, input);
                Box::pin(options!(req, self, caption).into_future())
            }
        }
    }
}

impl TelegramChannel {
    /// Delivers a message carrying a file; the returned reference is the file's message.
    pub(crate) async fn send_file(&self, msg: &Outbound, file: &OutFile) -> Result<MessageRef, ChannelError> {
        let chat = chat_of(&msg.conversation)?;
        // Checked before any text goes out: a file that is gone would fail every retry.
        if let Err(e) = tokio::fs::metadata(&file.path).await {
            return Err(ChannelError::Rejected(format!("the file `{}` to send cannot be read: {e}", file.name)));
        }
        let plan = plan(file, &msg.text);
        let mut reply = msg.reply_to.as_deref().and_then(|r| r.parse().ok()).map(MessageId);
        if let Some(text) = plan.text_first {
            for (i, chunk) in chunk_text(text, ChunkLimit::Utf16(MAX_LEN)).into_iter().enumerate() {
                let part = Outbound {
                    text: chunk,
                    buttons: Vec::new(),
                    reply_to: if i == 0 { msg.reply_to.clone() } else { None },
                    draft: false,
                    file: None,
                    ..msg.clone()
                };
                self.send_message(&part).await?;
            }
            reply = None;
        }
        let markup = if msg.buttons.is_empty() { None } else { Some(keyboard(&msg.buttons)?) };
        let up = Upload { chat, thread: thread_of(&msg.conversation), reply, markup, file };
        let mut method = plan.method;
        let mut caption = plan.caption.map(|md| (to_html(md), true));
        let sent = loop {
            let tried = caption.clone();
            let done = self.scheduled(chat, false, || up.call(&self.transfer, method, tried.clone())).await;
            match done {
                Err(e) if caption.as_ref().is_some_and(|(_, html)| *html) && cant_parse(&e) => {
                    tracing::warn!(error = %crate::redact(&e.to_string(), &self.settings.token), "Telegram refused the rendered caption; sending it plain");
                    caption = plan.caption.map(|md| (plain(md), false));
                }
                Err(e) if method == Method::Photo && photo_refused(&e) => {
                    tracing::info!(error = %e, "Telegram refused the picture as a photo; sending it as a document");
                    method = Method::Document;
                }
                other => break other,
            }
        };
        let sent = sent.map_err(|e| classify(e, &self.settings.token))?;
        Ok(MessageRef { conversation: msg.conversation.clone(), id: sent.id.0.to_string() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(mime: &str, size: u64, photo: bool) -> OutFile {
        OutFile { path: "/tmp/x".into(), name: "x".into(), mime: mime.into(), size, photo }
    }

    #[test]
    fn photo_or_document_and_where_the_text_goes() {
        let long = "word ".repeat(300); // 1,500 characters
        let fits = "a".repeat(MAX_CAPTION);
        let over = "a".repeat(MAX_CAPTION + 1);
        // Markdown longer than 1,024 whose visible text fits: the caption is counted as shown.
        let marked = format!("**{}**", "b".repeat(MAX_CAPTION - 2));
        let emoji = "😀".repeat(513); // 1,026 UTF-16 units in 513 characters
                                      // (what, file, text, method, caption, text sent after the file)
        type Case<'a> = (&'a str, OutFile, &'a str, Method, Option<&'a str>, Option<&'a str>);
        let cases: Vec<Case> = vec![
            ("a PNG photo with a caption", file("image/png", 200_000, true), "here", Method::Photo, Some("here"), None),
            ("a JPEG photo", file("image/jpeg", MAX_PHOTO, true), "", Method::Photo, None, None),
            ("a WebP photo, type with parameters", file("Image/WebP; q=1", 10, true), " ", Method::Photo, None, None),
            ("a photo over 10 MB", file("image/jpeg", MAX_PHOTO + 1, true), "big", Method::Document, Some("big"), None),
            ("a GIF is no photo", file("image/gif", 10, true), "gif", Method::Document, Some("gif"), None),
            ("a PNG not marked as photo", file("image/png", 10, false), "png", Method::Document, Some("png"), None),
            ("a PDF", file("application/pdf", 10, false), fits.as_str(), Method::Document, Some(fits.as_str()), None),
            (
                "a caption one too long",
                file("application/pdf", 10, false),
                over.as_str(),
                Method::Document,
                None,
                Some(over.as_str()),
            ),
            ("a long text", file("image/png", 10, true), long.as_str(), Method::Photo, None, Some(long.as_str())),
            (
                "markup is not counted",
                file("text/plain", 10, false),
                marked.as_str(),
                Method::Document,
                Some(marked.as_str()),
                None,
            ),
            (
                "emoji count twice",
                file("text/plain", 10, false),
                emoji.as_str(),
                Method::Document,
                None,
                Some(emoji.as_str()),
            ),
        ];
        for (what, f, text, method, caption, first) in cases {
            let want = Plan { method, caption, text_first: first };
            assert_eq!(plan(&f, text), want, "{what}");
        }
    }

    #[test]
    fn only_picture_refusals_fall_back_to_a_document() {
        let cases = [
            (RequestError::Api(ApiError::ImageProcessFailed), true),
            (RequestError::Api(ApiError::Unknown("Bad Request: PHOTO_INVALID_DIMENSIONS".into())), true),
            (RequestError::Api(ApiError::Unknown("Bad Request: chat not found".into())), false),
            (RequestError::Api(ApiError::BotBlocked), false),
        ];
        for (e, want) in cases {
            assert_eq!(photo_refused(&e), want, "{e}");
        }
    }
}
