//! What one hook run is given and what it gives back: the [`Payload`] every hook of a run
//! receives, its [`Verdict`] (or a failure reason), and the helpers that read a decision or a
//! reason out of a hook's output, capped.
//!
//! Shared by the command and HTTP runners and by the module that combines their answers; it
//! must never start a hook, and never read more of a hook's output than [`OUTPUT_CAP`].

use crate::config::HookEvent;

/// What one hook said, when it did not fail.
#[derive(Debug)]
pub(super) enum Verdict {
    Ok,
    Block(String),
}

/// A failure, with the reason (already naming the hook).
pub(super) type HookResult = Result<Verdict, String>;

/// What stops hooks from running at all (shared by every hook it affects).
#[derive(Debug, thiserror::Error)]
pub(super) enum HookError {
    /// The one client of the HTTP hooks could not be built; every HTTP hook fails with this.
    #[error("cannot build the HTTP client: {0}")]
    HttpClient(#[source] reqwest::Error),
}

/// What every hook of one `run` receives.
pub(super) struct Payload {
    pub(super) event: HookEvent,
    pub(super) tool: Option<String>,
    pub(super) json: String,
}

/// How much of a hook's stdout, stderr or HTTP body is read for a decision or reason.
pub(super) const OUTPUT_CAP: usize = 8 * 1024;
/// Longest reason taken from a hook's output.
const REASON_CHARS: usize = 1000;

/// `Some(reason)` when `output` is a JSON object with `"decision": "block"` (the reason may be
/// absent); `None` for anything else, including output that is not JSON.
pub(super) fn explicit_block(output: &[u8]) -> Option<Option<String>> {
    let value: serde_json::Value = serde_json::from_slice(output).ok()?;
    if value.get("decision")?.as_str()?.trim() != "block" {
        return None;
    }
    Some(value.get("reason").and_then(|r| r.as_str()).map(str::trim).filter(|r| !r.is_empty()).map(cap_reason))
}

/// At most [`REASON_CHARS`] characters, with a marker when cut.
pub(super) fn cap_reason(text: &str) -> String {
    let mut out: String = text.chars().take(REASON_CHARS).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}

/// The first non-empty line of some output, cut, for a failure message ("" when none).
pub(super) fn first_line(output: &[u8]) -> String {
    let text = String::from_utf8_lossy(output);
    let line = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or_default();
    let mut out: String = line.chars().take(200).collect();
    if out.len() < line.len() {
        out.push('…');
    }
    out
}
