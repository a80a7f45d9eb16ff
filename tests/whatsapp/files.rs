//! Files both ways and `butler doctor`: the file source asks the Graph API for a media id's URL
//! and streams it with the token; Butler's files are uploaded to the media endpoint and sent as
//! an image or a document with the text as caption; doctor checks the token and the phone
//! number id and says what to fix, never printing the token.

use crate::support::fake_whatsapp::{FakeWhatsApp, APP_SECRET, PHONE_NUMBER_ID, TOKEN, VERIFY_TOKEN};
use crate::support::payloads::{out_file, pdf, png};
use crate::whatsapp;
use butler::channel::{Attachment, Channel, ChannelError, ConversationRef, FileSource, MediaKind, Outbound};
use butler::channels::WhatsAppConfig;
use butler::config::Secret;
use butler_whatsapp::{Settings, WhatsAppChannel};
use futures::StreamExt;
use std::sync::Arc;

fn adapter(fake: &FakeWhatsApp, token: &str) -> Arc<WhatsAppChannel> {
    WhatsAppChannel::new(Settings {
        access_token: token.into(),
        phone_number_id: PHONE_NUMBER_ID.into(),
        app_secret: APP_SECRET.into(),
        verify_token: VERIFY_TOKEN.into(),
        api_url: fake.api_url(),
        template: None,
        gate: butler::channel::limit::Gate::local(),
    })
    .unwrap()
}

async fn read(file: &Attachment, files: &dyn FileSource) -> Result<(Option<u64>, Vec<u8>), ChannelError> {
    let mut download = files.open(file).await?;
    let mut bytes = Vec::new();
    while let Some(piece) = download.body.next().await {
        bytes.extend_from_slice(&piece?);
    }
    Ok((download.size, bytes))
}

#[tokio::test]
async fn the_file_source_fetches_the_media_url_with_the_token() {
    let fake = FakeWhatsApp::start().await;
    let files = adapter(&fake, TOKEN).files();
    let cases = [(MediaKind::Image, "image/png", png(64, 48)), (MediaKind::Document, "application/pdf", pdf("Q3"))];
    for (kind, mime, bytes) in cases {
        let id = fake.add_media(mime, &bytes);
        let (size, got) = read(&Attachment::new(kind, &id), &*files).await.unwrap();
        assert_eq!((size, got), (Some(bytes.len() as u64), bytes), "{mime}");
    }
    let unknown = read(&Attachment::new(MediaKind::Image, "404404"), &*files).await.err().unwrap();
    assert!(matches!(unknown, ChannelError::Rejected(_)), "{unknown}");
    let not_an_id = read(&Attachment::new(MediaKind::Image, "../etc/passwd"), &*files).await.err().unwrap();
    assert!(matches!(not_an_id, ChannelError::Rejected(_)), "{not_an_id}");
    let id = fake.add_media("image/png", &png(8, 8));
    let refused =
        read(&Attachment::new(MediaKind::Image, &id), &*adapter(&fake, "WRONG-tok").files()).await.err().unwrap();
    assert!(matches!(refused, ChannelError::Unauthorized(_)), "{refused}");
    assert!(!refused.to_string().contains("WRONG-tok"), "never the token: {refused}");
}

#[tokio::test]
async fn files_are_uploaded_then_sent_as_image_or_document() {
    let fake = FakeWhatsApp::start().await;
    let channel = adapter(&fake, TOKEN);
    let dir = tempfile::tempdir().unwrap();
    let chart = png(320, 200);
    let report = pdf("Q3");
    let to = ConversationRef::new("whatsapp", crate::OWNER);
    let cases = [
        (out_file(dir.path(), "chart.png", "image/png", &chart, true), "**Sales**", "image", "*Sales*", chart),
        (
            out_file(dir.path(), "report.pdf", "application/pdf", &report, false),
            "The report",
            "document",
            "The report",
            report,
        ),
    ];
    for (file, text, kind, caption, bytes) in cases {
        let msg = Outbound { file: Some(file.clone()), ..Outbound::text(to.clone(), text) };
        let sent = channel.send(&msg).await.unwrap();
        let m = fake.sent_to(crate::OWNER).into_iter().find(|m| m.id == sent.id).unwrap();
        assert_eq!((m.kind.as_str(), m.text()), (kind, caption.to_string()), "{}", file.name);
        let media_id = m.body[kind]["id"].as_str().unwrap();
        assert_eq!(fake.media(media_id), Some((file.mime.clone(), bytes)), "{}: the bytes uploaded", file.name);
        if kind == "document" {
            assert_eq!(m.body["document"]["filename"], "report.pdf");
        }
    }
}

async fn check(cfg: &WhatsAppConfig) -> Result<String, (String, String)> {
    crate::support::app::doctor_channel("whatsapp", cfg.to_table()).await
}

#[tokio::test]
async fn doctor_checks_the_token_and_the_phone_number_id() {
    let fake = FakeWhatsApp::start().await;
    let good = whatsapp(&fake);
    let ok = check(&good).await.expect("good credentials pass");
    assert!(ok.contains("+1 555-000-1111") && ok.contains("/channels/whatsapp/webhook"), "{ok}");

    let bad = WhatsAppConfig { access_token: Secret::new("WRONG-token-xyz"), ..good.clone() };
    let (problem, fix) = check(&bad).await.expect_err("a refused token fails");
    assert!(problem.contains("refused the access token") && fix.contains("access_token"), "{problem} / {fix}");
    assert!(!problem.contains("WRONG-token-xyz") && !fix.contains("WRONG-token-xyz"), "never prints the token");

    let other = WhatsAppConfig { phone_number_id: "999".into(), ..good.clone() };
    let (problem, fix) = check(&other).await.expect_err("an unknown phone number id fails");
    assert!(problem.contains("999") && fix.contains("phone_number_id"), "{problem} / {fix}");

    let port = crate::support::proc::free_port();
    let gone = WhatsAppConfig { api_url: format!("http://127.0.0.1:{port}/v23.0"), ..good };
    let (problem, fix) = check(&gone).await.expect_err("an unreachable API fails");
    assert!(problem.contains("cannot reach") && fix.contains(&gone.api_url), "{problem} / {fix}");
}

#[tokio::test]
async fn messages_to_one_person_are_paced_at_the_pair_rate() {
    let fake = FakeWhatsApp::start().await;
    let channel = adapter(&fake, TOKEN);
    let (alice, bob) = (ConversationRef::new("whatsapp", crate::ALICE), ConversationRef::new("whatsapp", crate::OWNER));
    let burst = butler_whatsapp::PAIR_RATE.burst as usize;
    for i in 0..burst {
        channel.send(&Outbound::text(alice.clone(), format!("part {i}"))).await.unwrap();
    }
    // The burst is spent: the next one to Alice waits (nothing is sent), Bob is not affected.
    match channel.send(&Outbound::text(alice.clone(), "one too many")).await {
        Err(ChannelError::RateLimited { retry_after }) => {
            assert!(retry_after <= butler_whatsapp::PAIR_RATE.every, "{retry_after:?}")
        }
        other => panic!("{other:?}"),
    }
    channel.send(&Outbound::text(bob, "hello Bob")).await.unwrap();
    assert_eq!(fake.sent_to(crate::ALICE).len(), burst);
    assert_eq!(fake.sent_to(crate::OWNER).len(), 1);
}

/// A real Ogg page header followed by Opus-shaped noise: the transport is what matters here
/// (decoding is the media component's own test).
fn ogg_voice(len: usize) -> Vec<u8> {
    let mut out = b"OggS\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00".to_vec();
    out.extend((0..len).map(|i| (i * 31 % 251) as u8));
    out
}

#[tokio::test]
async fn a_voice_note_is_fetched_transcribed_and_answered() {
    use crate::support::fake_llm::Reply;
    use crate::support::fake_stt::FakeStt;
    let stt = FakeStt::start("Remind me to call mum at six").await;
    let base = stt.base_url();
    let wa = crate::Wa::start_config(
        vec![],
        |_| {},
        |cfg| {
            cfg.media.transcription =
                Some(butler::config::TranscriptionConfig { base_url: base, ..Default::default() });
        },
    )
    .await;
    wa.llm.on("call mum", Reply::text("I will remind you at six."));
    let voice = ogg_voice(9_000);
    let media = wa.fake.add_media("audio/ogg; codecs=opus", &voice);
    let mut payload = crate::support::fake_whatsapp::text(crate::OWNER, "wamid.voice-1", "");
    let m = &mut payload["entry"][0]["changes"][0]["value"]["messages"][0];
    m.as_object_mut().unwrap().remove("text");
    m["type"] = serde_json::json!("audio");
    m["audio"] = serde_json::json!({"id": media, "mime_type": "audio/ogg; codecs=opus", "voice": true});
    assert_eq!(wa.deliver(&payload).await, 200);
    let sent =
        wa.fake.wait_sent(crate::OWNER, 20, "the answer", |s| s.iter().any(|m| m.text().contains("at six."))).await;
    let shown = sent.iter().map(|m| m.text()).collect::<Vec<_>>().join("\n");
    assert!(shown.contains("I heard: \"Remind me to call mum at six\""), "the person sees what was heard: {shown}");
    let asked = wa.llm.last_request().unwrap().last_user_text();
    assert!(asked.contains("voice note") && asked.contains("call mum at six"), "{asked}");
    let got = stt.requests();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].file.as_ref(), voice.as_slice(), "the voice note as WhatsApp served it");
    wa.stop().await;
}
