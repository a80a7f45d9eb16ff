//! Trigger decisions: what a verified webhook event (`EventBody::Trigger` on the `hook` channel)
//! turns into. The first `[[triggers.rules]]` entry that matches decides; else, when the source
//! has `classify = true`, the model picks (cached by content hash); else the source's `default`.
//! - drop: recorded with the reason, nothing else;
//! - notify: a template rendered from the event, posted to a target conversation;
//! - agent: a turn in the target user's session, the payload (cut to a budget) as context.
//!
//! Every decision carries its reason in [`Verdict::audit`]. This module never runs tools and never
//! sends anything itself; the only model call is the classifier's one word. Signatures and rate
//! limits are checked before an event is stored (channels/webhook), not here.

mod classify;
mod rules;
mod template;

pub use classify::{ClassifyError, Payer, CACHE_ENTRIES};
pub use rules::{lookup, matches, wildcard};
pub use template::render;

use template::cut;

use super::access::Access;
use super::verdict::{Decision, Verdict};
use crate::config::{TriggerAction, TriggerConfig, TriggerRule};
use crate::ids::WEB_CHANNEL;
use crate::llm::{PriceBook, Provider};
use crate::session::{session_key, Job, JobKind};
use crate::store::{now_ms, ConversationRow, StoreError, TurnStore, UserStore};
use butler_channel::{Actor, ConversationKind, ConversationRef, EventBody, Identity, InboundEvent};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;

/// The usage user of classifier calls made for no particular user.
const SYSTEM_PAYER: &str = "system";

/// What the agent is asked when a source or rule gives no `instructions`.
const DEFAULT_INSTRUCTIONS: &str =
    "A webhook event arrived. Look at it and tell me briefly what happened and whether anything needs my attention.";

pub struct Triggers {
    sources: HashMap<String, TriggerConfig>,
    /// Who the sources' owners are, and the conversations triggers deliver to.
    store: Arc<dyn UserStore>,
    access: Arc<Access>,
    classifier: classify::Classifier,
}

/// The action chosen for an event, the rule that chose it (if any) and why.
struct Choice<'a> {
    action: TriggerAction,
    rule: Option<&'a TriggerRule>,
    reason: String,
}

impl Triggers {
    /// `llm` is the classifier's model (the `worker` tier when configured); its calls are
    /// priced with `prices`.
    pub fn new(
        cfg: &[TriggerConfig],
        (store, usage): (Arc<dyn UserStore>, Arc<dyn TurnStore>),
        llm: Arc<dyn Provider>,
        prices: Arc<PriceBook>,
        access: Arc<Access>,
    ) -> Self {
        let sources = cfg.iter().map(|t| (t.name.clone(), t.clone())).collect();
        let classifier = classify::Classifier::new(llm, prices, usage);
        Self { sources, store, access, classifier }
    }

    /// The decision for one trigger event, with its reason recorded.
    #[tracing::instrument(skip_all, fields(event = %event.id))]
    pub async fn decide(&self, event: &InboundEvent) -> Result<Verdict, StoreError> {
        let EventBody::Trigger { source, text, payload } = &event.body else {
            return Ok(Verdict::drop("not a trigger event"));
        };
        let Some(cfg) = self.sources.get(source) else {
            return Ok(Verdict::drop(format!("no [[triggers]] source is named `{source}` any more")));
        };
        let view = view(source, text, payload);
        let choice = self.choose(cfg, &view, event).await?;
        tracing::debug!(source, action = ?choice.action, reason = %choice.reason, "trigger decided");
        match choice.action {
            TriggerAction::Drop => Ok(Verdict::drop(choice.reason)),
            TriggerAction::Notify => self.notify(cfg, &choice, &view).await,
            TriggerAction::Agent => self.agent(cfg, &choice, event, text, payload).await,
        }
    }

    async fn choose<'a>(
        &self,
        cfg: &'a TriggerConfig,
        view: &Value,
        event: &InboundEvent,
    ) -> Result<Choice<'a>, StoreError> {
        if let Some((i, rule)) = rules::first_match(&cfg.rules, view) {
            return Ok(Choice { action: rule.action, rule: Some(rule), reason: rules::describe(i, rule) });
        }
        let fallback = |why: String| Choice { action: cfg.default, rule: None, reason: why };
        if !cfg.classify {
            return Ok(fallback(format!("no rule matched; source default {}", name(cfg.default))));
        }
        let summary = view["text"].as_str().unwrap_or_default();
        let payer = self.payer(cfg).await?;
        let payer = Payer { user_id: &payer, event_id: &event.id.0 };
        Ok(match self.classifier.classify(&cfg.name, summary, &view["payload"], payer).await {
            Ok((action, cached)) => Choice {
                action,
                rule: None,
                reason: format!(
                    "no rule matched; classifier{}: {}",
                    if cached { " (cached)" } else { "" },
                    name(action)
                ),
            },
            Err(e) => {
                tracing::warn!(source = %cfg.name, error = %e, "trigger classifier failed; using the source default");
                fallback(format!("no rule matched; classifier failed ({e}); source default {}", name(cfg.default)))
            }
        })
    }

    /// Whom the classifier's cost is recorded under: the user behind the source's `target`
    /// when it is an identity that may use Butler, else `system`.
    async fn payer(&self, cfg: &TriggerConfig) -> Result<String, StoreError> {
        let Some(identity) = cfg.target.as_deref().and_then(|t| t.parse::<Identity>().ok()) else {
            return Ok(SYSTEM_PAYER.to_string());
        };
        Ok(self.access.user_for(&*self.store, &identity).await?.map_or_else(|| SYSTEM_PAYER.to_string(), |u| u.id))
    }

    async fn notify(&self, cfg: &TriggerConfig, choice: &Choice<'_>, view: &Value) -> Result<Verdict, StoreError> {
        let target = choice.rule.and_then(|r| r.target.as_deref()).or(cfg.target.as_deref());
        let Some(conversation) = target.and_then(|t| t.parse::<ConversationRef>().ok()) else {
            return Ok(Verdict::drop(format!("{}; notify has no target conversation", choice.reason)));
        };
        let template = choice.rule.and_then(|r| r.template.as_deref()).or(cfg.template.as_deref());
        let mut text = template.map(|t| template::render(t, view)).unwrap_or_default();
        if text.trim().is_empty() {
            text = view["text"].as_str().unwrap_or_default().to_string();
        }
        if conversation.channel == WEB_CHANNEL {
            // So the page lists it: the alert is for whoever configured the trigger, the local
            // operator (the owner's terminal, one person with their web page and linked
            // accounts). A conversation someone already uses keeps its owner.
            let owner = Identity::new("cli", crate::triage::access::LOCAL_USER).to_string();
            self.ensure_web(&conversation, &owner).await?;
        }
        let reason = format!("{} -> {conversation}", choice.reason);
        Ok(Verdict::recorded(Decision::Notify { conversation, text }, "notify", reason))
    }

    async fn agent(
        &self,
        cfg: &TriggerConfig,
        choice: &Choice<'_>,
        event: &InboundEvent,
        summary: &str,
        payload: &Value,
    ) -> Result<Verdict, StoreError> {
        let rule = choice.rule;
        let target = rule.and_then(|r| r.target.as_deref()).or(cfg.target.as_deref());
        let Some(identity) = target.and_then(|t| t.parse::<Identity>().ok()) else {
            return Ok(Verdict::drop(format!("{}; agent has no target identity", choice.reason)));
        };
        let Some(conversation) = rule.and_then(|r| r.conversation.clone()).or_else(|| cfg.conversation.clone()) else {
            return Ok(Verdict::drop(format!("{}; agent has no target conversation", choice.reason)));
        };
        let Some(user) = self.access.user_for(&*self.store, &identity).await? else {
            return Ok(Verdict::drop(format!("{}; {identity} may not use Butler", choice.reason)));
        };
        if conversation.channel == WEB_CHANNEL {
            let owner = self.ensure_web(&conversation, &identity.to_string()).await?;
            if owner != identity.to_string() {
                return Ok(Verdict::drop(format!(
                    "{}; {conversation} belongs to {owner}, not to {identity}",
                    choice.reason
                )));
            }
        }
        let instructions = rule.and_then(|r| r.instructions.as_deref()).or(cfg.instructions.as_deref());
        let text = agent_text(
            instructions.unwrap_or(DEFAULT_INSTRUCTIONS),
            &cfg.name,
            summary,
            payload,
            cfg.max_payload_chars,
        );
        let rewritten = InboundEvent {
            id: event.id.clone(),
            actor: Actor::new(identity.clone()),
            conversation: conversation.clone(),
            kind: ConversationKind::Direct,
            addressed: true,
            reply_to: None,
            message_id: None,
            body: EventBody::Message { text },
            at_ms: event.at_ms,
            attachments: Vec::new(),
        };
        let key = session_key(&rewritten);
        let reason = format!("{} -> turn for {identity} in {conversation}", choice.reason);
        let job = Job { event: rewritten, user, kind: JobKind::Turn, attempt: 1, quiet: false };
        Ok(Verdict::recorded(Decision::Session { key, job: Box::new(job) }, "agent", reason))
    }

    /// Creates web conversation `conv` owned by `owner` unless it exists; returns its owner.
    async fn ensure_web(&self, conv: &ConversationRef, owner: &str) -> Result<String, StoreError> {
        let row = ConversationRow {
            id: conv.to_string(),
            kind: ConversationKind::Direct,
            owner: owner.to_string(),
            created_ms: now_ms(),
        };
        Ok(self.store.conversation_ensure(&row).await?.owner)
    }
}

fn name(action: TriggerAction) -> &'static str {
    match action {
        TriggerAction::Drop => "drop",
        TriggerAction::Notify => "notify",
        TriggerAction::Agent => "agent",
    }
}

/// What rules and templates see: `headers.*`, `body.*`, plus `source`, `text` (the one-line
/// summary) and `payload` (headers and body together).
fn view(source: &str, text: &str, payload: &Value) -> Value {
    json!({
        "source": source,
        "text": text,
        "headers": payload.get("headers").cloned().unwrap_or(Value::Null),
        "body": payload.get("body").cloned().unwrap_or(Value::Null),
        "payload": payload,
    })
}

/// The agent's message: the instructions, then the event with its payload cut to `max` characters.
fn agent_text(instructions: &str, source: &str, summary: &str, payload: &Value, max: usize) -> String {
    let json = payload.to_string();
    let (shown, was_cut) = cut(&json, max);
    let mut text =
        format!("{}\n\nTrigger `{source}`: {summary}\nPayload (JSON):\n```json\n{shown}", instructions.trim());
    if was_cut {
        let total = json.chars().count();
        text.push_str(&format!("\n```\n[payload cut: the first {max} of {total} characters are shown]"));
    } else {
        text.push_str("\n```");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_budget() {
        let payload = json!({"body": {"text": "ä".repeat(50)}});
        let full = agent_text("Check it.", "github", "github push", &payload, 10_000);
        assert!(full.starts_with("Check it.\n\nTrigger `github`: github push\nPayload (JSON):\n```json\n{"));
        assert!(full.ends_with("}}\n```") && !full.contains("payload cut"));
        let short = agent_text("Check it.", "github", "github push", &payload, 20);
        let json = payload.to_string();
        let total = json.chars().count();
        let first20: String = json.chars().take(20).collect();
        assert!(short.contains(&format!("```json\n{first20}\n```")), "{short}");
        assert!(short.ends_with(&format!("[payload cut: the first 20 of {total} characters are shown]")));
        assert_eq!(cut("äöü", 2), ("äö", true));
        assert_eq!(cut("äöü", 3), ("äöü", false));
        assert_eq!(cut("", 0), ("", false));
    }
}
