//! The live checks of `butler init`: the served models and one real model call through
//! Butler's own LLM code, and Telegram's getMe for a bot token.
//!
//! Every failure is a sentence for the person at the terminal and says which answer to give
//! again ([`Redo`]); it must never contain a key or a token (the Bot API puts the token in the
//! URL, so no HTTP error text is passed on from there).

use crate::config::LlmConfig;
use crate::llm::{ChatMessage, ChatRequest, LlmError};
use std::time::Duration;

/// Which answer a failed check asks for again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Redo {
    BaseUrl,
    Key,
    Model,
}

/// What a failed check says, and which answer it asks again.
pub(super) type Failed = (String, Redo);

/// Where a model error points: a refused key, a model the endpoint does not know, else the
/// base URL.
fn redo_for(e: &LlmError) -> Redo {
    match e {
        LlmError::Auth(_) => Redo::Key,
        LlmError::UnknownModel(_) | LlmError::MissingModel(_) => Redo::Model,
        _ => Redo::BaseUrl,
    }
}

/// The models the endpoint lists: `Ok(empty)` when it has no list (a server without
/// `/models`), an error when the key is refused or the endpoint cannot be reached.
pub(super) async fn models(llm: &LlmConfig) -> Result<Vec<String>, Failed> {
    match crate::llm::list_models(llm, Duration::from_secs(15)).await {
        Ok(models) => Ok(models),
        Err(e @ LlmError::Auth(_)) => Err((format!("the endpoint refused the key: {e}"), Redo::Key)),
        Err(e @ (LlmError::Unreachable(_) | LlmError::Timeout(_))) => Err((e.to_string(), Redo::BaseUrl)),
        Err(_) => Ok(Vec::new()),
    }
}

/// One real request to the model; `Ok` with how long it took.
pub(super) async fn model_call(llm: &LlmConfig) -> Result<Duration, Failed> {
    let provider = crate::llm::from_config(llm);
    let req = ChatRequest {
        system: "You are being set up. Reply with the word OK.".into(),
        messages: vec![ChatMessage::User { content: "Reply with the word OK.".into(), name: None, images: Vec::new() }],
        tools: Vec::new().into(),
        max_tokens: Some(5),
    };
    let started = std::time::Instant::now();
    match tokio::time::timeout(Duration::from_secs(60), crate::llm::complete(&*provider, &req)).await {
        Ok(Ok(_)) => Ok(started.elapsed()),
        Ok(Err(e)) => Err((e.to_string(), redo_for(&e))),
        Err(_) => Err(("the model did not answer within 60s".into(), Redo::BaseUrl)),
    }
}

/// Telegram's getMe with `token` at `api_url`: the bot's @username, or why not.
pub(super) async fn telegram(api_url: &str, token: &str) -> Result<String, String> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(15))
        .build()
        .map_err(|_| "cannot build an HTTP client".to_string())?;
    let url = format!("{}/bot{token}/getMe", api_url.trim_end_matches('/'));
    let resp = client.get(url).send().await.map_err(|e| {
        if e.is_timeout() {
            format!("{api_url} did not answer within 15s")
        } else {
            format!("cannot reach the Bot API at {api_url}")
        }
    })?;
    let status = resp.status().as_u16();
    let body: serde_json::Value = resp.json().await.unwrap_or_default();
    if status == 401 || status == 404 {
        return Err(format!("Telegram refused the token (HTTP {status}); copy it again from @BotFather"));
    }
    if status != 200 || body["ok"] != true {
        let said = body["description"].as_str().unwrap_or("no description").replace(token, "[token]");
        return Err(format!("getMe failed with HTTP {status}: {said}"));
    }
    Ok(body["result"]["username"].as_str().map_or_else(|| "the bot".to_string(), |u| format!("@{u}")))
}
