//! The JSON Butler answers with on the OpenAI API, in OpenAI's exact shapes: the model object,
//! `chat.completion`, `chat.completion.chunk` and the usage block. Pure functions: nothing here
//! may read the store or know how an answer came about.

use crate::store::UsageTotals;
use serde_json::{json, Value};

/// The one model Butler serves under this API.
pub(super) const MODEL: &str = "butler";

/// One response's id, creation time and the model it names (shared by all its chunks).
#[derive(Clone, Debug)]
pub(super) struct Head {
    pub id: String,
    pub created: i64,
}

impl Head {
    pub(super) fn new(now_ms: i64) -> Self {
        Self { id: format!("chatcmpl-{}", uuid::Uuid::new_v4().simple()), created: now_ms / 1000 }
    }
}

pub(super) fn model(created: i64) -> Value {
    json!({"id": MODEL, "object": "model", "created": created, "owned_by": "butler"})
}

/// OpenAI's usage block (zeros when Butler does not know).
pub(super) fn usage(u: Option<&UsageTotals>) -> Value {
    let (input, output) = u.map(|u| (u.input_tokens.max(0), u.output_tokens.max(0))).unwrap_or((0, 0));
    json!({"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output})
}

/// A whole (not streamed) answer.
pub(super) fn completion(head: &Head, text: &str, usage_of: Option<&UsageTotals>) -> Value {
    json!({
        "id": head.id,
        "object": "chat.completion",
        "created": head.created,
        "model": MODEL,
        "system_fingerprint": null,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": text, "refusal": null},
            "logprobs": null,
            "finish_reason": "stop",
        }],
        "usage": usage(usage_of),
    })
}

/// One streamed chunk with `delta` (and `finish_reason` on the last one). With `include_usage`
/// every chunk carries `"usage": null`, as OpenAI's do.
pub(super) fn chunk(head: &Head, delta: Value, finish: Option<&str>, include_usage: bool) -> Value {
    let mut c = json!({
        "id": head.id,
        "object": "chat.completion.chunk",
        "created": head.created,
        "model": MODEL,
        "system_fingerprint": null,
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
    });
    if include_usage {
        c["usage"] = Value::Null;
    }
    c
}

/// The chunk after the last choice when `stream_options.include_usage` is set: no choices.
pub(super) fn usage_chunk(head: &Head, usage_of: Option<&UsageTotals>) -> Value {
    json!({
        "id": head.id,
        "object": "chat.completion.chunk",
        "created": head.created,
        "model": MODEL,
        "system_fingerprint": null,
        "choices": [],
        "usage": usage(usage_of),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        let head = Head::new(1_700_000_000_123);
        assert!(head.id.starts_with("chatcmpl-") && head.created == 1_700_000_000);
        let u = UsageTotals { turns: 1, input_tokens: 12, output_tokens: 3, cost_usd: 0.0 };
        let c = completion(&head, "hi", Some(&u));
        assert_eq!(c["choices"][0]["message"]["content"], "hi");
        assert_eq!(c["usage"], json!({"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}));
        assert_eq!(usage(None)["total_tokens"], 0);
        let first = chunk(&head, json!({"role": "assistant", "content": ""}), None, false);
        assert!(first.get("usage").is_none() && first["choices"][0]["finish_reason"].is_null());
        let last = chunk(&head, json!({}), Some("stop"), true);
        assert!(last["usage"].is_null() && last.get("usage").is_some());
        assert_eq!(usage_chunk(&head, None)["choices"], json!([]));
        assert_eq!(model(5), json!({"id": "butler", "object": "model", "created": 5, "owned_by": "butler"}));
    }
}
