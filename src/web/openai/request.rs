//! Reading a chat completion request: what Butler takes from it (the newest user message's text,
//! `stream`, `stream_options.include_usage`, `user`) and the OpenAI-shaped refusal of anything it
//! cannot take. Butler keeps its own transcript, so older messages, system prompts and sampling
//! options are read past, never used; nothing here may store or send anything.

use super::error::OpenAiError;
use serde_json::{Map, Value};

/// What a chat completion request asks of Butler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatRequest {
    /// The newest user message, its text parts joined by blank lines.
    pub text: String,
    pub stream: bool,
    /// `stream_options.include_usage`: a last chunk carries the usage.
    pub include_usage: bool,
    /// The web user the request names (loopback without tokens), if any.
    pub user: Option<String>,
}

fn invalid(code: &'static str, message: impl Into<String>) -> OpenAiError {
    OpenAiError::invalid(code, message)
}

/// A field that is a boolean or absent/null.
fn flag(obj: &Map<String, Value>, field: &str) -> Result<bool, OpenAiError> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(invalid("invalid_type", format!("`{field}` must be true or false"))),
    }
}

/// Reads the body of `POST /v1/chat/completions`.
pub fn parse(body: &[u8]) -> Result<ChatRequest, OpenAiError> {
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        invalid("invalid_json", format!("the body is not valid JSON ({e}); send a chat completion request"))
    })?;
    let Value::Object(obj) = value else {
        return Err(invalid("invalid_request", "the body must be a JSON object"));
    };
    match obj.get("model") {
        None | Some(Value::Null) | Some(Value::String(_)) => {}
        Some(_) => return Err(invalid("invalid_type", "`model` must be a string")),
    }
    match obj.get("n") {
        None | Some(Value::Null) => {}
        Some(n) if n.as_u64() == Some(1) => {}
        Some(_) => return Err(invalid("unsupported_n", "Butler gives one answer per message: `n` must be 1")),
    }
    let user = match obj.get("user") {
        None | Some(Value::Null) => None,
        Some(Value::String(u)) => Some(u.clone()),
        Some(_) => return Err(invalid("invalid_type", "`user` must be a string")),
    };
    let stream = flag(&obj, "stream")?;
    let include_usage = match obj.get("stream_options") {
        None | Some(Value::Null) => false,
        Some(Value::Object(o)) => flag(o, "include_usage")?,
        Some(_) => return Err(invalid("invalid_type", "`stream_options` must be an object")),
    };
    let text = newest_user_text(obj.get("messages"))?;
    Ok(ChatRequest { text, stream, include_usage, user })
}

/// The text of the newest `user` message: a string, or an array of `text` parts.
fn newest_user_text(messages: Option<&Value>) -> Result<String, OpenAiError> {
    let messages = match messages {
        None | Some(Value::Null) => return Err(invalid("missing_messages", "`messages` is required")),
        Some(Value::Array(m)) if !m.is_empty() => m,
        Some(Value::Array(_)) => return Err(invalid("missing_messages", "`messages` is empty")),
        Some(_) => return Err(invalid("invalid_messages", "`messages` must be an array of messages")),
    };
    let mut newest = None;
    for (i, m) in messages.iter().enumerate() {
        let role = m.get("role").and_then(Value::as_str);
        match role {
            Some("user") => newest = Some((i, m)),
            Some(_) => {}
            None => return Err(invalid("invalid_messages", format!("`messages[{i}]` has no `role`"))),
        }
    }
    let Some((i, message)) = newest else {
        return Err(invalid("no_user_message", "`messages` has no message with role `user`"));
    };
    let text = match message.get("content") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => text_parts(i, parts)?,
        Some(_) => {
            return Err(invalid(
                "invalid_content",
                format!("`messages[{i}].content` must be a string or an array of text parts"),
            ))
        }
    };
    if text.trim().is_empty() {
        return Err(invalid("empty_content", format!("the newest user message (`messages[{i}]`) has no text")));
    }
    Ok(text)
}

fn text_parts(i: usize, parts: &[Value]) -> Result<String, OpenAiError> {
    let mut texts = Vec::new();
    for (j, part) in parts.iter().enumerate() {
        let at = format!("`messages[{i}].content[{j}]`");
        match part.get("type").and_then(Value::as_str) {
            Some("text" | "input_text") => match part.get("text") {
                Some(Value::String(t)) => texts.push(t.as_str()),
                _ => return Err(invalid("invalid_content", format!("{at} is a text part without a `text` string"))),
            },
            Some("image_url" | "input_image" | "image") => {
                return Err(invalid(
                    "unsupported_content",
                    format!("{at} is an image: Butler's OpenAI API takes text only; send the message as text"),
                ))
            }
            Some(other) => {
                return Err(invalid(
                    "unsupported_content",
                    format!("{at} is a `{other}` part: Butler's OpenAI API takes text parts only"),
                ))
            }
            None => return Err(invalid("invalid_content", format!("{at} has no `type`"))),
        }
    }
    Ok(texts.join("\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text_of(body: Value) -> Result<String, &'static str> {
        parse(body.to_string().as_bytes()).map(|r| r.text).map_err(|e| e.code)
    }

    #[test]
    fn the_newest_user_message_is_taken() {
        let cases = [
            (json!({"messages": [{"role": "user", "content": "hi"}]}), Ok("hi")),
            (
                json!({"messages": [
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": "first"},
                    {"role": "assistant", "content": "one"},
                    {"role": "user", "content": "second"},
                    {"role": "assistant", "content": null}
                ]}),
                Ok("second"),
            ),
            (
                json!({"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]}),
                Ok("a\n\nb"),
            ),
            (json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "any model"}]}), Ok("any model")),
            (json!({}), Err("missing_messages")),
            (json!({"messages": []}), Err("missing_messages")),
            (json!({"messages": "hi"}), Err("invalid_messages")),
            (json!({"messages": [{"content": "hi"}]}), Err("invalid_messages")),
            (json!({"messages": [{"role": "system", "content": "x"}]}), Err("no_user_message")),
            (json!({"messages": [{"role": "user", "content": "  "}]}), Err("empty_content")),
            (json!({"messages": [{"role": "user"}]}), Err("empty_content")),
            (json!({"messages": [{"role": "user", "content": 5}]}), Err("invalid_content")),
            (
                json!({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]}),
                Err("unsupported_content"),
            ),
            (json!({"messages": [{"role": "user", "content": [{"type": "text"}]}]}), Err("invalid_content")),
            (json!({"n": 2, "messages": [{"role": "user", "content": "hi"}]}), Err("unsupported_n")),
            (json!({"model": 4, "messages": [{"role": "user", "content": "hi"}]}), Err("invalid_type")),
            (json!({"stream": "yes", "messages": [{"role": "user", "content": "hi"}]}), Err("invalid_type")),
            (json!([1, 2]), Err("invalid_request")),
        ];
        for (body, want) in cases {
            assert_eq!(text_of(body.clone()).as_deref().map_err(|e| *e), want, "{body}");
        }
        assert_eq!(parse(b"{\"messages\": ").unwrap_err().code, "invalid_json");
    }

    #[test]
    fn stream_usage_and_user_are_read() {
        let body = json!({"stream": true, "stream_options": {"include_usage": true}, "user": "bob",
            "messages": [{"role": "user", "content": "hi"}]});
        let got = parse(body.to_string().as_bytes()).unwrap();
        let want = ChatRequest { text: "hi".into(), stream: true, include_usage: true, user: Some("bob".into()) };
        assert_eq!(got, want);
    }
}
