//! The rules of `[media]` and `[media.transcription]`: each problem names its key and what to
//! do. Reads the config only; must never touch the disk or the network.

use crate::config::{Config, Problems};

/// Smallest cap that still takes a photo from a phone.
const MIN_BYTES: u64 = 64 * 1024;

pub fn check_config(cfg: &Config, p: &mut Problems) {
    let m = &cfg.media;
    if m.max_bytes < MIN_BYTES {
        p.add("media.max_bytes", format!("must be at least {MIN_BYTES} bytes (the default is 20971520, 20 MB)"));
    }
    if m.max_chars < 100 {
        p.add("media.max_chars", "must be at least 100 characters (the default is 20000)");
    }
    if !(64..=8192).contains(&m.image_max_side) {
        p.add("media.image_max_side", "must be between 64 and 8192 pixels (the default is 1568)");
    }
    if let Some(t) = &m.transcription {
        let url = t.base_url.trim();
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            p.add(
                "media.transcription.base_url",
                "must be an http(s) URL of an OpenAI-compatible API, e.g. https://api.openai.com/v1 or http://127.0.0.1:8080/v1",
            );
        }
        if t.model.trim().is_empty() {
            p.add("media.transcription.model", "must name a speech-to-text model, e.g. whisper-1");
        }
        if t.timeout_secs == 0 {
            p.add("media.transcription.timeout_secs", "must be at least 1");
        }
    }
}
