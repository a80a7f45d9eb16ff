//! Voice notes: OGG/Opus decoded to 16 kHz mono WAV; the transcription request as a real
//! multipart body parsed by a local OpenAI-compatible fake (model, file name, MIME type, key);
//! errors that name the fix and never the key; no endpoint -> how to enable it.

use super::{attachment, media, ogg_opus_tone, platform, prepare, serve};
use crate::config::{AudioConvert, MediaConfig, Secret, TranscriptionConfig};
use crate::media::wav::{ogg_opus_to_wav, RATE};
use axum::extract::{Multipart, State};
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use butler_channel::MediaKind;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

const KEY: &str = "sk-test-0123456789";

#[tokio::test]
async fn an_ogg_opus_voice_note_becomes_16khz_mono_wav() {
    let dir = tempfile::tempdir().unwrap();
    let (src, dst) = (dir.path().join("voice.oga"), dir.path().join("voice.wav"));
    std::fs::write(&src, ogg_opus_tone(1.0)).unwrap();
    let samples = ogg_opus_to_wav(&src, &dst).await.unwrap();
    let wav = std::fs::read(&dst).unwrap();
    assert_eq!(&wav[0..4], b"RIFF");
    assert_eq!(&wav[8..16], b"WAVEfmt ");
    assert_eq!(u16::from_le_bytes([wav[20], wav[21]]), 1, "PCM");
    assert_eq!(u16::from_le_bytes([wav[22], wav[23]]), 1, "mono");
    assert_eq!(u32::from_le_bytes(wav[24..28].try_into().unwrap()), 16_000);
    assert_eq!(u16::from_le_bytes([wav[34], wav[35]]), 16, "16-bit");
    assert_eq!(&wav[36..40], b"data");
    let data = u32::from_le_bytes(wav[40..44].try_into().unwrap()) as usize;
    assert_eq!(data, wav.len() - 44);
    assert_eq!(data, samples as usize * 2);
    assert_eq!(u32::from_le_bytes(wav[4..8].try_into().unwrap()) as usize, wav.len() - 8);
    // About one second of audio (the encoder's delay trims a few ms off the end).
    assert!((RATE as u64 * 97 / 100..=RATE as u64 * 103 / 100).contains(&samples), "{samples} samples");
    // It is the tone, not silence: count zero crossings (440 Hz -> about 880 a second).
    let pcm: Vec<i16> = wav[44..].chunks_exact(2).map(|b| i16::from_le_bytes([b[0], b[1]])).collect();
    let loud = pcm.iter().map(|s| i32::from(*s).abs()).max().unwrap();
    assert!(loud > 8000, "peak {loud}");
    let crossings = pcm[1600..].windows(2).filter(|w| (w[0] < 0) != (w[1] < 0)).count();
    assert!((700..1000).contains(&crossings), "{crossings} zero crossings");
}

#[tokio::test]
async fn a_file_that_is_not_ogg_opus_is_an_error_and_leaves_no_wav() {
    let dir = tempfile::tempdir().unwrap();
    let (src, dst) = (dir.path().join("x.ogg"), dir.path().join("x.wav"));
    let mut cut = ogg_opus_tone(0.5);
    cut.truncate(40);
    for bytes in [b"OggS not really".to_vec(), cut, vec![0u8; 100]] {
        std::fs::write(&src, bytes).unwrap();
        let e = ogg_opus_to_wav(&src, &dst).await.unwrap_err();
        assert!(e.is_the_file(), "{e}");
        assert!(!dst.exists());
    }
}

/// What the fake speech-to-text service saw of one request.
#[derive(Clone, Debug, Default)]
struct Seen {
    auth: Option<String>,
    fields: Vec<Field>,
}

/// One multipart field: name, file name, content type, bytes.
#[derive(Clone, Debug)]
struct Field(String, Option<String>, Option<String>, Vec<u8>);

impl Seen {
    fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.0 == name)
    }

    fn text(&self, name: &str) -> Option<String> {
        self.field(name).map(|f| String::from_utf8(f.3.clone()).unwrap())
    }
}

type Log = Arc<Mutex<Vec<Seen>>>;

/// `POST /v1/audio/transcriptions` as OpenAI answers it: 401 without the right key (echoing
/// the key it got, as OpenAI does), 404 for an unknown model, else `{"text": ...}`.
async fn transcriptions(State(log): State<Log>, headers: HeaderMap, mut form: Multipart) -> (StatusCode, Json<Value>) {
    let mut seen =
        Seen { auth: headers.get("authorization").map(|v| v.to_str().unwrap().to_string()), ..Seen::default() };
    while let Some(field) = form.next_field().await.unwrap() {
        let name = field.name().unwrap_or_default().to_string();
        let file_name = field.file_name().map(str::to_string);
        let mime = field.content_type().map(str::to_string);
        let bytes = field.bytes().await.unwrap().to_vec();
        seen.fields.push(Field(name, file_name, mime, bytes));
    }
    log.lock().unwrap().push(seen.clone());
    if seen.auth.as_deref() != Some(&format!("Bearer {KEY}")) {
        let got = seen.auth.unwrap_or_default().replace("Bearer ", "");
        let message = format!("Incorrect API key provided: {got}. You can find your API key at the dashboard.");
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"error": {"message": message, "type": "invalid_request_error"}})),
        );
    }
    if seen.text("model").as_deref() != Some("whisper-1") {
        return (StatusCode::NOT_FOUND, Json(json!({"error": {"message": "model not found"}})));
    }
    (StatusCode::OK, Json(json!({"text": " Hello Butler, please remind me to buy milk tomorrow. "})))
}

async fn stt() -> (String, Log) {
    let log: Log = Arc::default();
    // Answers after 5 s, past a 1 s timeout.
    let slow = || async {
        tokio::time::sleep(std::time::Duration::from_secs(5)).await;
        "too late"
    };
    let router = axum::Router::new()
        .route("/v1/audio/transcriptions", axum::routing::post(transcriptions))
        .route("/slow/v1/audio/transcriptions", axum::routing::post(slow))
        .with_state(log.clone());
    (format!("http://{}/v1", serve(router).await), log)
}

fn with_stt(base_url: &str, key: &str, model: &str, convert: AudioConvert) -> MediaConfig {
    let t = TranscriptionConfig {
        base_url: format!("{base_url}/"),
        model: model.into(),
        api_key: Some(Secret::new(key)),
        convert,
        timeout_secs: 10,
        language: "en".into(),
    };
    MediaConfig { transcription: Some(t), ..MediaConfig::default() }
}

#[tokio::test]
async fn a_telegram_voice_note_is_sent_as_voice_ogg_and_its_transcript_used() {
    let (files, source) = platform().await;
    let voice = ogg_opus_tone(1.0);
    files.bytes("v", voice.clone());
    let (base, log) = stt().await;
    let ws = tempfile::tempdir().unwrap();
    let m = media(with_stt(&base, KEY, "whisper-1", AudioConvert::None), source);
    let mut a = attachment(MediaKind::Voice, "v", Some("file_12.oga"), Some("audio/ogg"));
    a.duration_secs = Some(7);
    let out = prepare(&m, ws.path(), "e1", &[a], true).await;
    assert_eq!(
        out.text,
        "[voice note \"file_12.oga\", 7 s, transcribed]:\n\"Hello Butler, please remind me to buy milk tomorrow.\""
    );
    assert_eq!(out.notes, vec!["🎤 I heard: \"Hello Butler, please remind me to buy milk tomorrow.\"".to_string()]);
    let seen = log.lock().unwrap()[0].clone();
    assert_eq!(seen.auth.as_deref(), Some(format!("Bearer {KEY}").as_str()));
    let file = seen.field("file").unwrap();
    assert_eq!(file.1.as_deref(), Some("voice.ogg"));
    assert_eq!(file.2.as_deref(), Some("audio/ogg"));
    assert_eq!(file.3, voice, "the file arrives whole");
    assert_eq!(seen.text("model").as_deref(), Some("whisper-1"));
    assert_eq!(seen.text("response_format").as_deref(), Some("json"));
    assert_eq!(seen.text("language").as_deref(), Some("en"));
}

#[tokio::test]
async fn with_convert_wav_the_service_gets_16khz_wav() {
    let (files, source) = platform().await;
    files.bytes("v", ogg_opus_tone(1.0));
    let (base, log) = stt().await;
    let ws = tempfile::tempdir().unwrap();
    let m = media(with_stt(&base, KEY, "whisper-1", AudioConvert::Wav), source);
    let out = prepare(&m, ws.path(), "e1", &[attachment(MediaKind::Voice, "v", None, None)], true).await;
    assert_eq!(
        out.text, "[voice note, 1 s, transcribed]:\n\"Hello Butler, please remind me to buy milk tomorrow.\"",
        "the length comes from the decoded audio"
    );
    let seen = log.lock().unwrap()[0].clone();
    let file = seen.field("file").unwrap();
    assert_eq!((file.1.as_deref(), file.2.as_deref()), (Some("voice.wav"), Some("audio/wav")));
    assert_eq!(&file.3[..4], b"RIFF");
    assert_eq!(u32::from_le_bytes(file.3[24..28].try_into().unwrap()), 16_000);
    let left: Vec<String> = super::saved_files(ws.path());
    assert!(left.iter().all(|n| !n.contains(".wav")), "the WAV is removed after sending: {left:?}");
}

#[tokio::test]
async fn endpoint_errors_name_the_fix_and_never_the_key() {
    let (files, source) = platform().await;
    files.bytes("v", ogg_opus_tone(0.2));
    let (base, _log) = stt().await;
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        drop(l);
        format!("http://127.0.0.1:{port}/v1")
    };
    let wrong_key = "sk-wrong-secret-value-42";
    let slow_url = base.replace("/v1", "/slow/v1");
    let mut slow = with_stt(&slow_url, KEY, "whisper-1", AudioConvert::None);
    slow.transcription.as_mut().unwrap().timeout_secs = 1;
    let cases = [
        (
            with_stt(&base, wrong_key, "whisper-1", AudioConvert::None),
            format!("I couldn't transcribe your voice note: the speech-to-text service at {base} refused the API key (HTTP 401): check [media.transcription] api_key."),
        ),
        (
            with_stt(&base, KEY, "whisper-9", AudioConvert::None),
            format!("I couldn't transcribe your voice note: the speech-to-text service at {base} has no /audio/transcriptions endpoint or no model \"whisper-9\" (HTTP 404): check [media.transcription] base_url and model."),
        ),
        (
            with_stt(&closed, KEY, "whisper-1", AudioConvert::None),
            format!("I couldn't transcribe your voice note: could not reach the speech-to-text service at {closed}: is the server running there? (check [media.transcription] base_url)."),
        ),
        (
            slow,
            format!("I couldn't transcribe your voice note: the speech-to-text service at {slow_url} did not answer within 1 s ([media.transcription] timeout_secs)."),
        ),
    ];
    for (cfg, note) in cases {
        let ws = tempfile::tempdir().unwrap();
        let m = media(cfg, source.clone());
        let out = prepare(&m, ws.path(), "e1", &[attachment(MediaKind::Voice, "v", None, None)], true).await;
        assert_eq!(out.notes, vec![note.clone()]);
        assert!(out.text.contains("; not transcribed: "), "{}", out.text);
        assert!(!out.text.contains(wrong_key) && !out.text.contains(KEY), "{}", out.text);
    }
    drop(files);
}

#[tokio::test]
async fn without_an_endpoint_the_person_is_told_how_to_enable_it() {
    let (files, source) = platform().await;
    files.bytes("v", ogg_opus_tone(0.2));
    files.bytes("a", b"ID3\x04\x00\x00\x00\x00\x00\x00 fake mp3".to_vec());
    let ws = tempfile::tempdir().unwrap();
    let m = media(MediaConfig::default(), source);
    let mut voice = attachment(MediaKind::Voice, "v", None, Some("audio/ogg"));
    voice.duration_secs = Some(3);
    let atts = [voice, attachment(MediaKind::Audio, "a", Some("song.mp3"), None)];
    let out = prepare(&m, ws.path(), "e1", &atts, true).await;
    let id = |i| crate::media::stable_id("e1", i);
    let blocks: Vec<&str> = out.text.split("\n\n").collect();
    assert!(
        blocks[0].starts_with("[voice note, 3 s, ")
            && blocks[0].ends_with(&format!(
                "saved as media/{}-voice-1.ogg; not transcribed: speech-to-text is not set up (the person is told how to turn it on)]",
                id(0)
            )),
        "{}",
        blocks[0]
    );
    assert_eq!(
        blocks[1],
        format!("[audio file \"song.mp3\", 19 bytes, saved as media/{}-song.mp3; not transcribed: speech-to-text is not set up (the person is told how to turn it on)]", id(1))
    );
    assert_eq!(
        out.notes,
        vec![
            "Voice notes need speech-to-text: set [media.transcription] base_url (OpenAI, Groq or a local whisper.cpp server) in the config.".to_string(),
            "Audio files need speech-to-text: set [media.transcription] base_url (OpenAI, Groq or a local whisper.cpp server) in the config.".to_string(),
        ]
    );
}
