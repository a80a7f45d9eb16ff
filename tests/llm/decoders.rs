//! The provider decoders on hand-written streams: in-stream errors, truncation, odd servers.
//! Complements the recorded fixtures; must never need the network.

use butler::llm::{
    decode_chunks, AnthropicDecoder, Assembled, FinishReason, LlmError, OpenAiDecoder, StreamEvent, ToolCall,
};

fn openai(body: &str) -> Result<Vec<StreamEvent>, LlmError> {
    decode_chunks(OpenAiDecoder::new("gpt-x"), body.as_bytes().chunks(3))
}

fn anthropic(body: &str) -> Result<Vec<StreamEvent>, LlmError> {
    decode_chunks(AnthropicDecoder::new("claude-x"), body.as_bytes().chunks(3))
}

fn assembled(events: &[StreamEvent]) -> Assembled {
    let mut a = Assembled::default();
    events.iter().for_each(|e| a.push(e));
    a
}

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall { id: id.into(), name: name.into(), arguments: arguments.into() }
}

#[test]
fn in_stream_errors_map_to_distinct_variants() {
    type Check = fn(&LlmError) -> bool;
    type Decoded = Result<Vec<StreamEvent>, LlmError>;
    let table: Vec<(&str, Decoded, Check)> = vec![
        (
            "openai server_error",
            openai("data: {\"error\":{\"message\":\"boom\",\"type\":\"server_error\",\"code\":null}}\n\n"),
            |e| matches!(e, LlmError::Server { status: 500, .. }),
        ),
        (
            "openai context_length_exceeded",
            openai("data: {\"error\":{\"message\":\"too long\",\"type\":\"invalid_request_error\",\"code\":\"context_length_exceeded\"}}\n\n"),
            |e| matches!(e, LlmError::ContextTooLong(_)),
        ),
        (
            "openai error as event name",
            openai("event: error\ndata: {\"message\":\"rate limit exceeded\",\"type\":\"rate_limit_error\"}\n\n"),
            |e| matches!(e, LlmError::RateLimited { .. }),
        ),
        (
            "anthropic overloaded",
            anthropic("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"),
            |e| matches!(e, LlmError::Server { status: 529, .. }),
        ),
        (
            "anthropic api_error",
            anthropic("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"Internal\"}}\n\n"),
            |e| matches!(e, LlmError::Server { status: 500, .. }),
        ),
        (
            "anthropic prompt too long",
            anthropic("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"prompt is too long: 300000 tokens > 200000 maximum\"}}\n\n"),
            |e| matches!(e, LlmError::ContextTooLong(_)),
        ),
        (
            "anthropic auth",
            anthropic("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key\"}}\n\n"),
            |e| matches!(e, LlmError::Auth(_)),
        ),
        ("openai garbage", openai("data: {not json\n\n"), |e| matches!(e, LlmError::Protocol(_))),
        ("anthropic garbage", anthropic("event: ping\ndata: <html>\n\n"), |e| matches!(e, LlmError::Protocol(_))),
        (
            "openai ends before finish",
            openai("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n"),
            |e| matches!(e, LlmError::Protocol(_)),
        ),
        (
            "anthropic ends before message_stop",
            anthropic("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3}}}\n\n"),
            |e| matches!(e, LlmError::Protocol(_)),
        ),
        (
            "anthropic json delta for a text block",
            anthropic("data: {\"type\":\"content_block_delta\",\"index\":4,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\"}}\n\n"),
            |e| matches!(e, LlmError::Protocol(_)),
        ),
    ];
    for (name, result, check) in table {
        match result {
            Err(e) => assert!(check(&e), "{name}: wrong variant {e:?}"),
            Ok(evs) => panic!("{name}: expected an error, got {evs:?}"),
        }
    }
}

#[test]
fn openai_parallel_tool_calls_by_index_and_reused_index_with_new_id() {
    let body = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"function\":{\"name\":\"one\",\"arguments\":\"\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"b\",\"function\":{\"name\":\"two\",\"arguments\":\"{\\\"y\\\"\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{}\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":\":2}\"}}]}}]}\n\n",
        // A server that numbers every call 0 but gives each its own id (seen with local servers).
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"three\",\"arguments\":\"{\\\"z\\\":3}\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
        "data: [DONE]\n\n",
    );
    let got = assembled(&openai(body).unwrap());
    assert_eq!(
        got.tool_calls,
        vec![call("a", "one", "{}"), call("b", "two", "{\"y\":2}"), call("c", "three", "{\"z\":3}")]
    );
    assert_eq!(got.finish, Some(FinishReason::ToolCalls));
}

#[test]
fn openai_without_done_but_finished_is_complete_and_usage_excludes_cached() {
    let body = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":\"length\"}]}\n\n",
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":5,\"prompt_tokens_details\":{\"cached_tokens\":60}}}\n\n",
    );
    let events = openai(body).unwrap();
    assert_eq!(events.last(), Some(&StreamEvent::Finish(FinishReason::Length)));
    let got = assembled(&events);
    assert_eq!(got.text, "Hi");
    assert_eq!((got.usage.input_tokens, got.usage.cache_read_tokens, got.usage.output_tokens), (40, 60, 5));
}

#[test]
fn anthropic_tool_without_input_gets_empty_object_and_unknown_events_are_ignored() {
    let body = concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":9,\"cache_read_input_tokens\":50,\"cache_creation_input_tokens\":7,\"output_tokens\":1}}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hmm\"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"now\",\"input\":{}}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
        "event: some_future_event\ndata: {\"type\":\"some_future_event\"}\n\n",
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":12}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    );
    let got = assembled(&anthropic(body).unwrap());
    assert_eq!(got.text, "");
    assert_eq!(got.tool_calls, vec![call("toolu_1", "now", "{}")]);
    assert_eq!(got.finish, Some(FinishReason::ToolCalls));
    assert_eq!(
        (got.usage.input_tokens, got.usage.cache_read_tokens, got.usage.cache_write_tokens, got.usage.output_tokens),
        (9, 50, 7, 12)
    );
}
