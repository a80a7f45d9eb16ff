//! The optional classifier for trigger events no rule decides: one short streamed request asking
//! the model for exactly one word, `drop`, `notify` or `agent`. Answers are cached in memory by
//! the SHA-256 of the event (source, headers other than delivery ids, body), so a repeated event
//! costs no second call. The cache is bounded; the oldest entry goes first.
//!
//! The classifier never runs tools and never decides anything itself on failure: an error, a
//! timeout or an answer that is not one of the three words is returned as an error, and the
//! caller falls back to the source's default. Failures are not cached.

use crate::config::TriggerAction;
use crate::llm::{ChatMessage, ChatRequest, LlmError, Provider, StreamEvent};
use futures::StreamExt;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Headers that differ between deliveries of the same event.
const DELIVERY_HEADERS: [&str; 2] = ["x-github-delivery", "x-butler-delivery"];
/// Most cached answers.
pub const CACHE_ENTRIES: usize = 1_000;
/// Payload characters shown to the classifier at most.
const MAX_PROMPT_PAYLOAD: usize = 4_000;
/// The whole classification (connect, answer) must finish in this time.
const TIMEOUT: Duration = Duration::from_secs(20);
/// Enough for one word in any tokenizer, not enough for an essay.
const MAX_TOKENS: u32 = 8;

const SYSTEM: &str = "You sort incoming webhook events for a personal assistant. Reply with exactly one \
word: drop (nobody needs to see it), notify (worth a short message to the owner), or agent (the assistant \
should look into it or act on it).";

#[derive(Debug, thiserror::Error)]
pub enum ClassifyError {
    #[error(transparent)]
    Llm(#[from] LlmError),
    #[error("no answer within {}s", TIMEOUT.as_secs())]
    Timeout,
    #[error("the answer {0:?} is not drop, notify or agent")]
    Unparseable(String),
}

/// Bounded map of event hash -> decision, oldest evicted first.
#[derive(Default)]
struct Cache {
    map: HashMap<String, TriggerAction>,
    order: VecDeque<String>,
}

impl Cache {
    fn get(&self, key: &str) -> Option<TriggerAction> {
        self.map.get(key).copied()
    }

    fn put(&mut self, key: String, action: TriggerAction) {
        if self.map.insert(key.clone(), action).is_none() {
            self.order.push_back(key);
        }
        while self.order.len() > CACHE_ENTRIES {
            if let Some(old) = self.order.pop_front() {
                self.map.remove(&old);
            }
        }
    }
}

pub struct Classifier {
    llm: Arc<dyn Provider>,
    cache: Mutex<Cache>,
}

impl Classifier {
    pub fn new(llm: Arc<dyn Provider>) -> Self {
        Self { llm, cache: Mutex::new(Cache::default()) }
    }

    /// The model's decision for an event of `source`, and whether it came from the cache.
    pub async fn classify(
        &self,
        source: &str,
        summary: &str,
        payload: &Value,
    ) -> Result<(TriggerAction, bool), ClassifyError> {
        let key = cache_key(source, payload);
        if let Some(hit) = self.cache.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return Ok((hit, true));
        }
        let json = payload.to_string();
        let (shown, _) = super::template::cut(&json, MAX_PROMPT_PAYLOAD);
        let req = ChatRequest {
            system: SYSTEM.into(),
            messages: vec![ChatMessage::User {
                content: format!(
                    "Source: {source}\nEvent: {summary}\nPayload (JSON):\n{shown}\n\n\
                     Reply with exactly one word: drop, notify or agent."
                ),
                name: None,
            }],
            tools: Vec::new().into(),
            max_tokens: Some(MAX_TOKENS),
        };
        let answer = tokio::time::timeout(TIMEOUT, self.ask(&req)).await.map_err(|_| ClassifyError::Timeout)??;
        let action =
            parse_answer(&answer).ok_or_else(|| ClassifyError::Unparseable(answer.chars().take(40).collect()))?;
        self.cache.lock().unwrap_or_else(|p| p.into_inner()).put(key, action);
        Ok((action, false))
    }

    async fn ask(&self, req: &ChatRequest) -> Result<String, LlmError> {
        let mut stream = self.llm.stream(req).await?;
        let mut text = String::new();
        while let Some(ev) = stream.next().await {
            if let StreamEvent::Text(t) = ev? {
                text.push_str(&t);
            }
            if text.len() > 200 {
                break;
            }
        }
        Ok(text)
    }
}

/// SHA-256 over the source and the payload without its per-delivery headers, so a redelivery
/// or a re-post of the same event hits the cache.
pub fn cache_key(source: &str, payload: &Value) -> String {
    let mut stable = payload.clone();
    if let Some(headers) = stable.get_mut("headers").and_then(Value::as_object_mut) {
        for h in DELIVERY_HEADERS {
            headers.remove(h);
        }
    }
    let mut hash = Sha256::new();
    hash.update(source.as_bytes());
    hash.update([0]);
    hash.update(stable.to_string().as_bytes());
    hex::encode(hash.finalize())
}

/// `drop`, `notify` or `agent`, alone apart from case, whitespace, quotes and punctuation.
pub fn parse_answer(answer: &str) -> Option<TriggerAction> {
    let word = answer.trim().trim_matches(|c: char| !c.is_alphanumeric()).to_ascii_lowercase();
    match word.as_str() {
        "drop" => Some(TriggerAction::Drop),
        "notify" => Some(TriggerAction::Notify),
        "agent" => Some(TriggerAction::Agent),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers() {
        let cases = [
            ("notify", Some(TriggerAction::Notify)),
            ("  Notify.\n", Some(TriggerAction::Notify)),
            ("**agent**", Some(TriggerAction::Agent)),
            ("\"drop\"", Some(TriggerAction::Drop)),
            ("DROP", Some(TriggerAction::Drop)),
            ("notify the owner", None),
            ("I think: notify", None),
            ("", None),
            ("ignore", None),
        ];
        for (answer, want) in cases {
            assert_eq!(parse_answer(answer), want, "{answer:?}");
        }
    }

    #[test]
    fn cache_keys_ignore_delivery_ids_only() {
        let a = json!({"headers": {"x-github-event": "star", "x-github-delivery": "1"}, "body": {"action": "created"}});
        let b = json!({"headers": {"x-github-event": "star", "x-github-delivery": "2"}, "body": {"action": "created"}});
        let c = json!({"headers": {"x-github-event": "star", "x-github-delivery": "1"}, "body": {"action": "deleted"}});
        assert_eq!(cache_key("github", &a), cache_key("github", &b));
        assert_ne!(cache_key("github", &a), cache_key("github", &c));
        assert_ne!(cache_key("github", &a), cache_key("gitlab", &a));
    }

    #[test]
    fn cache_is_bounded_oldest_first() {
        let mut cache = Cache::default();
        for i in 0..=CACHE_ENTRIES {
            cache.put(i.to_string(), TriggerAction::Notify);
        }
        assert_eq!(cache.map.len(), CACHE_ENTRIES);
        assert_eq!(cache.get("0"), None);
        assert_eq!(cache.get("1"), Some(TriggerAction::Notify));
        assert_eq!(cache.get(&CACHE_ENTRIES.to_string()), Some(TriggerAction::Notify));
        cache.put("1".into(), TriggerAction::Drop);
        assert_eq!((cache.map.len(), cache.order.len()), (CACHE_ENTRIES, CACHE_ENTRIES));
    }
}
