//! `[media]` and `[media.transcription]`: how big a file people may send, how much of a document
//! the agent reads, how images are shrunk for the model, and the speech-to-text endpoint.
//!
//! Plain data (downloads, sniffing, decoding and the checks live in `crate::media`); this file
//! must never touch the disk or print the transcription API key.

use super::secret::Secret;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct MediaConfig {
    /// Largest file accepted from a person, in bytes (checked against the size the platform
    /// announces before downloading, and again while streaming). Default 20 MB.
    pub max_bytes: u64,
    /// Most characters of a document's text put in front of the agent (the rest is cut with a
    /// marker; the whole file stays in the workspace for `read_file`).
    pub max_chars: usize,
    /// Longest side, in pixels, of an image sent to a vision model (larger ones are shrunk).
    pub image_max_side: u32,
    /// Speech to text for voice notes and audio; off unless `base_url` is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transcription: Option<TranscriptionConfig>,
}

impl Default for MediaConfig {
    fn default() -> Self {
        Self { max_bytes: 20 * 1024 * 1024, max_chars: 20_000, image_max_side: 1568, transcription: None }
    }
}

/// An OpenAI-compatible `POST {base_url}/audio/transcriptions` (OpenAI, Groq, a local
/// whisper.cpp server).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct TranscriptionConfig {
    /// e.g. `https://api.openai.com/v1`, `https://api.groq.com/openai/v1`,
    /// `http://127.0.0.1:8080/v1`.
    pub base_url: String,
    pub model: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key: Option<Secret>,
    /// `none`: send what arrived (OGG/Opus, MP3, M4A, ...; OpenAI and Groq take them);
    /// `wav`: decode OGG/Opus to 16 kHz mono WAV first (whisper.cpp's server without ffmpeg).
    pub convert: AudioConvert,
    pub timeout_secs: u64,
    /// Language hint (ISO-639-1, e.g. `en`); empty lets the service detect it.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub language: String,
}

impl Default for TranscriptionConfig {
    fn default() -> Self {
        Self {
            base_url: String::new(),
            model: "whisper-1".into(),
            api_key: None,
            convert: AudioConvert::None,
            timeout_secs: 120,
            language: String::new(),
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AudioConvert {
    #[default]
    None,
    Wav,
}
