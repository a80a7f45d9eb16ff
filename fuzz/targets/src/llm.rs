//! The model's answer streams: Server-Sent Events framed by `SseParser` and decoded by the
//! OpenAI and Anthropic decoders, as `decode_chunks` replays them.
//!
//! Invariants: where the bytes are cut never changes what is decoded; a stream that decodes
//! ends with exactly one `Finish`; a tool call's pieces name a call that has started, so the
//! assembled answer holds no more calls than were started.

use crate::harness::cuts;
use butler::llm::{decode_chunks, AnthropicDecoder, Assembled, Decode, OpenAiDecoder, StreamEvent};

fn decoded<D: Decode>(decoder: D, pieces: Vec<&[u8]>) -> Result<Vec<StreamEvent>, String> {
    decode_chunks(decoder, pieces).map_err(|e| e.to_string())
}

fn check<D: Decode>(data: &[u8], make: impl Fn() -> D) {
    let mut outcomes = cuts(data).into_iter().map(|pieces| decoded(make(), pieces));
    let whole = outcomes.next().expect("the whole input is one cut");
    for other in outcomes {
        assert_eq!(other, whole, "the outcome depends on where the stream was cut");
    }
    let Ok(events) = whole else { return };
    let finishes = events.iter().filter(|e| matches!(e, StreamEvent::Finish(_))).count();
    assert_eq!(finishes, 1, "a decoded stream has one Finish: {events:?}");
    assert!(matches!(events.last(), Some(StreamEvent::Finish(_))), "Finish comes last: {events:?}");
    let mut started = 0usize;
    for e in &events {
        match e {
            StreamEvent::ToolCallStart { index, .. } => {
                assert!(*index <= started, "call {index} starts after only {started}");
                started = started.max(index + 1);
            }
            StreamEvent::ToolCallArgs { index, .. } => assert!(*index < started, "arguments of unstarted call {index}"),
            _ => {}
        }
    }
    let mut answer = Assembled::default();
    events.iter().for_each(|e| answer.push(e));
    assert!(answer.tool_calls.len() <= started);
}

/// An OpenAI Chat Completions stream (`chat.completion.chunk` events, `[DONE]`).
pub fn sse_openai(data: &[u8]) {
    check(data, || OpenAiDecoder::new("fuzz-model"));
}

/// An Anthropic Messages stream (`message_start` … `message_stop`).
pub fn sse_anthropic(data: &[u8]) {
    check(data, || AnthropicDecoder::new("fuzz-model"));
}
