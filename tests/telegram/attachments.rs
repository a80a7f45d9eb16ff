//! Issue 19 end to end on Telegram: what a person sends from a phone reaches the agent, and
//! files go back, through the real app (teloxide against the fake Bot API, the fake LLM, a fake
//! speech-to-text server), with real payloads made here.
//! - A photo reaches a vision model as image content (OpenAI `image_url`, Anthropic `image`),
//!   shrunk to 1568 px; a model without vision gets a description and the reply says so.
//! - A voice note is transcribed (OGG/Opus as `voice.ogg`), the agent sees the transcript marked
//!   as a voice note, the person sees what was heard; without speech-to-text they are told how.
//! - Text documents are read; other files are named and sized, not read; a file over the cap is
//!   refused before it is downloaded, naming the cap.
//! - `send_file` sends a workspace file back as a document, once, also when the first upload
//!   fails and Butler restarts before the retry.

use crate::support::app::{config, TestApp};
use crate::support::fake_llm::{FakeLlm, Reply};
use crate::support::fake_stt::FakeStt;
use crate::support::fake_telegram::files::FakeFile;
use crate::support::fake_telegram::updates::{message, new_message, user};
use crate::support::fake_telegram::{Failure, FakeTelegram};
use crate::support::payloads::{png, sha256};
use crate::{settle, telegram, tls, OWNER, TOKEN};
use base64::Engine;
use butler::config::{Config, ProviderKind, TranscriptionConfig};
use serde_json::{json, Value};

/// Butler with Telegram and the fake LLM; the data dir outlives restarts.
struct Rig {
    app: Option<TestApp>,
    cfg: Config,
    fake: FakeTelegram,
    llm: FakeLlm,
    _dir: tempfile::TempDir,
}

impl Rig {
    async fn start(tweak: impl FnOnce(&mut Config, &FakeLlm)) -> Self {
        tls();
        let fake = FakeTelegram::start(TOKEN).await;
        let llm = FakeLlm::start().await;
        let (mut cfg, dir) = config(Some(&llm.openai_url()));
        cfg.channels.set("telegram", telegram(&fake).to_table());
        cfg.access.owners = vec![format!("telegram:{OWNER}").parse().unwrap()];
        tweak(&mut cfg, &llm);
        let app = TestApp::start(cfg.clone(), None).await;
        fake.wait_calls("getUpdates", 1, 10).await;
        Self { app: Some(app), cfg, fake, llm, _dir: dir }
    }

    async fn restart(&mut self) {
        self.app.take().unwrap().stop().await;
        self.app = Some(TestApp::start(self.cfg.clone(), None).await);
    }

    /// The owner sends `fields` (a photo, a voice note, a document, ...) as message `id`.
    fn send(&self, id: i64, fields: Value) {
        let mut m = message(OWNER, id, user(OWNER, "Owner"), "", json!([]));
        m.as_object_mut().unwrap().remove("text");
        m.as_object_mut().unwrap().remove("entities");
        for (k, v) in fields.as_object().unwrap() {
            m[k] = v.clone();
        }
        self.fake.push(new_message(m));
    }

    /// The texts of the DM once it shows `n` messages.
    async fn texts(&self, n: usize) -> Vec<String> {
        let shown = self.fake.wait_chat(OWNER, 20, &format!("{n} messages"), |m| m.len() >= n).await;
        shown.into_iter().map(|m| m.text).collect()
    }

    async fn stop(mut self) {
        self.app.take().unwrap().stop().await;
    }
}

fn photo(file_id: &str, w: u32, h: u32, size: usize, caption: &str) -> Value {
    json!({"photo": [{"file_id": file_id, "file_unique_id": format!("u-{file_id}"), "width": w, "height": h, "file_size": size}],
           "caption": caption})
}

fn document(file_id: &str, name: &str, mime: &str, size: u64, caption: &str) -> Value {
    json!({"document": {"file_id": file_id, "file_unique_id": format!("u-{file_id}"), "file_name": name,
           "mime_type": mime, "file_size": size}, "caption": caption})
}

/// The pixel size of an image the model got (base64, with or without the data: prefix).
fn dimensions(sent: &str) -> (u32, u32) {
    let b64 = sent.rsplit(',').next().unwrap();
    let bytes = base64::engine::general_purpose::STANDARD.decode(b64).unwrap();
    let img = image::load_from_memory(&bytes).unwrap();
    (img.width(), img.height())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn photos_reach_vision_models_as_images_and_a_blind_model_says_it_cannot_see() {
    // (provider, vision, what the model must get, what the person must see)
    let cases = [(ProviderKind::Openai, true), (ProviderKind::Anthropic, true), (ProviderKind::Openai, false)];
    for (provider, vision) in cases {
        let rig = Rig::start(|cfg, llm| {
            cfg.llm.provider = provider;
            if provider == ProviderKind::Anthropic {
                cfg.llm.base_url = Some(llm.anthropic_url());
            }
            cfg.llm.vision = vision;
        })
        .await;
        rig.llm.set_default(Reply::text("A gradient."));
        let bytes = png(3000, 2000);
        rig.fake.add_file("AgAC-photo", FakeFile::bytes("photos/file_1.jpg", bytes.clone()));
        rig.send(10, photo("AgAC-photo", 3000, 2000, bytes.len(), "what is this?"));
        let texts = rig.texts(1).await;
        let req = rig.llm.last_request().expect("the model was asked");
        let user_text = req.last_user_text();
        assert!(user_text.contains("what is this?"), "{provider:?}: {user_text}");
        let images = req.images();
        if vision {
            assert_eq!(images.len(), 1, "{provider:?}: one image");
            if provider == ProviderKind::Openai {
                assert!(images[0].starts_with("data:image/"), "an image_url data part");
            }
            let (w, h) = dimensions(&images[0]);
            assert!(w.max(h) <= 1568 && w.max(h) >= 1500, "{provider:?}: shrunk to the bound, got {w}×{h}");
            assert!((w as i64 * 2 - h as i64 * 3).abs() <= 3, "the aspect ratio is kept: {w}×{h}");
            assert_eq!(texts[0], "A gradient.", "no note for a vision model");
        } else {
            assert!(images.is_empty(), "no image for a model without vision");
            assert!(user_text.contains("3000×2000") && user_text.contains("cannot see images"), "{user_text}");
            assert!(texts[0].starts_with("I can't see images with this model"), "{texts:?}");
            assert!(texts[0].ends_with("A gradient."), "{texts:?}");
        }
        rig.stop().await;
    }
}

/// A real Ogg page header followed by Opus-shaped noise: the transport is what matters here
/// (decoding is the media component's own test).
fn ogg_voice(len: usize) -> Vec<u8> {
    let mut out = b"OggS\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00".to_vec();
    out.extend((0..len).map(|i| (i * 31 % 251) as u8));
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn voice_notes_are_transcribed_and_the_person_sees_what_was_heard() {
    let stt = FakeStt::start("Remind me to call mum at six").await;
    // (speech-to-text configured, what the person must see, what the model must see)
    let cases = [
        (true, "🎤 I heard: \"Remind me to call mum at six\"", "Remind me to call mum at six"),
        (false, "set [media.transcription] base_url", "not transcribed"),
    ];
    for (configured, shown, seen) in cases {
        let base = stt.base_url();
        let rig = Rig::start(|cfg, _| {
            if configured {
                cfg.media.transcription = Some(TranscriptionConfig { base_url: base, ..Default::default() });
            }
        })
        .await;
        rig.llm.set_default(Reply::text("Noted."));
        let voice = ogg_voice(9_000);
        rig.fake.add_file("AwAC-voice", FakeFile::bytes("voice/file_7.oga", voice.clone()));
        rig.send(
            11,
            json!({"voice": {"file_id": "AwAC-voice", "file_unique_id": "u-v", "duration": 3, "mime_type": "audio/ogg", "file_size": voice.len()}}),
        );
        let texts = rig.texts(1).await;
        assert!(texts[0].contains(shown) && texts[0].ends_with("Noted."), "configured={configured}: {texts:?}");
        let user_text = rig.llm.last_request().unwrap().last_user_text();
        assert!(user_text.contains("voice note") && user_text.contains(seen), "configured={configured}: {user_text}");
        rig.stop().await;
    }
    let got = stt.requests();
    assert_eq!(got.len(), 1, "transcribed once, and only when configured");
    assert_eq!(got[0].model, "whisper-1");
    assert!(got[0].file_name.ends_with(".ogg"), "Telegram's .oga goes as .ogg: {}", got[0].file_name);
    assert_eq!(got[0].file.as_ref(), ogg_voice(9_000).as_slice(), "the voice note as it arrived");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn documents_are_read_other_files_named_and_big_ones_refused_before_download() {
    let mut rig = Rig::start(|cfg, _| cfg.media.max_bytes = 1024 * 1024).await;
    rig.llm.set_default(Reply::text("Done."));
    let csv = "month,revenue\njan,1200\nfeb,1350\n";
    rig.fake.add_file("BQAC-csv", FakeFile::bytes("documents/file_2.csv", csv.as_bytes().to_vec()));
    let zip = [b"PK\x03\x04".as_slice(), &[7u8; 2000]].concat();
    rig.fake.add_file("BQAC-zip", FakeFile::bytes("documents/file_3.zip", zip.clone()));
    rig.fake.add_file("BQAC-big", FakeFile::generated("documents/file_4.bin", 5 * 1024 * 1024));
    // (the document, what the model must see, what it must not, what the person must see)
    let cases = [
        (document("BQAC-csv", "revenue.csv", "text/csv", csv.len() as u64, "totals?"), "feb,1350", "not read", ""),
        (document("BQAC-zip", "photos.zip", "application/zip", zip.len() as u64, ""), "application/zip", "PK", ""),
        (
            document("BQAC-big", "movie.bin", "application/octet-stream", 5 * 1024 * 1024, "look"),
            "movie.bin",
            "saved as",
            "the limit is 1.0 MB ([media] max_bytes)",
        ),
    ];
    for (i, (doc, seen, unseen, shown)) in cases.into_iter().enumerate() {
        rig.send(20 + i as i64, doc);
        let texts = rig.texts(i + 1).await;
        let user_text = rig.llm.last_request().unwrap().last_user_text();
        assert!(user_text.contains(seen), "case {i}: {user_text}");
        assert!(!user_text.contains(unseen), "case {i}: {user_text}");
        assert!(texts[i].contains(shown) && texts[i].ends_with("Done."), "case {i}: {texts:?}");
    }
    let downloads = rig.fake.downloads();
    assert!(!downloads.iter().any(|d| d.contains("file_4")), "the big file is never downloaded: {downloads:?}");
    assert_eq!(downloads.len(), 2, "{downloads:?}");
    // The same update again after a restart: nothing is fetched twice.
    rig.restart().await;
    settle().await;
    assert_eq!(rig.fake.downloads().len(), 2);
    rig.stop().await;
}

/// The owner's user id (their workspace is `<workspace_dir>/<id>`).
async fn owner_id(cfg: &Config) -> String {
    use sqlx::Connection;
    let mut db = sqlx::SqliteConnection::connect(cfg.database.url.expose()).await.unwrap();
    let row: (String,) =
        sqlx::query_as("SELECT user_id FROM identities WHERE channel = 'telegram' AND platform_user_id = $1")
            .bind(OWNER.to_string())
            .fetch_one(&mut db)
            .await
            .unwrap();
    row.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn send_file_sends_a_workspace_file_once_across_a_failed_upload_and_a_restart() {
    let mut rig = Rig::start(|_, _| {}).await;
    rig.llm.set_default(Reply::text("Hello."));
    rig.fake.push(crate::support::fake_telegram::updates::dm(OWNER, 1, "hi"));
    rig.texts(1).await;
    let workspace = std::path::Path::new(&rig.cfg.tools.workspace_dir).join(owner_id(&rig.cfg).await);
    let report: Vec<u8> = (0..300_000u32).map(|i| (i % 253) as u8).collect();
    std::fs::create_dir_all(workspace.join("out")).unwrap();
    std::fs::write(workspace.join("out/q3.pdf"), [b"%PDF-1.4\n".as_slice(), &report].concat()).unwrap();
    let want = sha256(&[b"%PDF-1.4\n".as_slice(), &report].concat());

    rig.llm.on(
        "send me the report",
        Reply::tool_call("send_file", json!({"path": "out/q3.pdf", "caption": "Q3 **report**"})),
    );
    rig.llm.on("send me the report", Reply::text("Here it is."));
    rig.fake.fail_next("sendDocument", Failure::Server(502));
    rig.fake.push(crate::support::fake_telegram::updates::dm(OWNER, 2, "send me the report"));
    rig.fake.wait_calls("sendDocument", 1, 20).await;
    // The first upload failed; Butler stops and starts before its retry.
    rig.restart().await;
    let shown = rig
        .fake
        .wait_chat(OWNER, 30, "the file", |m| {
            m.iter().any(|s| s.file.is_some()) && m.iter().any(|s| s.text == "Here it is.")
        })
        .await;
    settle().await;
    let files: Vec<_> = rig.fake.chat(OWNER).into_iter().filter(|m| m.file.is_some()).collect();
    assert_eq!(files.len(), 1, "sent once: {shown:?}");
    let sent = files[0].file.as_ref().unwrap();
    assert_eq!((sent.method.as_str(), sent.name.as_str()), ("sendDocument", "q3.pdf"));
    assert_eq!(sent.sha256, want, "the exact bytes");
    assert_eq!(files[0].text, "Q3 report", "the caption, rendered");
    assert!(files[0].html.contains("<b>report</b>"), "{}", files[0].html);
    rig.stop().await;
}
