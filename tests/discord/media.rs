//! Issue 19 on Discord: a message's attachments (photos, voice messages, documents) become
//! attachments of the stored event; Butler fetches them through the file source the Discord
//! glue registers, from Discord's CDN only, streamed, with no token; and Butler's own files go
//! out through the real adapter as multipart messages (payload_json + files[0]) keeping the
//! nonce and the caption. Payloads are real: a PNG made with the `image` crate, a hand-made
//! PDF, OGG-headed voice bytes, a 9 MiB blob; compared by SHA-256.

use crate::support::fake_discord::payloads::UserMessage;
use crate::support::fake_discord::{FakeDiscord, TOKEN};
use crate::support::payloads::{blob, out_file, pdf, png, read, sha256 as sha};
use crate::{alice, Rig, DM, GENERAL};
use butler::channel::limit::Gate;
use butler::channel::{Attachment, Channel, ChannelError, FileSource, MediaKind, Outbound};
use butler_discord::{Discord, Settings};
use futures::StreamExt;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// Discord's file source as Butler's glue builds and registers it.
async fn file_source(rig: &Rig) -> Arc<dyn FileSource> {
    let gate = Gate::local();
    let cx = butler::channels::Context { ingress: rig.app.app.ingress.clone(), gate: &gate, links: None };
    let built = butler::channels::builtin()
        .build(&rig.app.config.channels, &cx, true)
        .await
        .expect("the Discord channel builds");
    built.files.get("discord").cloned().expect("the glue registers Discord's file source under \"discord\"")
}

/// The attachment an event would carry for the attachment object `a`.
fn attachment_of(a: &Value, kind: MediaKind) -> Attachment {
    Attachment {
        kind,
        mime: a["content_type"].as_str().map(str::to_string),
        size: a["size"].as_u64(),
        name: a["filename"].as_str().map(str::to_string),
        file_id: a["id"].as_str().unwrap().to_string(),
        url: a["url"].as_str().map(str::to_string),
        duration_secs: a["duration_secs"].as_f64().map(|d| d.ceil() as u32),
    }
}

#[tokio::test]
async fn attachments_are_stored_with_the_event_and_fetched_from_the_cdn() {
    let rig = Rig::start().await;
    let photo = png(64, 48);
    let voice = blob(b"OggS\x00\x02\x00\x00", 12_000);
    let report = pdf("Quarterly report");
    let d = &rig.discord;
    let photo_a = d.add_attachment(GENERAL, "IMG_0042.png", Some("image/png"), photo.clone());
    let voice_a = d.add_attachment(DM, "voice-message.ogg", Some("audio/ogg"), voice.clone());
    let pdf_a = d.add_attachment(DM, "report.pdf", Some("application/pdf"), report.clone());
    type Post<'a> = (Value, &'a str, Vec<(MediaKind, &'a [u8])>);
    let posts: Vec<Post> = vec![
        (
            rig.say(GENERAL, &alice(), "what is in this picture?", |m| {
                m.mentioning_bot().with_attachments(vec![photo_a.clone()])
            }),
            "what is in this picture?",
            vec![(MediaKind::Image, &photo)],
        ),
        (
            d.post(
                UserMessage::new(&d.snowflake(), DM, &alice(), "").with_attachments(vec![voice_a]).voice_message(2.4),
            ),
            "",
            vec![(MediaKind::Voice, &voice)],
        ),
        (
            d.post(UserMessage::new(&d.snowflake(), DM, &alice(), "read these").with_attachments(vec![pdf_a, photo_a])),
            "read these",
            vec![(MediaKind::Document, &report), (MediaKind::Image, &photo)],
        ),
    ];
    let source = file_source(&rig).await;
    for (posted, text, want) in posts {
        let id = format!("discord:message:{}", posted["id"].as_str().unwrap());
        let mut row = None;
        for _ in 0..500 {
            row = rig.app.app.store.inbox_get(&id).await.unwrap();
            if row.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let event = row.expect("the message is stored").event;
        assert_eq!(event.text(), Some(text), "the text stays the content");
        assert_eq!(event.attachments.len(), want.len());
        for ((a, (kind, bytes)), object) in
            event.attachments.iter().zip(want).zip(posted["attachments"].as_array().unwrap())
        {
            assert_eq!(*a, attachment_of(object, kind));
            let (got, _, size) = read(&*source, a).await.unwrap();
            assert_eq!(sha(&got), sha(bytes), "{:?}: the bytes intact", a.name);
            assert_eq!(size, Some(bytes.len() as u64));
        }
    }
    rig.stop().await;
}

#[tokio::test]
async fn downloads_stream_from_discords_cdn_only_and_carry_no_token() {
    let rig = Rig::start().await;
    let source = file_source(&rig).await;
    let d = &rig.discord;
    let files = [
        ("photo.png", Some("image/png"), png(300, 200)),
        ("report.pdf", Some("application/pdf"), pdf("Hello from a PDF")),
        ("video.mp4", Some("video/mp4"), blob(b"\x00\x00\x00\x18ftypmp42", 9 * 1024 * 1024)),
        ("no-type.bin", None, blob(b"\x7fELF", 5000)),
    ];
    for (name, ctype, bytes) in &files {
        let a = attachment_of(&d.add_attachment(DM, name, *ctype, bytes.clone()), MediaKind::Document);
        let (got, largest, size) = read(&*source, &a).await.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(sha(&got), sha(bytes), "{name}: the bytes intact");
        assert_eq!(size, Some(bytes.len() as u64), "{name}");
        if bytes.len() > 1024 * 1024 {
            assert!(largest <= 1024 * 1024, "{name}: streamed in pieces ({largest} bytes at once)");
        }
    }
    let served = d.cdn_requests().len();
    assert_eq!(served, files.len());
    assert!(d.cdn_requests().iter().all(|r| r.authorization.is_none() && r.host.starts_with("127.0.0.1:")));
    // Elsewhere: refused before any request.
    let object = d.add_attachment(DM, "x.png", Some("image/png"), png(4, 4));
    let url = object["url"].as_str().unwrap();
    let with_url = |u: Option<String>| Attachment { url: u, ..attachment_of(&object, MediaKind::Image) };
    let cases = [
        ("another host", Some(url.replace("127.0.0.1", "localhost")), "not on Discord's CDN"),
        ("another scheme", Some(url.replace("http://", "ftp://")), "not on Discord's CDN"),
        ("no URL", None, "has no URL"),
    ];
    for (what, u, want) in cases {
        match read(&*source, &with_url(u)).await {
            Err(ChannelError::Rejected(m)) => assert!(m.contains(want), "{what}: {m}"),
            other => panic!("{what}: {:?}", other.map(|(b, _, _)| b.len())),
        }
    }
    assert_eq!(d.cdn_requests().len(), served, "nothing was fetched from elsewhere");
    // A URL whose signature no longer holds (expired, or the file deleted): not found.
    let stale = with_url(Some(url.replace("hm=", "hm=0")));
    assert!(matches!(read(&*source, &stale).await, Err(ChannelError::NotFound(_))));
    rig.stop().await;
}

#[tokio::test]
async fn files_are_sent_as_multipart_messages_with_their_caption_and_nonce() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let fake = FakeDiscord::start().await;
    let settings = Settings {
        token: TOKEN.into(),
        api_url: fake.url(),
        public_key: None,
        gate: Default::default(),
        link_previews: false,
    };
    let discord = Discord::new(settings).unwrap();
    let source = discord.files();
    let dir = tempfile::tempdir().unwrap();
    let question = fake.snowflake();
    let photo = png(120, 80);
    let report = pdf("Butler's report");
    let big = blob(b"PK\x03\x04", 9 * 1024 * 1024);
    type Case<'a> = (&'a str, &'a str, &'a str, &'a str, &'a [u8], Option<&'a str>, &'a str);
    let cases: Vec<Case> = vec![
        (
            GENERAL,
            "Here is __the chart__",
            "chart.png",
            "image/png",
            &photo,
            Some(question.as_str()),
            "Here is **the chart**",
        ),
        (DM, "", "report.pdf", "application/pdf", &report, None, ""),
        (DM, "the archive", "backup.zip", "application/zip", &big, None, "the archive"),
    ];
    for (i, (channel, text, name, mime, bytes, reply_to, want_content)) in cases.into_iter().enumerate() {
        let mut msg = Outbound::text(format!("discord:{channel}").parse().unwrap(), text);
        msg.file = Some(out_file(dir.path(), name, mime, bytes, mime.starts_with("image/")));
        msg.key = Some(format!("reply:discord:message:1#{i}"));
        msg.reply_to = reply_to.map(str::to_string);
        let sent = discord.send(&msg).await.unwrap_or_else(|e| panic!("{name}: {e}"));
        let m = fake.message(&sent.id).expect("the message exists");
        assert_eq!(m.content, want_content, "{name}: the caption");
        assert_eq!(m.reply_to.as_deref(), reply_to, "{name}");
        assert!(m.nonce.is_some(), "{name}: the nonce is kept");
        assert_eq!(m.files.len(), 1, "{name}");
        let f = &m.files[0];
        assert_eq!((f.filename.as_str(), f.content_type.as_deref()), (name, Some(mime)), "{name}");
        assert_eq!(sha(&f.bytes), sha(bytes), "{name}: the exact bytes");
        // Sent again after a crash (same key): the nonce makes it the same message.
        let again = discord.send(&msg).await.unwrap();
        assert_eq!(again.id, sent.id, "{name}: not shown twice");
        // What Butler sent can be fetched back like any attachment.
        let a = attachment_of(&m.json["attachments"][0], MediaKind::Document);
        let mut d = source.open(&a).await.unwrap();
        let mut back = Vec::new();
        while let Some(piece) = d.body.next().await {
            back.extend_from_slice(&piece.unwrap());
        }
        assert_eq!(sha(&back), sha(bytes), "{name}: round trip");
    }
    assert_eq!(fake.bot_messages(GENERAL).len() + fake.bot_messages(DM).len(), 3);
    let creates = fake.calls().into_iter().filter(|c| c.method == "POST" && c.path.ends_with("/messages"));
    assert!(creates.clone().all(|c| c.body["enforce_nonce"] == true && c.status == 200));
    assert_eq!(creates.count(), 6);
    // Over Discord's upload limit: refused for good, with Discord's reason.
    let mut msg = Outbound::text(format!("discord:{DM}").parse().unwrap(), "too big");
    msg.file = Some(out_file(dir.path(), "huge.bin", "application/octet-stream", &blob(b"", 11 * 1024 * 1024), false));
    match discord.send(&msg).await {
        Err(ChannelError::Rejected(m)) => assert!(m.contains("Request entity too large"), "{m}"),
        other => panic!("{other:?}"),
    }
    // A file that is gone from disk: refused before any request.
    let calls = fake.calls().len();
    msg.file.as_mut().unwrap().path = dir.path().join("gone.bin").display().to_string();
    assert!(matches!(discord.send(&msg).await, Err(ChannelError::Rejected(_))));
    assert_eq!(fake.calls().len(), calls);
}
