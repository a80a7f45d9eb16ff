//! Issue 19 on Telegram: what people send from a phone and the files Butler sends back, with
//! the real teloxide client inside Butler against the fake Bot API.
//! - Photos, voice notes, audio, documents and video notes arrive in the inbox as attachments
//!   (kind, MIME type, size, name, file_id) with the caption as the text.
//! - The file source fetches a file through getFile and the file URL, streamed, intact (SHA-256),
//!   also at 15 MB; unknown, expired and too-big files and a dead server are the right
//!   `ChannelError`s, none of them carrying the bot token.
//! - sendPhoto and sendDocument through the real adapter: the exact bytes, the name, the caption
//!   as Telegram HTML, the reply; a text too long for a caption goes first, the file after it.

use crate::support::fake_telegram::files::{FakeFile, SentFile, KEEP_BYTES};
use crate::support::fake_telegram::updates::{chat, user};
use crate::support::fake_telegram::{Failure, FakeTelegram, Shown};
use crate::support::payloads::{out_file, pdf, png, sha256};
use crate::{tls, Tg, OWNER, TOKEN};
use butler::channel::limit::Gate;
use butler::channel::{Attachment, Channel, ChannelError, ConversationRef, FileSource, MediaKind, Outbound};
use butler_telegram::{Limits, Mode, Settings, TelegramChannel};
use futures::StreamExt;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// An Ogg page header and some payload: only the transport matters here.
fn ogg(len: usize) -> Vec<u8> {
    let mut out = b"OggS\x00\x02".to_vec();
    out.extend((0..len - 6).map(|i| (i * 7 % 256) as u8));
    out
}

/// The adapter on its own against `fake` (limits short, so cases do not wait on each other).
async fn adapter(fake: &FakeTelegram) -> Arc<TelegramChannel> {
    tls();
    let settings = Settings {
        token: TOKEN.into(),
        api_url: fake.api_url(),
        mode: Mode::Polling { timeout: Duration::from_secs(1) },
        commands: vec![],
        limits: Limits { per_chat: Duration::from_millis(20), per_second: 30 },
        gate: Gate::local(),
        link_previews: false,
    };
    TelegramChannel::connect(settings).await.unwrap()
}

/// The stored event of update `id` (as the inbox row holds it), once it is there.
async fn stored(tg: &Tg, update: i64) -> Value {
    use sqlx::Connection;
    let mut db = sqlx::SqliteConnection::connect(&tg.app.db_url()).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let row: Option<(String,)> = sqlx::query_as("SELECT event FROM inbox WHERE id = $1")
            .bind(format!("telegram:update:{update}"))
            .fetch_optional(&mut db)
            .await
            .unwrap();
        if let Some((event,)) = row {
            return serde_json::from_str(&event).unwrap();
        }
        assert!(Instant::now() < deadline, "update {update} never reached the inbox");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn from_owner(id: i64, fields: Value) -> Value {
    let mut m =
        json!({"message_id": id, "date": 1_700_000_000, "from": user(OWNER, "Owner"), "chat": chat(OWNER, false)});
    for (k, v) in fields.as_object().unwrap() {
        m[k] = v.clone();
    }
    json!({ "message": m })
}

#[tokio::test]
async fn files_people_send_arrive_as_attachments_with_the_caption_as_text() {
    let tg = Tg::start().await;
    tg.polling().await;
    // (what, the message's fields, the stored text, kind, mime, size, name, file_id, seconds)
    #[allow(clippy::type_complexity)]
    let cases: Vec<(&str, Value, &str, &str, Option<&str>, u64, Option<&str>, &str, Option<u32>)> = vec![
        (
            "photo: the largest size",
            json!({"photo": [
                {"file_id": "AgACAgQAAxkBAAIB-small", "file_unique_id": "AQADs", "width": 90, "height": 67, "file_size": 1433},
                {"file_id": "AgACAgQAAxkBAAIB-large", "file_unique_id": "AQADl", "width": 1280, "height": 960, "file_size": 104857},
                {"file_id": "AgACAgQAAxkBAAIB-medium", "file_unique_id": "AQADm", "width": 320, "height": 240, "file_size": 15011}],
                "caption": "what bird is this?"}),
            "what bird is this?",
            "image",
            Some("image/jpeg"),
            104857,
            None,
            "AgACAgQAAxkBAAIB-large",
            None,
        ),
        (
            "voice note",
            json!({"voice": {"file_id": "AwACAgQAAxkBAAIC-voice", "file_unique_id": "AgADv", "duration": 4, "mime_type": "audio/ogg", "file_size": 9215}}),
            "",
            "voice",
            Some("audio/ogg"),
            9215,
            None,
            "AwACAgQAAxkBAAIC-voice",
            Some(4),
        ),
        (
            "audio file",
            json!({"audio": {"file_id": "CQACAgQAAxkBAAID-audio", "file_unique_id": "AgADa", "duration": 201, "performer": "Quartet",
                "title": "Largo", "file_name": "largo.mp3", "mime_type": "audio/mpeg", "file_size": 3215872}, "caption": "for the dinner"}),
            "for the dinner",
            "audio",
            Some("audio/mpeg"),
            3215872,
            Some("largo.mp3"),
            "CQACAgQAAxkBAAID-audio",
            Some(201),
        ),
        (
            "document",
            json!({"document": {"file_id": "BQACAgQAAxkBAAIE-doc", "file_unique_id": "AgADd", "file_name": "Invoice 2024-03.pdf",
                "mime_type": "application/pdf", "file_size": 48213}, "caption": "please file this"}),
            "please file this",
            "document",
            Some("application/pdf"),
            48213,
            Some("Invoice 2024-03.pdf"),
            "BQACAgQAAxkBAAIE-doc",
            None,
        ),
        (
            "video note",
            json!({"video_note": {"file_id": "DQACAgQAAxkBAAIF-note", "file_unique_id": "AgADn", "length": 384, "duration": 9, "file_size": 622019}}),
            "",
            "video_note",
            Some("video/mp4"),
            622019,
            None,
            "DQACAgQAAxkBAAIF-note",
            Some(9),
        ),
    ];
    for (i, (what, fields, text, kind, mime, size, name, file_id, secs)) in cases.into_iter().enumerate() {
        let update = tg.fake.push(from_owner(100 + i as i64, fields));
        let event = stored(&tg, update).await;
        assert_eq!(event["body"], json!({"type": "message", "text": text}), "{what}");
        let want = json!([{"kind": kind, "mime": mime, "size": size, "name": name, "file_id": file_id, "url": null, "duration_secs": secs}]);
        assert_eq!(event["attachments"], want, "{what}");
    }
    // A sticker is no file to fetch: described in the text, no attachment.
    let sticker = json!({"sticker": {"file_id": "CAACAgIAAxkBAAIG", "file_unique_id": "AgADs", "type": "regular", "width": 512,
        "height": 512, "is_animated": false, "is_video": false, "emoji": "👍"}});
    let event = stored(&tg, tg.fake.push(from_owner(200, sticker))).await;
    assert_eq!(event["body"]["text"], "[sticker 👍]");
    assert_eq!(event.get("attachments"), None);
    tg.stop().await;
}

/// Reads a download to the end: (bytes, number of pieces).
async fn read(file: &Attachment, files: &dyn FileSource) -> Result<(Option<u64>, Vec<u8>, usize), ChannelError> {
    let mut download = files.open(file).await?;
    let (mut bytes, mut pieces) = (Vec::new(), 0);
    while let Some(piece) = download.body.next().await {
        bytes.extend_from_slice(&piece?);
        pieces += 1;
    }
    Ok((download.size, bytes, pieces))
}

#[tokio::test]
async fn the_file_source_streams_files_through_get_file_and_the_file_url() {
    let fake = FakeTelegram::start(TOKEN).await;
    let channel = adapter(&fake).await;
    let files = channel.files();
    let picture = png(640, 480);
    let voice = ogg(9_215);
    let big = FakeFile::generated("documents/file_12.bin", 15 * 1024 * 1024);
    // (attachment kind, file_id, the file the fake holds, its bytes when small)
    let cases = [
        (MediaKind::Image, "photo-1", FakeFile::bytes("photos/file_3.jpg", picture.clone()), Some(picture)),
        (MediaKind::Voice, "voice-1", FakeFile::bytes("voice/file_7.oga", voice.clone()), Some(voice)),
        (MediaKind::Document, "doc-1", FakeFile::bytes("documents/file_9.pdf", pdf("Q3")), Some(pdf("Q3"))),
        (MediaKind::Document, "big-1", big.clone(), None),
    ];
    for (kind, id, file, bytes) in cases {
        fake.add_file(id, file.clone());
        let (size, got, pieces) = read(&Attachment::new(kind, id), &*files).await.unwrap();
        assert_eq!(size, Some(file.len()), "{id}: the size getFile announced");
        assert_eq!(got.len() as u64, file.len(), "{id}");
        assert_eq!(sha256(&got), file.sha256(), "{id}: the bytes arrived intact");
        if let Some(bytes) = bytes {
            assert_eq!(got, bytes, "{id}");
        }
        if file.len() > 1024 * 1024 {
            assert!(pieces > 10, "{id}: streamed in pieces, not one buffer ({pieces})");
        }
        assert_eq!(fake.downloads().last(), Some(&file.path), "{id}: fetched from its file_path");
    }
    let asked: Vec<Value> = fake.calls("getFile").iter().map(|c| c.body["file_id"].clone()).collect();
    assert_eq!(asked, vec![json!("photo-1"), json!("voice-1"), json!("doc-1"), json!("big-1")]);

    // The body is read as it comes: the first piece is there long before the whole 15 MB.
    let mut download = files.open(&Attachment::new(MediaKind::Document, "big-1")).await.unwrap();
    let first = download.body.next().await.unwrap().unwrap();
    assert!(first.len() <= 1024 * 1024, "one piece, not the file: {} bytes", first.len());
    drop(download);
}

#[tokio::test]
async fn files_that_cannot_be_fetched_are_the_right_errors_without_the_token() {
    let fake = FakeTelegram::start(TOKEN).await;
    let channel = adapter(&fake).await;
    let files = channel.files();
    fake.add_file("too-big", FakeFile::generated("videos/file_1.mp4", 21 * 1024 * 1024));
    fake.add_file("at-limit", FakeFile::generated("videos/file_2.mp4", 20 * 1024 * 1024));
    fake.add_file("expired", FakeFile::expired("documents/file_3.pdf", 1000));
    let secret = TOKEN.split(':').nth(1).unwrap();
    let check = |what: &str, got: Result<(Option<u64>, Vec<u8>, usize), ChannelError>, want: &str, words: &str| {
        let e = got.err().unwrap_or_else(|| panic!("{what}: downloaded"));
        let text = e.to_string();
        let variant = format!("{e:?}");
        assert!(variant.starts_with(want), "{what}: {variant}");
        assert!(text.contains(words), "{what}: {text}");
        assert!(!text.contains(secret) && !variant.contains(secret), "{what}: the token leaked: {text}");
    };
    // (what, file_id, the error variant, words in its text)
    let cases = [
        ("an unknown file_id", "nobody-knows", "NotFound", "unknown or expired file_id"),
        ("a file over 20 MB", "too-big", "Rejected", "larger than the 20 MB Telegram lets bots download"),
        ("a file_path no longer served", "expired", "NotFound", "no longer serves this file"),
    ];
    for (what, id, want, words) in cases {
        check(what, read(&Attachment::new(MediaKind::Document, id), &*files).await, want, words);
    }
    // Exactly 20 MB is still allowed.
    let (_, got, _) = read(&Attachment::new(MediaKind::Document, "at-limit"), &*files).await.unwrap();
    assert_eq!(got.len(), 20 * 1024 * 1024);
    // The Bot API gone: temporary, and the text (which would name the URL) has no token.
    drop(fake);
    tokio::time::sleep(Duration::from_millis(100)).await;
    check("a server that is gone", read(&Attachment::new(MediaKind::Document, "x"), &*files).await, "Transient", "");
}

fn to(chat: i64) -> ConversationRef {
    ConversationRef::new("telegram", chat.to_string())
}

fn file_of(m: &Shown) -> &SentFile {
    m.file.as_ref().unwrap_or_else(|| panic!("message {} carries no file", m.id))
}

#[tokio::test]
async fn photos_and_documents_go_out_with_their_bytes_name_and_caption() {
    let fake = FakeTelegram::start(TOKEN).await;
    let channel = adapter(&fake).await;
    let dir = tempfile::tempdir().unwrap();
    let chart = png(320, 200);
    let report = pdf("Q3");
    let big: Vec<u8> = (0..12 * 1024 * 1024u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8).collect();
    // (what, chat, file, Markdown text, method, caption as the HTML sent, visible caption)
    let cases = [
        (
            "a PNG as a photo, the caption in HTML",
            out_file(dir.path(), "chart.png", "image/png", &chart, true),
            "**Sales** for <Q3> & more",
            "sendPhoto",
            "<b>Sales</b> for &lt;Q3&gt; &amp; more",
            "Sales for <Q3> & more",
        ),
        (
            "a PDF as a document",
            out_file(dir.path(), "report Q3.pdf", "application/pdf", &report, false),
            "The report, see `page 2`.",
            "sendDocument",
            "The report, see <code>page 2</code>.",
            "The report, see page 2.",
        ),
        (
            "a PNG not meant as a photo",
            out_file(dir.path(), "raw.png", "image/png", &chart, false),
            "",
            "sendDocument",
            "",
            "",
        ),
        (
            "12 MB, streamed from disk",
            out_file(dir.path(), "dump.bin", "application/octet-stream", &big, false),
            "the dump",
            "sendDocument",
            "the dump",
            "the dump",
        ),
    ];
    for (i, (what, file, text, method, html, visible)) in cases.into_iter().enumerate() {
        let chat = 500 + i as i64;
        let msg = Outbound { file: Some(file.clone()), reply_to: Some("41".into()), ..Outbound::text(to(chat), text) };
        let sent = channel.send(&msg).await.unwrap_or_else(|e| panic!("{what}: {e}"));
        let shown = fake.chat(chat);
        assert_eq!(shown.len(), 1, "{what}: one message");
        let m = &shown[0];
        assert_eq!(sent.id, m.id.to_string(), "{what}: the reference is the file's message");
        let f = file_of(m);
        assert_eq!((f.method.as_str(), f.name.as_str()), (method, file.name.as_str()), "{what}");
        let bytes = std::fs::read(&file.path).unwrap();
        assert_eq!((f.len, f.sha256.clone()), (bytes.len(), sha256(&bytes)), "{what}: the exact bytes");
        if bytes.len() <= KEEP_BYTES {
            assert_eq!(f.bytes.as_deref(), Some(&bytes[..]), "{what}");
        }
        assert_eq!((m.html.as_str(), m.text.as_str()), (html, visible), "{what}: the caption");
        let call = fake.calls(method).into_iter().rev().find(|c| c.body["chat_id"] == chat).unwrap().body;
        assert_eq!(call["parse_mode"], if html.is_empty() { json!(null) } else { json!("HTML") }, "{what}");
        assert_eq!(m.reply_to, Some(41), "{what}: it answers the message");
    }
    assert!(fake.calls("sendMessage").is_empty(), "short texts are captions, never messages of their own");
}

#[tokio::test]
async fn a_text_too_long_for_a_caption_goes_first_and_the_file_after_it() {
    let fake = FakeTelegram::start(TOKEN).await;
    let channel = adapter(&fake).await;
    let dir = tempfile::tempdir().unwrap();
    let text = format!("**Summary**\n\n{}", "All figures are in the attached chart. ".repeat(40));
    let chart = png(64, 64);
    let file = out_file(dir.path(), "chart.png", "image/png", &chart, true);
    let msg = Outbound {
        file: Some(file),
        reply_to: Some("7".into()),
        buttons: vec![butler::channel::Button::new("Again", "again:1", Default::default())],
        ..Outbound::text(to(OWNER), text)
    };
    let sent = channel.send(&msg).await.unwrap();
    let shown = fake.chat(OWNER);
    assert_eq!(shown.len(), 2, "{shown:#?}");
    let (words, photo) = (&shown[0], &shown[1]);
    assert!(words.file.is_none() && words.text.starts_with("Summary\n\nAll figures"), "the text first");
    assert_eq!(words.reply_to, Some(7), "the first message answers");
    assert!(words.buttons.is_empty());
    assert_eq!(file_of(photo).method, "sendPhoto");
    assert_eq!((photo.text.as_str(), photo.reply_to), ("", None), "then the file without a caption");
    assert_eq!(photo.buttons, vec![("Again".to_string(), "again:1".to_string())], "buttons on the file");
    assert_eq!(sent.id, photo.id.to_string());
    assert!(fake.violations(Duration::from_millis(15)).is_empty(), "{:?}", fake.violations(Duration::from_millis(15)));
}

#[tokio::test]
async fn refusals_and_429s_on_uploads() {
    let fake = FakeTelegram::start(TOKEN).await;
    let channel = adapter(&fake).await;
    let dir = tempfile::tempdir().unwrap();
    let wide = png(2000, 20);
    // Telegram refuses the picture as a photo: it goes as a document instead.
    fake.fail_next("sendPhoto", Failure::Error(400, "Bad Request: PHOTO_INVALID_DIMENSIONS".into()));
    let msg = Outbound {
        file: Some(out_file(dir.path(), "wide.png", "image/png", &wide, true)),
        ..Outbound::text(to(1), "wide")
    };
    channel.send(&msg).await.unwrap();
    let m = &fake.chat(1)[0];
    assert_eq!((file_of(m).method.as_str(), m.text.as_str()), ("sendDocument", "wide"));
    assert_eq!(file_of(m).sha256, sha256(&wide));

    // A 429 is waited out and the file still arrives once, whole.
    fake.fail_next("sendDocument", Failure::RetryAfter(1));
    let msg = Outbound {
        file: Some(out_file(dir.path(), "r.pdf", "application/pdf", &pdf("Q3"), false)),
        ..Outbound::text(to(2), "")
    };
    channel.send(&msg).await.unwrap();
    assert_eq!(fake.calls("sendDocument").len(), 3, "the first, the refused one and its retry");
    let shown = fake.chat(2);
    assert_eq!((shown.len(), file_of(&shown[0]).sha256.clone()), (1, sha256(&pdf("Q3"))));

    // A file that is gone before delivery: refused at once, nothing sent, not even the text.
    let mut gone = out_file(dir.path(), "gone.txt", "text/plain", b"x", false);
    std::fs::remove_file(&gone.path).unwrap();
    gone.size = 1;
    let msg = Outbound { file: Some(gone), ..Outbound::text(to(3), "long ".repeat(400)) };
    let e = channel.send(&msg).await.unwrap_err();
    assert!(matches!(e, ChannelError::Rejected(_)), "{e:?}");
    assert!(fake.chat(3).is_empty());
}
