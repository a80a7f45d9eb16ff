//! The fake LLM's scripted replies: what to stream (text, tool calls, an HTTP error) and how
//! (delays, pauses, a dropped connection, an in-stream error, usage). Plain data with builder
//! methods; it must never know about sockets or HTTP (that is `wire`'s job).

use serde_json::Value;
use std::time::Duration;

#[derive(Clone, Debug)]
pub(super) enum Content {
    Echo,
    Chunks(Vec<String>),
    /// Worked out from the whole request's text (system prompt and every message).
    Computed(Computed),
}

/// A reply worked out from the request: the fake "answers from what it is sent".
#[derive(Clone)]
pub(super) struct Computed(pub(super) std::sync::Arc<dyn Fn(&str) -> String + Send + Sync>);

impl std::fmt::Debug for Computed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Computed")
    }
}

#[derive(Clone, Debug)]
pub(super) enum Failure {
    BadKey,
    UnknownModel,
    ContextTooLong,
    RateLimited,
    Server(u16),
    Raw { status: u16, body: String },
}

/// What the fake answers to one request. Build with a constructor, adjust with modifiers.
#[derive(Clone, Debug)]
pub struct Reply {
    pub(super) content: Content,
    pub(super) tools: Vec<(String, String)>,
    pub(super) failure: Option<Failure>,
    pub(super) headers: Vec<(String, String)>,
    pub(super) first_byte_delay: Duration,
    pub(super) chunk_delay: Duration,
    pub(super) drop_after: Option<usize>,
    pub(super) error_after: Option<usize>,
    pub(super) error_message: Option<String>,
    pub(super) pause_after: Option<(usize, Duration)>,
    pub(super) arg_piece_len: usize,
    pub(super) usage: Option<(u64, u64)>,
    pub(super) cache: (u64, u64),
    pub(super) length_limited: bool,
}

impl Reply {
    fn base(content: Content) -> Self {
        Self {
            content,
            tools: Vec::new(),
            failure: None,
            headers: Vec::new(),
            first_byte_delay: Duration::ZERO,
            chunk_delay: Duration::ZERO,
            drop_after: None,
            error_after: None,
            error_message: None,
            pause_after: None,
            arg_piece_len: 8,
            usage: None,
            cache: (0, 0),
            length_limited: false,
        }
    }

    /// Text streamed one word per chunk (`"Hello there!"` -> `"Hello"`, `" there!"`).
    pub fn text(text: &str) -> Self {
        Self::base(Content::Chunks(words(text)))
    }

    /// Text streamed in exactly these chunks.
    pub fn chunks<S: Into<String>>(chunks: impl IntoIterator<Item = S>) -> Self {
        Self::base(Content::Chunks(chunks.into_iter().map(Into::into).collect()))
    }

    /// A text worked out by `f` from the request's whole text (its system prompt and every
    /// message), one chunk per word: a model that answers only from what it is sent.
    pub fn computed(f: impl Fn(&str) -> String + Send + Sync + 'static) -> Self {
        Self::base(Content::Computed(Computed(std::sync::Arc::new(f))))
    }

    /// `echo: <last user text>`, one chunk per word (the default reply).
    pub fn echo() -> Self {
        Self::base(Content::Echo)
    }

    /// One tool call (no text); `arguments` is streamed in pieces of `arg_piece_len` chars.
    pub fn tool_call(name: &str, arguments: Value) -> Self {
        Self::base(Content::Chunks(Vec::new())).and_tool_call(name, arguments)
    }

    /// Adds another tool call after the previous ones.
    pub fn and_tool_call(mut self, name: &str, arguments: Value) -> Self {
        self.tools.push((name.to_string(), arguments.to_string()));
        self
    }

    /// Adds a tool call whose arguments are this exact text (may be invalid JSON).
    pub fn and_raw_tool_call(mut self, name: &str, arguments: &str) -> Self {
        self.tools.push((name.to_string(), arguments.to_string()));
        self
    }

    /// Text streamed (one chunk per word) before the tool calls.
    pub fn with_text(mut self, text: &str) -> Self {
        self.content = Content::Chunks(words(text));
        self
    }

    /// 401: OpenAI `invalid_api_key` (quoting the key masked, as OpenAI does) or Anthropic
    /// `authentication_error`.
    pub fn bad_key() -> Self {
        Self::failing(Failure::BadKey)
    }

    /// 404: OpenAI `model_not_found` or Anthropic `not_found_error` naming the model.
    pub fn unknown_model() -> Self {
        Self::failing(Failure::UnknownModel)
    }

    /// 400: OpenAI `context_length_exceeded` or Anthropic "prompt is too long".
    pub fn context_too_long() -> Self {
        Self::failing(Failure::ContextTooLong)
    }

    /// 429 with `Retry-After: <secs>`.
    pub fn rate_limited(retry_after_secs: u64) -> Self {
        Self::failing(Failure::RateLimited).header("retry-after", &retry_after_secs.to_string())
    }

    /// A 5xx in the provider's shape (Anthropic 529 is `overloaded_error`).
    pub fn server_error(status: u16) -> Self {
        Self::failing(Failure::Server(status))
    }

    /// Any status with this exact body (sent as `application/json`).
    pub fn http_error(status: u16, body: impl Into<String>) -> Self {
        Self::failing(Failure::Raw { status, body: body.into() })
    }

    fn failing(f: Failure) -> Self {
        let mut r = Self::base(Content::Chunks(Vec::new()));
        r.failure = Some(f);
        r
    }

    /// An extra response header (e.g. `retry-after` as an HTTP date).
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_ascii_lowercase(), value.to_string()));
        self
    }

    /// Wait before sending the response headers.
    pub fn first_byte_delay(mut self, d: Duration) -> Self {
        self.first_byte_delay = d;
        self
    }

    /// Wait between SSE events.
    pub fn chunk_delay(mut self, d: Duration) -> Self {
        self.chunk_delay = d;
        self
    }

    /// Drop the connection after `n` content deltas (text or argument pieces).
    pub fn drop_after(mut self, n: usize) -> Self {
        self.drop_after = Some(n);
        self
    }

    /// Send an in-stream error after `n` content deltas (OpenAI `{"error":...}` data, Anthropic
    /// `event: error` with `overloaded_error`), then end the stream.
    pub fn error_after(mut self, n: usize) -> Self {
        self.error_after = Some(n);
        self
    }

    /// The message of the in-stream error sent by `error_after`.
    pub fn error_message(mut self, message: &str) -> Self {
        self.error_message = Some(message.to_string());
        self
    }

    /// After `n` content deltas, go silent for `d` before the rest (a stalled stream).
    pub fn pause_after(mut self, n: usize, d: Duration) -> Self {
        self.pause_after = Some((n, d));
        self
    }

    /// Input and output token counts to report (default: body bytes / 4, number of deltas).
    pub fn usage(mut self, input: u64, output: u64) -> Self {
        self.usage = Some((input, output));
        self
    }

    /// Cached input tokens read and written (OpenAI reports only reads).
    pub fn cache_usage(mut self, read: u64, write: u64) -> Self {
        self.cache = (read, write);
        self
    }

    /// Finish with `length` / `max_tokens` instead of a normal stop.
    pub fn max_tokens_reached(mut self) -> Self {
        self.length_limited = true;
        self
    }

    /// Characters per streamed piece of tool arguments (default 8).
    pub fn arg_piece_len(mut self, n: usize) -> Self {
        self.arg_piece_len = n.max(1);
        self
    }
}

pub(super) fn words(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    for ch in text.chars() {
        if ch.is_whitespace() && in_word {
            out.push(std::mem::take(&mut cur));
            in_word = false;
        } else if !ch.is_whitespace() {
            in_word = true;
        }
        cur.push(ch);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

pub(super) fn pieces(s: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    chars.chunks(n).map(|c| c.iter().collect()).collect()
}
