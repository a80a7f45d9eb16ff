//! Replays every recorded stream in tests/fixtures/llm/*.sse through the real SSE parser and
//! provider decoders, in awkward chunk sizes, and checks the result against
//! expected_assembled.json. Must never edit or regenerate the fixtures.

use butler::llm::{
    decode_chunks, AnthropicDecoder, Assembled, FinishReason, OpenAiDecoder, SseEvent, SseParser, StreamEvent, ToolCall,
};
use serde_json::Value;
use std::path::{Path, PathBuf};

const CHUNK_SIZES: [usize; 4] = [1, 7, 64, usize::MAX];

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/llm")
}

fn expected() -> serde_json::Map<String, Value> {
    let text = std::fs::read_to_string(dir().join("expected_assembled.json")).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    v.as_object().unwrap().clone()
}

fn sse_files() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".sse"))
        .collect();
    names.sort();
    names
}

fn chunks(bytes: &[u8], size: usize) -> Vec<&[u8]> {
    bytes.chunks(size.min(bytes.len().max(1))).collect()
}

fn decode(name: &str, bytes: &[u8], size: usize) -> Vec<StreamEvent> {
    let result = if name.starts_with("openai_") {
        decode_chunks(OpenAiDecoder::new("m"), chunks(bytes, size))
    } else if name.starts_with("anthropic_") {
        decode_chunks(AnthropicDecoder::new("m"), chunks(bytes, size))
    } else {
        panic!("{name}: unknown provider prefix");
    };
    result.unwrap_or_else(|e| panic!("{name} in {size}-byte chunks: {e}"))
}

fn sse_events(bytes: &[u8], size: usize) -> Vec<SseEvent> {
    let mut parser = SseParser::new();
    let mut out = Vec::new();
    for c in chunks(bytes, size) {
        parser.feed(c, &mut out);
    }
    parser.finish(&mut out);
    out
}

fn assembled(events: &[StreamEvent]) -> Assembled {
    let mut a = Assembled::default();
    for ev in events {
        a.push(ev);
    }
    a
}

fn finish(provider_reason: &str) -> FinishReason {
    match provider_reason {
        "stop" | "end_turn" => FinishReason::Stop,
        "tool_calls" | "tool_use" => FinishReason::ToolCalls,
        "length" | "max_tokens" => FinishReason::Length,
        other => FinishReason::Other(other.into()),
    }
}

fn s(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or_default().to_string()
}

fn n(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// What the fixture's expectation says the assembled response is.
fn expectation(name: &str, exp: &Value) -> Assembled {
    let mut want = Assembled::default();
    if name.starts_with("openai_") {
        want.text = s(exp, "content");
        want.finish = Some(finish(&s(exp, "finish_reason")));
        for c in exp["tool_calls"].as_array().unwrap() {
            want.tool_calls.push(ToolCall { id: s(c, "id"), name: s(c, "name"), arguments: s(c, "arguments") });
        }
        let u = &exp["usage_final_chunk (choices:[])"];
        want.usage.input_tokens = n(u, "prompt_tokens");
        want.usage.output_tokens = n(u, "completion_tokens");
    } else {
        for block in exp["content"].as_array().unwrap() {
            match block["type"].as_str().unwrap() {
                "text" => want.text.push_str(&s(block, "text")),
                "tool_use" => want.tool_calls.push(ToolCall {
                    id: s(block, "id"),
                    name: s(block, "name"),
                    arguments: s(block, "input_json_concatenated"),
                }),
                other => panic!("{name}: unexpected block type {other}"),
            }
        }
        want.finish = Some(finish(&s(exp, "stop_reason")));
        let start = &exp["usage_message_start"];
        want.usage.input_tokens = n(start, "input_tokens");
        want.usage.cache_read_tokens = n(start, "cache_read_input_tokens");
        want.usage.cache_write_tokens = n(start, "cache_creation_input_tokens");
        want.usage.output_tokens = n(&exp["usage_message_delta"], "output_tokens");
    }
    want
}

#[test]
fn every_fixture_has_an_expectation_and_back() {
    let exp = expected();
    let files = sse_files();
    assert!(files.len() >= 4, "fixtures missing: {files:?}");
    for f in &files {
        assert!(exp.contains_key(f), "{f} has no entry in expected_assembled.json");
    }
    for k in exp.keys().filter(|k| !k.starts_with('_')) {
        assert!(files.contains(k), "expected_assembled.json names {k}, which is not a fixture");
    }
}

#[test]
fn fixtures_assemble_exactly_as_expected_in_any_chunking() {
    let exp = expected();
    for name in sse_files() {
        let bytes = std::fs::read(dir().join(&name)).unwrap();
        let want = expectation(&name, &exp[&name]);
        for size in CHUNK_SIZES {
            let events = decode(&name, &bytes, size);
            let got = assembled(&events);
            assert_eq!(got, want, "{name} in {size}-byte chunks");
            assert_eq!(events.last(), want.finish.clone().map(StreamEvent::Finish).as_ref(), "{name}: Finish is last");
            for call in &got.tool_calls {
                serde_json::from_str::<Value>(&call.arguments)
                    .unwrap_or_else(|e| panic!("{name}: arguments are not JSON ({e})"));
            }
        }
    }
}

#[test]
fn fixture_tool_input_matches_the_parsed_object() {
    let exp = expected();
    for name in sse_files().into_iter().filter(|n| n.starts_with("anthropic_")) {
        let bytes = std::fs::read(dir().join(&name)).unwrap();
        let got = assembled(&decode(&name, &bytes, 5));
        let tool_blocks: Vec<&Value> =
            exp[&name]["content"].as_array().unwrap().iter().filter(|b| b["type"] == "tool_use").collect();
        for (call, block) in got.tool_calls.iter().zip(&tool_blocks) {
            let parsed: Value = serde_json::from_str(&call.arguments).unwrap();
            assert_eq!(parsed, block["input"], "{name}");
        }
        assert_eq!(got.tool_calls.len(), tool_blocks.len(), "{name}");
    }
}

#[test]
fn fixture_sse_framing_counts_and_sequences() {
    let exp = expected();
    for name in sse_files() {
        let bytes = std::fs::read(dir().join(&name)).unwrap();
        let e = &exp[&name];
        for size in CHUNK_SIZES {
            let frames = sse_events(&bytes, size);
            if let Some(count) = e.get("data_chunks_before_DONE").and_then(Value::as_u64) {
                let before_done = frames.iter().take_while(|f| f.data != "[DONE]").count();
                assert_eq!(before_done as u64, count, "{name} in {size}-byte chunks");
            }
            if e.get("ends_with_DONE").and_then(Value::as_bool) == Some(true) {
                assert_eq!(frames.last().map(|f| f.data.as_str()), Some("[DONE]"), "{name}");
            }
            if let Some(seq) = e.get("event_sequence").and_then(Value::as_array) {
                let names: Vec<&str> = frames.iter().map(|f| f.event.as_str()).collect();
                let want: Vec<&str> = seq.iter().map(|v| v.as_str().unwrap()).collect();
                assert_eq!(names, want, "{name} in {size}-byte chunks");
            }
        }
    }
}
