//! LLM providers: OpenAI Chat Completions and Anthropic Messages, both streamed over SSE,
//! behind one small [`Provider`] trait.
//!
//! Any server speaking one of the two protocols works through `base_url` (OpenAI, Ollama, vLLM,
//! llama.cpp server, OpenRouter, Anthropic). Requests are retried with backoff on 429 and 5xx
//! before the stream starts, honouring `Retry-After`. This module must never log an API key or
//! put one in an error, and never retry once a stream has started delivering tokens.

mod anthropic;
pub mod book;
mod build;
pub mod decode;
mod errors;
mod http;
mod measured;
mod models;
mod openai;
mod prices;
mod provider;
pub mod sse;
mod tiers;
mod types;

pub use anthropic::AnthropicDecoder;
pub use build::from_config;
pub use decode::{decode_chunks, Decode, Flow};
pub use http::parse_retry_after;
pub(crate) use http::retry_after;
pub use models::{base_url, default_base_url, list_models, model_list_line, provider_name};
pub use openai::OpenAiDecoder;
pub use prices::{check_config, Endpoint, PriceBook, PriceSource, Priced, Prices};
pub use provider::{complete, LlmError, LlmStream, Provider};
pub use sse::{SseEvent, SseParser};
pub use tiers::{TierChoice, Tiers, MAIN_TIER};
pub use types::*;
