//! The optional classifier for trigger events no rule decides: one short streamed request asking
//! the model for exactly one word, `drop`, `notify` or `agent`. Answers are cached in memory by
//! the SHA-256 of the event (source, headers other than delivery ids, body), so a repeated event
//! costs no second call. The cache is bounded; the oldest entry goes first.
//!
//! The classifier never runs tools and never decides anything itself on failure: an error, a
//! timeout or an answer that is not one of the three words is returned as an error, and the
//! caller falls back to the source's default. Failures are not cached.
//!
//! It runs on the `worker` tier when one is configured (the caller hands it that provider).
//! Every call the model answered is recorded as a usage row of kind `classifier` under the
//! payer the caller names, at the prices of the model that answered; a cached answer costs
//! nothing and records nothing.

use crate::config::TriggerAction;
use crate::llm::{Assembled, ChatMessage, ChatRequest, LlmError, PriceBook, Provider, StreamEvent};
use crate::store::{TurnStore, UsageRecord};
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

/// Whom one classification's cost is recorded under.
pub struct Payer<'a> {
    /// The trigger's target user, or `system`.
    pub user_id: &'a str,
    /// The trigger event's id.
    pub event_id: &'a str,
}

pub struct Classifier {
    llm: Arc<dyn Provider>,
    prices: Arc<PriceBook>,
    store: Arc<dyn TurnStore>,
    cache: Mutex<Cache>,
}

impl Classifier {
    pub fn new(llm: Arc<dyn Provider>, prices: Arc<PriceBook>, store: Arc<dyn TurnStore>) -> Self {
        Self { llm, prices, store, cache: Mutex::new(Cache::default()) }
    }

    /// The model's decision for an event of `source`, and whether it came from the cache.
    pub async fn classify(
        &self,
        source: &str,
        summary: &str,
        payload: &Value,
        payer: Payer<'_>,
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
                images: Vec::new(),
            }],
            tools: Vec::new().into(),
            max_tokens: Some(MAX_TOKENS),
        };
        let asm = tokio::time::timeout(TIMEOUT, self.ask(&req)).await.map_err(|_| ClassifyError::Timeout)??;
        self.record(&asm, &payer).await;
        let answer = asm.text;
        let action =
            parse_answer(&answer).ok_or_else(|| ClassifyError::Unparseable(answer.chars().take(40).collect()))?;
        self.cache.lock().unwrap_or_else(|p| p.into_inner()).put(key, action);
        Ok((action, false))
    }

    /// The answer (its text cut short after 200 bytes), with the model and usage it reported.
    async fn ask(&self, req: &ChatRequest) -> Result<Assembled, LlmError> {
        let mut stream = self.llm.stream(req).await?;
        let mut asm = Assembled::default();
        while let Some(ev) = stream.next().await {
            let ev = ev?;
            asm.push(&ev);
            if matches!(ev, StreamEvent::Text(_)) && asm.text.len() > 200 {
                break;
            }
        }
        Ok(asm)
    }

    /// Records what the call cost; a store failure is logged, never the classification's.
    async fn record(&self, asm: &Assembled, payer: &Payer<'_>) {
        let model = asm.model_or(self.llm.model());
        let event_id = format!("{}:classifier", payer.event_id);
        let ids = [payer.user_id, "", event_id.as_str()];
        let row = UsageRecord::priced(&self.prices.get(model), "classifier", ids, model, &asm.usage);
        if let Err(e) = self.store.usage_add(&row).await {
            tracing::warn!(event = %payer.event_id, error = %e, "could not record the classifier's usage");
        }
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
