//! Both providers against the fake LLM over real HTTP: streaming text and tool calls, usage,
//! the exact request each protocol sends, base URLs, keys. Must never reach a real provider.

use crate::common::{self, ask, complete, config, events, BOTH, KEY};
use crate::support::fake_llm::{FakeLlm, Protocol, Reply};
use butler::config::ProviderKind;
use butler::llm::{ChatMessage, ChatRequest, FinishReason, Image, LlmError, StreamEvent, ToolCall, ToolDef};
use serde_json::{json, Value};
use std::time::Duration;

#[tokio::test]
async fn text_streams_in_pieces_with_usage_for_both_protocols() {
    let llm = FakeLlm::start().await;
    for kind in BOTH {
        llm.push(Reply::text("Hello there, dear world!").usage(21, 4));
        let p = common::provider(&llm, kind);
        let (evs, err) = events(p.stream(&ask("hi")).await.unwrap()).await;
        assert!(err.is_none(), "{kind:?}: {err:?}");
        let texts: Vec<&str> =
            evs.iter().filter_map(|e| if let StreamEvent::Text(t) = e { Some(t.as_str()) } else { None }).collect();
        assert_eq!(texts, ["Hello", " there,", " dear", " world!"], "{kind:?}");
        assert_eq!(evs.last(), Some(&StreamEvent::Finish(FinishReason::Stop)), "{kind:?}: Finish comes last");
        let got = common::assemble(&evs);
        assert_eq!(got.text, "Hello there, dear world!");
        assert_eq!((got.usage.input_tokens, got.usage.output_tokens), (21, 4), "{kind:?}");
    }
}

#[tokio::test]
async fn tool_calls_stream_with_text_in_order_for_both_protocols() {
    let llm = FakeLlm::start().await;
    for kind in BOTH {
        llm.push(
            Reply::tool_call("get_weather", json!({"city": "Paris", "units": "c"}))
                .with_text("Let me check.")
                .and_tool_call("get_time", json!({"tz": "Europe/Paris"}))
                .arg_piece_len(3),
        );
        let got = complete(common::provider(&llm, kind).as_ref(), &ask("weather?")).await.unwrap();
        assert_eq!(got.text, "Let me check.", "{kind:?}");
        assert_eq!(got.finish, Some(FinishReason::ToolCalls), "{kind:?}");
        let names: Vec<&str> = got.tool_calls.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["get_weather", "get_time"], "{kind:?}");
        let args: Vec<Value> = got.tool_calls.iter().map(|c| serde_json::from_str(&c.arguments).unwrap()).collect();
        assert_eq!(args, [json!({"city": "Paris", "units": "c"}), json!({"tz": "Europe/Paris"})], "{kind:?}");
        assert!(got.tool_calls.iter().all(|c| !c.id.is_empty()), "{kind:?}: ids");
        assert!(got.usage.output_tokens > 0 && got.usage.input_tokens > 0, "{kind:?}: usage in every reply");
    }
}

#[tokio::test]
async fn default_reply_echoes_and_rules_pick_by_last_user_text_concurrently() {
    let llm = FakeLlm::start().await;
    for i in 0..20 {
        llm.on(&format!("conversation-{i}"), Reply::text(&format!("answer {i}")).chunk_delay(Duration::from_millis(2)));
    }
    let p = common::provider(&llm, ProviderKind::Openai);
    let tasks: Vec<_> = (0..20)
        .map(|i| {
            let p = p.clone();
            tokio::spawn(async move { complete(p.as_ref(), &ask(&format!("this is conversation-{i}"))).await })
        })
        .collect();
    for (i, t) in tasks.into_iter().enumerate() {
        assert_eq!(t.await.unwrap().unwrap().text, format!("answer {i}"));
    }
    // Once-rules are used up: the default echo answers now.
    let echoed = complete(p.as_ref(), &ask("conversation-3 again")).await.unwrap();
    assert_eq!(echoed.text, "echo: conversation-3 again");
    assert_eq!(llm.request_count(), 21);
}

fn full_request() -> ChatRequest {
    ChatRequest {
        system: "You are Butler. Stable.".into(),
        messages: vec![
            ChatMessage::User {
                content: "weather and time in Paris?".into(),
                name: Some("alice".into()),
                images: Vec::new(),
            },
            ChatMessage::Assistant {
                content: String::new(),
                tool_calls: vec![
                    ToolCall { id: "c1".into(), name: "get_weather".into(), arguments: "{\"city\":\"Paris\"}".into() },
                    ToolCall { id: "c2".into(), name: "get_time".into(), arguments: String::new() },
                ],
            },
            ChatMessage::Tool { call_id: "c1".into(), content: "sunny".into(), is_error: false, images: vec![] },
            ChatMessage::Tool { call_id: "c2".into(), content: "clock broken".into(), is_error: true, images: vec![] },
        ],
        tools: vec![ToolDef::new(
            "get_weather",
            "Weather for a city",
            json!({"type": "object", "properties": {"city": {"type": "string"}}}),
        )]
        .into(),
        max_tokens: Some(321),
    }
}

#[tokio::test]
async fn openai_request_has_the_chat_completions_shape() {
    let llm = FakeLlm::start().await;
    complete(common::provider(&llm, ProviderKind::Openai).as_ref(), &full_request()).await.unwrap();
    let req = llm.last_request().unwrap();
    assert_eq!((req.protocol, req.path.as_str()), (Protocol::OpenAi, "/v1/chat/completions"));
    assert_eq!(req.header("authorization"), Some(format!("Bearer {KEY}").as_str()));
    let b = &req.body;
    assert_eq!(b["model"], "test-model");
    assert_eq!(b["stream"], true);
    assert_eq!(b["stream_options"], json!({"include_usage": true}));
    assert_eq!(b["max_tokens"], 321);
    assert_eq!(
        b["tools"][0],
        json!({"type": "function", "function": {"name": "get_weather",
        "description": "Weather for a city", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}})
    );
    let m = req.messages();
    assert_eq!(m[0], json!({"role": "system", "content": "You are Butler. Stable."}));
    assert_eq!(m[1], json!({"role": "user", "content": "[alice] weather and time in Paris?"}));
    assert_eq!(m[2]["role"], "assistant");
    assert_eq!(m[2]["content"], Value::Null);
    assert_eq!(
        m[2]["tool_calls"][0],
        json!({"id": "c1", "type": "function",
        "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}})
    );
    assert_eq!(m[2]["tool_calls"][1]["function"]["arguments"], "{}");
    assert_eq!(m[3], json!({"role": "tool", "tool_call_id": "c1", "content": "sunny"}));
    assert_eq!(m[4], json!({"role": "tool", "tool_call_id": "c2", "content": "error: clock broken"}));
    assert_eq!(req.last_tool_result().as_deref(), Some("error: clock broken"));
}

#[tokio::test]
async fn anthropic_request_has_the_messages_shape_with_cached_system() {
    let llm = FakeLlm::start().await;
    complete(common::provider(&llm, ProviderKind::Anthropic).as_ref(), &full_request()).await.unwrap();
    let req = llm.last_request().unwrap();
    assert_eq!((req.protocol, req.path.as_str()), (Protocol::Anthropic, "/v1/messages"));
    assert_eq!(req.header("x-api-key"), Some(KEY));
    assert_eq!(req.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(req.header("authorization"), None);
    let b = &req.body;
    assert_eq!(
        (b["model"].as_str(), b["max_tokens"].as_u64(), b["stream"].as_bool()),
        (Some("test-model"), Some(321), Some(true))
    );
    assert_eq!(
        b["system"],
        json!([{"type": "text", "text": "You are Butler. Stable.", "cache_control": {"type": "ephemeral"}}])
    );
    assert_eq!(b["tools"][0]["input_schema"]["properties"]["city"]["type"], "string");
    let m = req.messages();
    assert_eq!(m.len(), 3, "user, assistant, one merged user turn of tool results: {m:?}");
    assert_eq!(
        m[0],
        json!({"role": "user", "content": [{"type": "text", "text": "[alice] weather and time in Paris?"}]})
    );
    assert_eq!(
        m[1]["content"][0],
        json!({"type": "tool_use", "id": "c1", "name": "get_weather", "input": {"city": "Paris"}})
    );
    assert_eq!(m[1]["content"][1]["input"], json!({}));
    assert_eq!(
        m[2],
        json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "c1", "content": "sunny"},
        {"type": "tool_result", "tool_use_id": "c2", "content": "clock broken", "is_error": true}]})
    );
}

/// A tool's image reaches both protocols as image content: an Anthropic `image` block inside
/// the `tool_result`; for Chat Completions (images only in user messages) a user message with
/// an `image_url` data part right after the run of tool results.
#[tokio::test]
async fn tool_images_reach_the_model_as_image_content() {
    let png = Image { mime: "image/png".into(), data: "iVBORw0KGgo=".into() };
    let mut req = full_request();
    if let ChatMessage::Tool { images, .. } = &mut req.messages[2] {
        images.push(png.clone());
    }
    req.messages.push(ChatMessage::Assistant { content: "Here it is.".into(), tool_calls: vec![] });
    let llm = FakeLlm::start().await;
    complete(common::provider(&llm, ProviderKind::Openai).as_ref(), &req).await.unwrap();
    let m = llm.last_request().unwrap().messages().to_vec();
    assert_eq!(m[3], json!({"role": "tool", "tool_call_id": "c1", "content": "sunny"}));
    assert_eq!(m[4]["role"], "tool", "every tool result comes before the images");
    assert_eq!(
        m[5],
        json!({"role": "user", "content": [
            {"type": "text", "text": "[1 image(s) returned by tool call c1]"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]})
    );
    assert_eq!(m[6]["role"], "assistant");

    complete(common::provider(&llm, ProviderKind::Anthropic).as_ref(), &req).await.unwrap();
    let m = llm.last_request().unwrap().messages().to_vec();
    assert_eq!(
        m[2]["content"][0],
        json!({"type": "tool_result", "tool_use_id": "c1", "content": [
            {"type": "text", "text": "sunny"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}]})
    );
}

#[tokio::test]
async fn system_prompt_is_byte_stable_across_requests() {
    let llm = FakeLlm::start().await;
    for kind in BOTH {
        let p = common::provider(&llm, kind);
        let mut req = ask("one");
        complete(p.as_ref(), &req).await.unwrap();
        let first = llm.last_request().unwrap();
        req.messages.push(ChatMessage::Assistant { content: "echo: one".into(), tool_calls: vec![] });
        req.messages.push(ChatMessage::User { content: "two".into(), name: None, images: Vec::new() });
        complete(p.as_ref(), &req).await.unwrap();
        let second = llm.last_request().unwrap();
        assert_eq!(first.system_text(), "You are Butler.");
        let system = |r: &crate::support::fake_llm::RecordedRequest| match kind {
            ProviderKind::Openai => r.messages()[0].to_string(),
            ProviderKind::Anthropic => r.body["system"].to_string(),
        };
        assert_eq!(system(&first), system(&second), "{kind:?}");
        assert_eq!(second.last_user_text(), "two");
    }
}

#[tokio::test]
async fn no_key_for_local_servers_and_custom_base_urls() {
    let llm = FakeLlm::start().await;
    let table = [
        (ProviderKind::Openai, format!("{}/", llm.openai_url())),
        (ProviderKind::Anthropic, format!("{}/", llm.anthropic_url())),
        (ProviderKind::Anthropic, format!("{}/v1", llm.anthropic_url())),
    ];
    for (kind, base) in table {
        let mut cfg = config(&llm, kind);
        cfg.base_url = Some(base.clone());
        cfg.api_key = None;
        let p = butler::llm::from_config(&cfg);
        let got = complete(p.as_ref(), &ask("local")).await.unwrap();
        assert_eq!(got.text, "echo: local", "{base}");
        let req = llm.last_request().unwrap();
        assert_eq!(req.api_key(), None, "{base}: no key sent");
        assert!(req.protocol != Protocol::Unknown, "{base}: path {}", req.path);
    }
}

#[tokio::test]
async fn cache_usage_and_length_finish() {
    let llm = FakeLlm::start().await;
    for kind in BOTH {
        llm.push(Reply::text("cut").usage(10, 3).cache_usage(90, 5).max_tokens_reached());
        let got = complete(common::provider(&llm, kind).as_ref(), &ask("x")).await.unwrap();
        assert_eq!(got.finish, Some(FinishReason::Length), "{kind:?}");
        assert_eq!(got.usage.input_tokens, 10, "{kind:?}: input excludes cached tokens");
        assert_eq!(got.usage.cache_read_tokens, 90, "{kind:?}");
        let write = if kind == ProviderKind::Anthropic { 5 } else { 0 };
        assert_eq!(got.usage.cache_write_tokens, write, "{kind:?}");
    }
}

#[tokio::test]
async fn a_stream_cut_mid_way_is_an_error_after_the_text_so_far() {
    let llm = FakeLlm::start().await;
    for kind in BOTH {
        llm.push(Reply::text("one two three four").drop_after(2));
        let (evs, err) = events(common::provider(&llm, kind).stream(&ask("x")).await.unwrap()).await;
        assert_eq!(common::assemble(&evs).text, "one two", "{kind:?}");
        assert!(matches!(err, Some(LlmError::Protocol(_))), "{kind:?}: {err:?}");
    }
    assert_eq!(llm.request_count(), 2, "nothing retried after content");
}

#[tokio::test]
async fn an_error_event_after_content_ends_the_stream_without_retry() {
    let llm = FakeLlm::start().await;
    for kind in BOTH {
        llm.push(Reply::text("one two three").error_after(1));
        let (evs, err) = events(common::provider(&llm, kind).stream(&ask("x")).await.unwrap()).await;
        assert_eq!(common::assemble(&evs).text, "one", "{kind:?}");
        assert!(matches!(err, Some(LlmError::Server { .. })), "{kind:?}: {err:?}");
    }
    assert_eq!(llm.request_count(), 2);
}

#[tokio::test]
async fn an_error_event_before_any_content_is_retried() {
    let llm = FakeLlm::start().await;
    for kind in BOTH {
        llm.reset();
        llm.push(Reply::text("never").error_after(0));
        llm.push(Reply::text("second try"));
        let got = complete(common::provider(&llm, kind).as_ref(), &ask("x")).await.unwrap();
        assert_eq!(got.text, "second try", "{kind:?}");
        assert_eq!(llm.request_count(), 2, "{kind:?}");
    }
}
