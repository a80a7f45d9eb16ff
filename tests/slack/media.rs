//! Issue 19 on Slack: files people share become attachments of the stored event; Butler
//! fetches them through the file source the Slack glue registers (the bot token, Slack's file
//! host only, streamed, the missing `files:read` scope explained); and Butler's own files go out
//! through the real adapter with Slack's external upload flow, in the thread, with the caption.
//! Payloads are real: a PNG made with the `image` crate, a hand-made PDF, an OGG/Opus-headed
//! voice blob, a 15 MB blob; compared by SHA-256.

use crate::support::fake_slack::{payloads as p, FakeSlack, BOT_TOKEN};
use crate::support::payloads::{blob, out_file, pdf, png, read, sha256 as sha};
use crate::{start, Rig, Setup, ALICE};
use butler::channel::limit::Gate;
use butler::channel::{Attachment, Channel, ChannelError, FileSource, MediaKind, MessageRef, Outbound};
use butler_slack::{SlackChannel, SlackSettings};
use serde_json::{json, Value};
use std::sync::Arc;

/// Slack's file source as Butler's glue builds and registers it.
async fn file_source(rig: &Rig) -> Arc<dyn FileSource> {
    let gate = Gate::local();
    let cx = butler::channels::Context { ingress: rig.app.app.ingress.clone(), gate: &gate, links: None };
    let built =
        butler::channels::builtin().build(&rig.app.config.channels, &cx, true).await.expect("the Slack channel builds");
    built.files.get("slack").cloned().expect("the glue registers Slack's file source under \"slack\"")
}

#[tokio::test]
async fn shared_files_are_stored_as_attachments_of_the_event() {
    let rig = start(Setup::default()).await;
    let photo = png(64, 48);
    let voice = blob(b"OggS\x00\x02", 9_000);
    let report = pdf("Quarterly report");
    let photo_obj = rig.slack.add_file("F0PHOTO", "IMG_0042.png", "image/png", photo.clone(), json!({}));
    let voice_obj = rig.slack.add_file(
        "F0VOICE",
        "audio_message.ogg",
        "audio/ogg",
        voice.clone(),
        json!({"subtype": "slack_audio", "media_display_type": "audio", "duration_ms": 3500}),
    );
    let pdf_obj = rig.slack.add_file("F0PDF", "report.pdf", "application/pdf", report.clone(), json!({}));
    let thread = p::ts();
    type Case = (Value, &'static str, Vec<(Value, MediaKind, usize)>);
    let mut cases: Vec<Case> = Vec::new();
    // A photo with a mention in a channel thread.
    let mut e = p::mention(ALICE, "CPHOTOS", "what is in this picture?", &p::ts(), Some(&thread));
    e["files"] = json!([photo_obj]);
    cases.push((e, "what is in this picture?", vec![(photo_obj.clone(), MediaKind::Image, photo.len())]));
    // A voice clip alone in a DM (file_share, no text).
    let mut e = p::message(ALICE, "DALICE", "im", "", &p::ts(), None);
    e["subtype"] = json!("file_share");
    e["files"] = json!([voice_obj]);
    cases.push((e, "", vec![(voice_obj.clone(), MediaKind::Voice, voice.len())]));
    // A PDF and the photo in a DM thread.
    let mut e = p::message(ALICE, "DALICE", "im", "read these", &p::ts(), Some(&thread));
    e["files"] = json!([pdf_obj, photo_obj]);
    cases.push((
        e,
        "read these",
        vec![(pdf_obj.clone(), MediaKind::Document, report.len()), (photo_obj.clone(), MediaKind::Image, photo.len())],
    ));
    for (event, text, want) in cases {
        let id = p::event_id();
        assert_eq!(rig.send.event(&p::callback(&id, event), None).await.status, 200);
        let row = rig.app.app.store.inbox_get(&format!("slack:event:{id}")).await.unwrap().expect("stored");
        assert_eq!(row.event.text(), Some(text), "the text stays the message's");
        assert_eq!(row.event.attachments.len(), want.len());
        for (a, (object, kind, size)) in row.event.attachments.iter().zip(want) {
            let expect = Attachment {
                kind,
                mime: object["mimetype"].as_str().map(str::to_string),
                size: Some(size as u64),
                name: object["name"].as_str().map(str::to_string),
                file_id: object["id"].as_str().unwrap().to_string(),
                url: object["url_private_download"].as_str().map(str::to_string),
                duration_secs: object["duration_ms"].as_u64().map(|ms| ms.div_ceil(1000) as u32),
            };
            assert_eq!(*a, expect);
        }
    }
    rig.app.stop().await;
}

#[tokio::test]
async fn downloads_are_streamed_with_the_token_only_to_slack() {
    let rig = start(Setup::default()).await;
    let source = file_source(&rig).await;
    let big = blob(b"\x00\x00\x00\x18ftypmp42", 15 * 1024 * 1024);
    let files = [
        ("F1PNG", "photo.png", "image/png", png(300, 200)),
        ("F2PDF", "report.pdf", "application/pdf", pdf("Hello from a PDF")),
        ("F3BIG", "video.mp4", "video/mp4", big),
    ];
    let foreign = rig.slack.base().replace("127.0.0.1", "localhost");
    for (id, name, mime, bytes) in &files {
        let object = rig.slack.add_file(id, name, mime, bytes.clone(), json!({}));
        let url = object["url_private_download"].as_str().unwrap().to_string();
        // The event's URL on the fake's host (Slack's, as api_url says), on another host, or none.
        let cases = [
            ("the event's URL", Some(url.clone()), false),
            ("a URL on another host", Some(url.replace(&rig.slack.base(), &foreign)), true),
            ("no URL", None, true),
        ];
        for (what, url, via_info) in cases {
            let infos = rig.slack.calls_of("files.info").len();
            let mut a = Attachment::new(MediaKind::Document, *id);
            a.url = url;
            a.mime = Some(mime.to_string());
            let (got, largest, size) = read(&*source, &a).await.unwrap_or_else(|e| panic!("{name}, {what}: {e}"));
            assert_eq!(sha(&got), sha(bytes), "{name}, {what}: the bytes intact");
            assert_eq!(size, Some(bytes.len() as u64), "{name}, {what}: the size from Content-Length");
            if bytes.len() > 1024 * 1024 {
                assert!(
                    largest <= 1024 * 1024,
                    "{name}, {what}: streamed in pieces, not read whole ({largest} at once)"
                );
            }
            let asked = rig.slack.calls_of("files.info").len() - infos;
            assert_eq!(asked, usize::from(via_info), "{name}, {what}: files.info asked");
        }
    }
    let requests = rig.slack.file_requests();
    assert_eq!(requests.len(), 9);
    for r in &requests {
        assert!(r.host.starts_with("127.0.0.1:"), "a download went to {}", r.host);
        assert_eq!(r.token.as_deref(), Some(BOT_TOKEN));
        assert!(!r.login_page);
    }
    assert!(rig.slack.calls_of("files.info").iter().all(|c| c.token.as_deref() == Some(BOT_TOKEN)));
    rig.app.stop().await;
}

#[tokio::test]
async fn refusals_name_the_fix_and_never_the_token() {
    let rig = start(Setup::default()).await;
    let source = file_source(&rig).await;
    let object = rig.slack.add_file("F9PNG", "photo.png", "image/png", png(10, 10), json!({}));
    let mut ok = Attachment::new(MediaKind::Image, "F9PNG");
    ok.url = object["url_private_download"].as_str().map(str::to_string);
    let elsewhere = |url: &str| {
        let mut a = Attachment::new(MediaKind::Image, "F9PNG");
        a.url = Some(url.to_string());
        a
    };
    // A token without files:read: Slack's login page comes back instead of the file.
    rig.slack.without_files_read(true);
    match read(&*source, &ok).await {
        Err(ChannelError::Unauthorized(m)) => {
            assert!(m.contains("add the files:read scope"), "{m}");
            assert!(!m.contains(BOT_TOKEN));
        }
        other => panic!("expected Unauthorized, got {:?}", other.map(|(b, _, _)| b.len())),
    }
    assert!(rig.slack.file_requests().last().unwrap().login_page);
    // files.info says the same in its own words.
    match read(&*source, &elsewhere("https://evil.example/F9PNG")).await {
        Err(ChannelError::Unauthorized(m)) => assert!(m.contains("missing_scope") && m.contains("files:read"), "{m}"),
        other => panic!("expected Unauthorized, got {:?}", other.map(|(b, _, _)| b.len())),
    }
    rig.slack.without_files_read(false);
    // A file Slack no longer has.
    let mut gone = Attachment::new(MediaKind::Image, "F0GONE");
    gone.url = Some("https://evil.example/F0GONE".into());
    assert!(matches!(read(&*source, &gone).await, Err(ChannelError::NotFound(m)) if m == "file_not_found"));
    let hosts: Vec<String> = rig.slack.file_requests().iter().map(|r| r.host.clone()).collect();
    assert!(hosts.iter().all(|h| h.starts_with("127.0.0.1:")), "{hosts:?}");
    rig.app.stop().await;
}

/// The Slack adapter on its own, on `slack`.
async fn adapter(slack: &FakeSlack) -> SlackChannel {
    let _ = rustls::crypto::ring::default_provider().install_default();
    SlackChannel::connect(SlackSettings {
        bot_token: BOT_TOKEN.into(),
        signing_secret: None,
        app_token: None,
        api_url: slack.api_url(),
        remembered_threads: 100,
        working_reaction: None,
        gate: Gate::local(),
        link_previews: false,
    })
    .await
    .expect("auth.test")
}

#[tokio::test]
async fn files_are_sent_with_the_external_upload_flow() {
    let slack = FakeSlack::start().await;
    let channel = adapter(&slack).await;
    let dir = tempfile::tempdir().unwrap();
    let photo = png(120, 80);
    let report = pdf("Butler's report");
    let big = blob(b"PK\x03\x04", 15 * 1024 * 1024);
    type Case<'a> = (&'a str, &'a str, &'a str, &'a str, &'a [u8], &'a str, Option<&'a str>, Option<&'a str>);
    let cases: Vec<Case> = vec![
        (
            "slack:CGENERAL/1700000000.000100",
            "Here is **the chart** you asked for",
            "chart.png",
            "image/png",
            &photo,
            "CGENERAL",
            Some("1700000000.000100"),
            Some("Here is *the chart* you asked for"),
        ),
        ("slack:#general", "", "report.pdf", "application/pdf", &report, "CGENERAL", None, None),
        (
            "slack:DALICE/1700000000.000200",
            "the archive <3",
            "backup.zip",
            "application/zip",
            &big,
            "DALICE",
            Some("1700000000.000200"),
            Some("the archive &lt;3"),
        ),
    ];
    for (conv, text, name, mime, bytes, want_channel, want_thread, want_comment) in cases {
        let mut msg = Outbound::text(conv.parse().unwrap(), text);
        msg.file = Some(out_file(dir.path(), name, mime, bytes, mime.starts_with("image/")));
        let sent = channel.send(&msg).await.unwrap_or_else(|e| panic!("{name}: {e}"));
        let shared = slack.shared_files().pop().expect("a completed upload");
        assert_eq!(shared.channel, want_channel, "{name}");
        assert_eq!(shared.thread_ts.as_deref(), want_thread, "{name}: in the conversation's thread");
        assert_eq!(shared.initial_comment.as_deref(), want_comment, "{name}: the caption as mrkdwn");
        assert_eq!(shared.files.len(), 1);
        let (id, title, upload) = &shared.files[0];
        assert_eq!(sent.id, *id, "{name}: the message id is the file's");
        assert_eq!((title.as_deref(), upload.filename.as_str()), (Some(name), name));
        assert_eq!(upload.length, bytes.len());
        assert_eq!(sha(upload.bytes.as_ref().unwrap()), sha(bytes), "{name}: the exact bytes");
        assert_eq!(upload.content_type.as_deref(), Some(mime));
        assert_eq!(upload.token, None, "{name}: the upload URL gets no token");
    }
    assert!(slack.calls_of("files.getUploadURLExternal").iter().all(|c| c.token.as_deref() == Some(BOT_TOKEN)));
    // A file message cannot be edited.
    let id = slack.shared_files()[0].files[0].0.clone();
    let target = MessageRef { conversation: "slack:CGENERAL".parse().unwrap(), id };
    let edit = channel.edit(&target, &Outbound::text(target.conversation.clone(), "changed")).await;
    assert!(matches!(edit, Err(ChannelError::Rejected(_))), "{edit:?}");
    assert!(slack.calls_of("chat.update").is_empty());
}

#[tokio::test]
async fn a_rate_limited_upload_holds_its_method_and_uploads_nothing() {
    let slack = FakeSlack::start().await;
    let channel = adapter(&slack).await;
    let dir = tempfile::tempdir().unwrap();
    slack.rate_limit_next("files.getUploadURLExternal", 1, 30);
    let mut msg = Outbound::text("slack:CGENERAL/1700000000.000100".parse().unwrap(), "a photo");
    msg.file = Some(out_file(dir.path(), "a.png", "image/png", &png(8, 8), true));
    for attempt in 0..2 {
        match channel.send(&msg).await {
            Err(ChannelError::RateLimited { retry_after }) => {
                assert!(retry_after.as_secs() > 25, "attempt {attempt}: {retry_after:?}")
            }
            other => panic!("attempt {attempt}: {other:?}"),
        }
    }
    assert_eq!(slack.calls_of("files.getUploadURLExternal").len(), 1, "the second attempt is held locally");
    assert!(slack.uploads().is_empty() && slack.shared_files().is_empty());
    // A missing file is refused for good (retrying cannot help), before any call.
    msg.file.as_mut().unwrap().path = dir.path().join("gone.png").display().to_string();
    assert!(matches!(channel.send(&msg).await, Err(ChannelError::Rejected(_))));
    assert_eq!(slack.calls_of("files.getUploadURLExternal").len(), 1);
}
