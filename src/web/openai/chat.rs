//! `POST /v1/chat/completions`: the newest user message of the request becomes one message of
//! the web chat (through `submit_message`, the path of `POST /api/v1/messages`), and Butler's
//! answer in that conversation comes back as a `chat.completion`, or as `chat.completion.chunk`
//! server-sent events ending with `data: [DONE]` when `stream` is true.
//!
//! Who is asking is the web API's rule (a bearer web token, or on loopback without tokens the
//! request's `user`); the conversation is `X-Butler-Conversation` or the user's own
//! `openai-<user>`. A bad request is refused before anything is stored, and a client that goes
//! away never stops or changes the turn.

use super::error::OpenAiError;
use super::request::{self, ChatRequest};
use super::watch::{Final, Step, Target, Watch, REPLY_TIMEOUT};
use super::wire::{self, Head};
use crate::ids::WEB_CHANNEL;
use crate::store::now_ms;
use crate::web::api::{check_name, conversation_id, submit_message, WebState};
use crate::web::names::default_conversation;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures::stream::{self, Stream, StreamExt};
use serde_json::{json, Value};
use std::convert::Infallible;

/// The request header naming the web conversation (also set on the response).
const CONVERSATION_HEADER: &str = "x-butler-conversation";

pub(super) async fn completions(
    State(s): State<WebState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, OpenAiError> {
    // A bad or missing token is refused whatever the body says.
    s.auth.user(&headers, None)?;
    if !crate::http::is_json(&headers) {
        return Err(OpenAiError::not_json());
    }
    let body = body.map_err(|_| OpenAiError::invalid("invalid_body", "the request body could not be read"))?;
    let req = request::parse(&body)?;
    let user = who(&s, &headers, &req)?;
    let conv = conversation(&headers, &user)?;
    let started_ms = now_ms();
    // Listen before the message goes in, so not one draft of the answer is missed.
    let sub = s.hub.subscribe(&format!("{WEB_CHANNEL}:{conv}"));
    let (event_id, _) = submit_message(&s, &headers, &conv, req.user.as_deref(), &req.text, None, &[]).await?;
    tracing::info!(event = %event_id, conversation = %conv, stream = req.stream, "openai api: message taken");
    let target = Target { event_id, user, started_ms };
    let watch = Watch::new(s.store.clone(), sub, target, REPLY_TIMEOUT, s.shutdown.clone());
    let head = Head::new(started_ms);
    let mut resp = if req.stream {
        streamed(watch, head, req.include_usage).into_response()
    } else {
        Json(whole(watch, &head).await).into_response()
    };
    if let Ok(v) = HeaderValue::from_str(&conv) {
        resp.headers_mut().insert(CONVERSATION_HEADER, v);
    }
    Ok(resp)
}

/// The web user the request is for: the token's, or (loopback without tokens) its `user`.
fn who(s: &WebState, headers: &HeaderMap, req: &ChatRequest) -> Result<String, OpenAiError> {
    if let Some(u) = &req.user {
        check_name("user", u.strip_prefix("web:").unwrap_or(u), 64)
            .map_err(|_| OpenAiError::invalid("invalid_user", "`user` must be 1 to 64 letters, digits, - _ . @"))?;
    }
    Ok(s.auth.user(headers, req.user.as_deref())?)
}

/// `X-Butler-Conversation` (an optional `web:` prefix dropped), else the user's own.
fn conversation(headers: &HeaderMap, user: &str) -> Result<String, OpenAiError> {
    let bad = || {
        OpenAiError::invalid(
            "invalid_conversation",
            "`X-Butler-Conversation` must be 1 to 64 letters, digits, - _ . @ (a `web:` prefix is dropped)",
        )
    };
    match headers.get(CONVERSATION_HEADER) {
        None => Ok(default_conversation(user)),
        Some(v) => conversation_id(v.to_str().map_err(|_| bad())?.trim()).map_err(|_| bad()),
    }
}

/// Waits for the whole answer.
async fn whole(mut watch: Watch, head: &Head) -> Value {
    let done: Final = loop {
        if let Step::Done(done) = watch.next().await {
            break done;
        }
    };
    wire::completion(head, &done.text, done.usage.as_ref())
}

fn data(chunk: &Value) -> Event {
    Event::default().data(chunk.to_string())
}

/// The answer as OpenAI's chunks: the role first, the text as it streams, the end, `[DONE]`.
fn streamed(watch: Watch, head: Head, include_usage: bool) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let first = data(&wire::chunk(&head, json!({"role": "assistant", "content": ""}), None, include_usage));
    let rest = stream::unfold(Some((watch, head)), move |state| async move {
        let (mut watch, head) = state?;
        match watch.next().await {
            Step::Delta(text) => {
                let ev = data(&wire::chunk(&head, json!({"content": text}), None, include_usage));
                Some((vec![ev], Some((watch, head))))
            }
            Step::Done(done) => {
                let mut out = Vec::with_capacity(4);
                if !done.rest.is_empty() {
                    out.push(data(&wire::chunk(&head, json!({"content": done.rest}), None, include_usage)));
                }
                out.push(data(&wire::chunk(&head, json!({}), Some("stop"), include_usage)));
                if include_usage {
                    out.push(data(&wire::usage_chunk(&head, done.usage.as_ref())));
                }
                out.push(Event::default().data("[DONE]"));
                Some((out, None))
            }
        }
    });
    let events =
        stream::once(async move { vec![first] }).chain(rest).flat_map(|evs| stream::iter(evs.into_iter().map(Ok)));
    Sse::new(events).keep_alive(KeepAlive::default())
}
