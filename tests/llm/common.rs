//! Helpers shared by the LLM tests: configs pointing at the fake, and stream collection.
//! Must never reach a real provider.

use crate::support::fake_llm::FakeLlm;
use butler::config::{LlmConfig, ProviderKind, Secret};
use butler::llm::{Assembled, ChatMessage, ChatRequest, LlmError, LlmStream, Provider, StreamEvent};
use futures::StreamExt;
use std::sync::Arc;

/// The key every test config uses; no error may ever show it.
pub const KEY: &str = "sk-test-butler-SECRET-0123456789abcdef";

pub const BOTH: [ProviderKind; 2] = [ProviderKind::Openai, ProviderKind::Anthropic];

pub fn base_url(llm: &FakeLlm, kind: ProviderKind) -> String {
    match kind {
        ProviderKind::Openai => llm.openai_url(),
        ProviderKind::Anthropic => llm.anthropic_url(),
    }
}

/// A config for `kind` at the fake: short timeouts, two retries.
pub fn config(llm: &FakeLlm, kind: ProviderKind) -> LlmConfig {
    LlmConfig {
        provider: kind,
        base_url: Some(base_url(llm, kind)),
        api_key: Some(Secret::new(KEY)),
        model: "test-model".into(),
        connect_timeout_secs: 2,
        first_byte_timeout_secs: 5,
        idle_timeout_secs: 5,
        max_retries: 2,
        ..LlmConfig::default()
    }
}

pub fn provider(llm: &FakeLlm, kind: ProviderKind) -> Arc<dyn Provider> {
    butler::llm::from_config(&config(llm, kind))
}

pub fn ask(text: &str) -> ChatRequest {
    ChatRequest {
        system: "You are Butler.".into(),
        messages: vec![ChatMessage::User { content: text.into(), name: None, images: Vec::new() }],
        ..ChatRequest::default()
    }
}

/// Every event of the stream, stopping at the first error.
pub async fn events(mut stream: LlmStream) -> (Vec<StreamEvent>, Option<LlmError>) {
    let mut out = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(ev) => out.push(ev),
            Err(e) => return (out, Some(e)),
        }
    }
    (out, None)
}

pub fn assemble(events: &[StreamEvent]) -> Assembled {
    let mut a = Assembled::default();
    for ev in events {
        a.push(ev);
    }
    a
}

/// Streams `req` and assembles the whole response.
pub async fn complete(p: &dyn Provider, req: &ChatRequest) -> Result<Assembled, LlmError> {
    let (evs, err) = events(p.stream(req).await?).await;
    match err {
        Some(e) => Err(e),
        None => Ok(assemble(&evs)),
    }
}

/// The error Display must never contain the key, nor its distinctive middle part.
pub fn assert_no_key(e: &LlmError) {
    let shown = format!("{e} {e:?}");
    assert!(!shown.contains(KEY) && !shown.contains("SECRET"), "error shows the key: {shown}");
}

/// A base URL where nothing listens.
pub async fn dead_url() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}")
}
