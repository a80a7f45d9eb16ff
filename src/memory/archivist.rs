//! The archivist: after a reply is delivered, a background worker asks the model which durable
//! facts the exchange revealed, and adds, updates or forgets memories accordingly - never the
//! same fact twice, never touching memories the model was not shown. Facts it proposes for the
//! profile (name, how to address the person, language, standing instructions) are added and
//! pinned, in the person's own memory only. Its cost is recorded like a
//! turn's (usage kind `archivist`), under the model that answered. It runs on the `worker` tier
//! when one is configured (the caller hands it that provider). Jobs wait in a bounded queue; when
//! it is full a job is dropped (logged): distilling is best effort, the exchange itself is safe
//! in the transcript.

use crate::llm::{ChatMessage, ChatRequest, PriceBook, Provider};
use crate::store::{MemoryRow, MemoryScope, MemoryStore, ProfileStore, StoreError, TurnStore, UsageRecord};
use serde::Deserialize;
use std::collections::HashSet;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

/// Exchanges waiting to be distilled.
const QUEUE: usize = 256;
/// Facts added from one exchange at most.
const MAX_ADDS: usize = 5;
/// Exchanges whose message is shorter than this are not worth a model call.
const MIN_CHARS: usize = 12;

const SYSTEM: &str = "You keep a person's long-term memory for their personal assistant. From the exchange, \
pick durable facts about the person worth knowing in future conversations: preferences, names of people and \
pets, plans, facts about their life and work. Skip small talk, one-off requests, and facts already known \
unless they changed. Answer with JSON only, no prose: {\"add\": [\"fact\"], \"update\": [{\"id\": 1, \"text\": \
\"fact\"}], \"forget\": [1]}. Write each fact as a short standalone sentence. Use `update` when a known fact \
changed and `forget` when one is no longer true. Facts that should always be at hand in every conversation \
(the person's name, how they want to be addressed, their language, standing instructions such as \"always \
answer in metric units\") go in `profile` instead of `add`: {\"profile\": [\"fact\"]}. Use empty lists when \
there is nothing to keep.";

/// One finished exchange to distil.
#[derive(Clone, Debug)]
pub struct ArchiveJob {
    pub owner: MemoryScope,
    pub session_id: String,
    pub event_id: String,
    pub user_text: String,
    pub answer: String,
}

/// What the model answered.
#[derive(Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub(crate) struct Distilled {
    pub add: Vec<String>,
    /// Facts to keep and pin (always known in new private sessions).
    pub profile: Vec<String>,
    pub update: Vec<Revision>,
    pub forget: Vec<i64>,
}

#[derive(Debug, Deserialize, PartialEq)]
pub(crate) struct Revision {
    pub id: i64,
    pub text: String,
}

impl Distilled {
    /// Reads the JSON object in `answer` (tolerating text or code fences around it).
    pub(crate) fn parse(answer: &str) -> Option<Self> {
        let start = answer.find('{')?;
        let end = answer.rfind('}')?;
        serde_json::from_str(answer.get(start..=end)?).ok()
    }
}

/// A fact's comparable form: lowercase words without punctuation.
fn normal(text: &str) -> String {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

pub struct Archivist {
    tx: mpsc::Sender<ArchiveJob>,
}

struct Worker {
    store: Arc<dyn MemoryStore>,
    /// Pins the profile facts it proposes.
    profiles: Arc<dyn ProfileStore>,
    /// What the archivist's model calls cost.
    usage: Arc<dyn TurnStore>,
    llm: Arc<dyn Provider>,
    prices: Arc<PriceBook>,
}

impl Archivist {
    /// Starts the worker in `tracker`, asking `llm` (the worker tier's); it stops when `cancel`
    /// fires. Each call is priced by `prices` at the model that answered it.
    pub fn start(
        (store, usage, profiles): (Arc<dyn MemoryStore>, Arc<dyn TurnStore>, Arc<dyn ProfileStore>),
        llm: Arc<dyn Provider>,
        prices: Arc<PriceBook>,
        tracker: &TaskTracker,
        cancel: CancellationToken,
    ) -> Arc<Self> {
        let (tx, mut rx) = mpsc::channel::<ArchiveJob>(QUEUE);
        let worker = Worker { store, profiles, usage, llm, prices };
        tracker.spawn(async move {
            loop {
                let job = tokio::select! {
                    job = rx.recv() => match job { Some(job) => job, None => return },
                    _ = cancel.cancelled() => return,
                };
                let span = tracing::info_span!("archivist", event = %job.event_id);
                if let Err(e) = worker.distil(&job).instrument(span).await {
                    tracing::warn!(event = %job.event_id, error = %e, "archivist could not store what it found");
                }
            }
        });
        Arc::new(Self { tx })
    }

    /// Queues an exchange (skipping trivial ones); never waits.
    pub fn submit(&self, job: ArchiveJob) {
        if job.user_text.trim().chars().count() < MIN_CHARS {
            return;
        }
        if self.tx.try_send(job).is_err() {
            tracing::warn!("archivist queue full; an exchange was not distilled");
        }
    }
}

impl Worker {
    async fn distil(&self, job: &ArchiveJob) -> Result<(), StoreError> {
        let known = self.store.memory_search(&job.owner, &format!("{} {}", job.user_text, job.answer), 10).await?;
        let listing: Vec<String> = known.iter().map(|m| format!("[{}] {}", m.id, m.text)).collect();
        let req = ChatRequest {
            system: SYSTEM.into(),
            messages: vec![ChatMessage::User {
                content: format!(
                    "Known memories:\n{}\n\nExchange:\nUser: {}\nAssistant: {}",
                    if listing.is_empty() { "(none)".to_string() } else { listing.join("\n") },
                    job.user_text.chars().take(4_000).collect::<String>(),
                    job.answer.chars().take(4_000).collect::<String>(),
                ),
                name: None,
                images: Vec::new(),
            }],
            tools: Vec::new().into(),
            max_tokens: Some(500),
        };
        let asm = match crate::llm::complete(&*self.llm, &req).await {
            Ok(asm) => asm,
            Err(e) => {
                tracing::info!(error = %e, "archivist skipped an exchange: the model failed");
                return Ok(());
            }
        };
        let event_id = format!("{}:archivist", job.event_id);
        let ids = [job.owner.user_id.as_str(), job.session_id.as_str(), event_id.as_str()];
        let model = asm.model_or(self.llm.model());
        self.usage
            .usage_add(&UsageRecord::priced(&self.prices.get(model), "archivist", ids, model, &asm.usage))
            .await?;
        let Some(found) = Distilled::parse(&asm.text) else {
            tracing::info!("archivist answer was not the expected JSON; nothing stored");
            return Ok(());
        };
        self.apply(job, &known, found).await
    }

    /// Applies the model's answer: only memories it was shown can change; no fact twice.
    async fn apply(&self, job: &ArchiveJob, known: &[MemoryRow], found: Distilled) -> Result<(), StoreError> {
        let shown: HashSet<i64> = known.iter().map(|m| m.id).collect();
        let mut seen: HashSet<String> = known.iter().map(|m| normal(&m.text)).collect();
        for rev in found.update.iter().filter(|r| shown.contains(&r.id) && !r.text.trim().is_empty()) {
            self.store.memory_update(&job.owner, rev.id, rev.text.trim()).await?;
            seen.insert(normal(&rev.text));
        }
        for id in found.forget.iter().filter(|id| shown.contains(id)) {
            self.store.memory_forget(&job.owner, *id).await?;
        }
        let source = format!("archivist:{}", job.event_id);
        let mut added = 0;
        // Profile facts are pinned, and only in the person's own memory (never a group's).
        let personal = job.owner.scope.is_empty();
        let facts = found.profile.iter().map(|f| (f, personal)).chain(found.add.iter().map(|f| (f, false)));
        for (fact, pin) in facts.map(|(f, pin)| (f.trim(), pin)).filter(|(f, _)| !f.is_empty()) {
            if added == MAX_ADDS || !seen.insert(normal(fact)) {
                continue;
            }
            let row = self.store.memory_add(&job.owner, fact, Some(&source)).await?;
            if pin {
                self.profiles.memory_pin(&job.owner.user_id, row.id, true).await?;
            }
            added += 1;
        }
        tracing::info!(
            added,
            updated = found.update.len(),
            forgotten = found.forget.len(),
            "archivist distilled an exchange"
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_parse_with_noise_around_them() {
        let cases = [
            (r#"{"add": ["Likes tea"]}"#, Some(vec!["Likes tea"])),
            ("Sure!\n```json\n{\"add\": [\"Has a cat\"], \"forget\": []}\n```", Some(vec!["Has a cat"])),
            (r#"{"update": [{"id": 3, "text": "Lives in Porto"}]}"#, Some(vec![])),
            (r#"{"profile": ["Wants to be called Ada"], "add": []}"#, Some(vec![])),
            ("nothing to keep", None),
            ("{not json}", None),
        ];
        for (answer, want) in cases {
            let got = Distilled::parse(answer).map(|d| d.add);
            assert_eq!(got, want.map(|v| v.into_iter().map(String::from).collect::<Vec<_>>()), "{answer}");
        }
    }

    #[test]
    fn facts_compare_without_case_or_punctuation() {
        assert_eq!(normal("Alice's cat is called Tom."), normal("alice s cat is called tom"));
        assert_ne!(normal("Alice has a cat"), normal("Alice has a dog"));
    }
}
