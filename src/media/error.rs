//! What can go wrong with one attachment, in words the person and the agent can act on: each
//! variant's text names the file's problem or the setting to change.
//!
//! Texts here are shown to people and models: they must never carry an API key, a token or a
//! platform file URL (those can embed the bot token).

use super::words::size;
use butler_channel::ChannelError;

#[derive(Debug, thiserror::Error)]
pub enum MediaError {
    /// Over `[media] max_bytes`: refused before the download (`size` known) or stopped while
    /// streaming (`size` is `None`: more than `max`). Nothing is kept. `what` names the file
    /// (`the file "talk.mp4"`, `the voice note`).
    #[error("{}", too_large(what, *size, *max))]
    TooLarge { what: String, size: Option<u64>, max: u64 },
    /// The channel the event came from has no file source (it cannot fetch files).
    #[error("files sent on {channel} cannot be fetched by Butler")]
    NoSource { channel: String },
    /// The platform would not hand the file over (gone, refused, network trouble).
    #[error("{what} could not be downloaded: {source}")]
    Download {
        what: String,
        #[source]
        source: ChannelError,
    },
    /// The download stopped sending bytes for too long.
    #[error("the download of {what} stalled (nothing for {secs} s)")]
    Stalled { what: String, secs: u64 },
    /// The workspace disk refused (full, permissions).
    #[error("{what} could not be saved: {source}")]
    Disk {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// The bytes are not a readable file of the type they look like (a cut or broken image,
    /// a malformed PDF, an OGG that is not Opus).
    #[error("{reason}")]
    Unreadable { reason: String },
    /// Reading the file took longer than allowed.
    #[error("reading it took longer than {secs} s")]
    Slow { secs: u64 },
    /// The speech-to-text service refused the credentials (HTTP 401/403).
    #[error("the speech-to-text service at {base_url} refused the API key (HTTP {status}): check [media.transcription] api_key")]
    SttUnauthorized { base_url: String, status: u16 },
    /// No such endpoint or model (HTTP 404).
    #[error("the speech-to-text service at {base_url} has no /audio/transcriptions endpoint or no model \"{model}\" (HTTP 404): check [media.transcription] base_url and model")]
    SttNotFound { base_url: String, model: String },
    /// Nothing answers at the base URL.
    #[error("could not reach the speech-to-text service at {base_url}: is the server running there? (check [media.transcription] base_url)")]
    SttUnreachable { base_url: String },
    /// No answer within `[media.transcription] timeout_secs`.
    #[error(
        "the speech-to-text service at {base_url} did not answer within {secs} s ([media.transcription] timeout_secs)"
    )]
    SttTimeout { base_url: String, secs: u64 },
    /// Any other refusal; `detail` is the service's own message, shortened.
    #[error("the speech-to-text service at {base_url} answered HTTP {status}: {detail}")]
    SttFailed { base_url: String, status: u16, detail: String },
    /// A 2xx answer without a transcript in it.
    #[error(
        "the speech-to-text service at {base_url} answered without a transcript ({detail}); is it OpenAI-compatible?"
    )]
    SttBadAnswer { base_url: String, detail: String },
}

impl MediaError {
    /// Whether the file itself is the problem (too large, unreadable), as opposed to a setting,
    /// the platform or the disk.
    pub fn is_the_file(&self) -> bool {
        matches!(self, Self::TooLarge { .. } | Self::Unreadable { .. } | Self::Slow { .. })
    }
}

fn too_large(what: &str, got: Option<u64>, max: u64) -> String {
    match got {
        Some(n) => format!("{what} is {}; the limit is {} ([media] max_bytes)", size(n), size(max)),
        None => format!("{what} is larger than {}, the limit ([media] max_bytes); I stopped downloading it", size(max)),
    }
}
