//! The seam between SSE framing and each provider's JSON: a [`Decode`] turns SSE events into
//! provider-neutral [`StreamEvent`]s, and [`decode_chunks`] replays recorded bytes through
//! the real parser and decoder (used by tests and tools, never for live traffic).
//!
//! Decoders are pure: they never do I/O, never sleep and never look at HTTP status codes.
//! Every decoder keeps the order "content..., Usage..., Finish" with `Finish` last.

use super::sse::{SseEvent, SseParser};
use super::{LlmError, StreamEvent};
use std::collections::VecDeque;

/// Whether the provider said the response is complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    More,
    Done,
}

/// Turns one provider's SSE events into [`StreamEvent`]s.
pub trait Decode: Send + 'static {
    /// Handles one SSE event, pushing zero or more events to `out`. Returns [`Flow::Done`]
    /// once the provider marked the end of the response (the final `Finish` is pushed then).
    fn event(&mut self, ev: &SseEvent, out: &mut VecDeque<StreamEvent>) -> Result<Flow, LlmError>;

    /// The body ended without an end marker: pushes what is still held back, or fails with
    /// [`LlmError::Protocol`] when the response is incomplete.
    fn end(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), LlmError>;
}

/// Replays a recorded body, split into the given chunks, through [`SseParser`] and `decoder`.
/// Returns the events up to the end marker, or the first error.
pub fn decode_chunks<'a, D: Decode>(
    mut decoder: D,
    chunks: impl IntoIterator<Item = &'a [u8]>,
) -> Result<Vec<StreamEvent>, LlmError> {
    let mut parser = SseParser::new();
    let mut frames = Vec::new();
    let mut out = VecDeque::new();
    let mut chunks = chunks.into_iter();
    loop {
        frames.clear();
        let last = match chunks.next() {
            Some(chunk) => {
                parser.feed(chunk, &mut frames);
                false
            }
            None => {
                parser.finish(&mut frames);
                true
            }
        };
        for frame in &frames {
            if decoder.event(frame, &mut out)? == Flow::Done {
                return Ok(out.into());
            }
        }
        if last {
            decoder.end(&mut out)?;
            return Ok(out.into());
        }
    }
}

/// Maps token counts that a decoder reads as JSON numbers.
pub(crate) fn count(v: &serde_json::Value, key: &str) -> u64 {
    v.get(key).and_then(serde_json::Value::as_u64).unwrap_or(0)
}

/// A JSON parse failure inside the stream, without echoing the whole payload.
pub(crate) fn bad_json(what: &str, err: &serde_json::Error, data: &str) -> LlmError {
    let head: String = data.chars().take(80).collect();
    LlmError::Protocol(format!("{what} is not valid JSON ({err}): {head}"))
}
