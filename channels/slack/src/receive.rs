//! What happens to each thing Slack sends, whichever way it came (HTTP or Socket Mode):
//! map it to an event, name the sender, hand it to [`Ingress::accept`], and only then tell the
//! transport to acknowledge (or, when the event could not be made durable, not to, so Slack
//! delivers it again).
//!
//! Nothing here may acknowledge before `accept` returned `Ok`, or do slow work before it:
//! the only call before it is a cached users.info lookup bounded by a short timeout.

use crate::inbound::{events_api, Inbound};
use crate::interact::{command, interaction, Command};
use crate::render::escape;
use crate::Shared;
use butler_channel::{now_ms, Accepted, ConversationKind, InboundEvent, Ingress, IngressError};
use serde_json::{json, Value};
use std::time::Duration;

/// How long a users.info lookup may delay an acknowledgement.
const NAME_LOOKUP: Duration = Duration::from_millis(1500);

/// Acknowledge, with this body if any.
#[derive(Debug, PartialEq)]
pub enum Reply {
    Empty,
    Json(Value),
}

/// Do not acknowledge as success.
#[derive(Debug)]
pub enum Refusal {
    /// Could not be stored: let Slack deliver it again (HTTP 503, no Socket Mode ack).
    Unavailable,
    /// Malformed: Slack should not retry (HTTP 400; acknowledged over Socket Mode).
    Bad(String),
}

impl Shared {
    /// A user's display name, from a small cache or users.info (bounded by [`NAME_LOOKUP`]).
    async fn name_of(&self, user: &str) -> Option<String> {
        if let Some(name) = self.names.lock().unwrap_or_else(|p| p.into_inner()).get(user) {
            return name.clone();
        }
        let found = match tokio::time::timeout(NAME_LOOKUP, self.api.user_name(user)).await {
            Ok(Ok(name)) => name,
            Ok(Err(e)) => {
                tracing::debug!(error = %e, "users.info failed; the sender is shown by id");
                return None;
            }
            Err(_) => return None,
        };
        let mut names = self.names.lock().unwrap_or_else(|p| p.into_inner());
        if names.len() >= 5_000 {
            names.clear();
        }
        names.insert(user.to_string(), found.clone());
        found
    }

    async fn store(&self, ingress: &dyn Ingress, event: InboundEvent) -> Result<Accepted, Refusal> {
        let id = event.id.0.clone();
        match ingress.accept(event).await {
            Ok(outcome) => {
                tracing::debug!(event = %id, ?outcome, "Slack event stored");
                Ok(outcome)
            }
            Err(IngressError::Unavailable(e)) => {
                tracing::warn!(event = %id, error = %e, "Slack event could not be stored; Slack will retry");
                Err(Refusal::Unavailable)
            }
            Err(IngressError::Invalid(e)) => {
                tracing::warn!(event = %id, error = %e, "Slack event refused by the ingress");
                Err(Refusal::Bad(e))
            }
        }
    }

    /// An Events API payload (the HTTP body, or a Socket Mode `events_api` envelope's payload).
    pub async fn on_events(&self, ingress: &dyn Ingress, body: &[u8]) -> Result<Reply, Refusal> {
        let mapped = events_api(body, &self.me, &self.threads).map_err(Refusal::Bad)?;
        let mut event = match mapped {
            Inbound::Challenge(c) => return Ok(Reply::Json(json!({ "challenge": c }))),
            Inbound::Skip(why) => {
                tracing::debug!(why, "Slack event skipped");
                return Ok(Reply::Empty);
            }
            Inbound::Event(e) => *e,
        };
        if !event.actor.is_bot {
            event.actor.display_name = self.name_of(&event.actor.identity.user_id).await;
        }
        let working = (event.addressed && !event.actor.is_bot)
            .then(|| Some((event.conversation.clone(), event.message_id.clone()?)))
            .flatten();
        if self.store(ingress, event).await? == Accepted::New {
            if let Some((conversation, ts)) = working {
                self.mark_working(&conversation, ts);
            }
        }
        Ok(Reply::Empty)
    }

    /// A `block_actions` (or other) interaction payload, as JSON.
    pub async fn on_interaction(&self, ingress: &dyn Ingress, payload: &[u8]) -> Result<Reply, Refusal> {
        let Some(mut event) = interaction(payload, now_ms()).map_err(Refusal::Bad)? else {
            return Ok(Reply::Empty);
        };
        if let Some(name) = self.name_of(&event.actor.identity.user_id).await {
            event.actor.display_name = Some(name);
        }
        self.store(ingress, event).await?;
        Ok(Reply::Empty)
    }

    /// A slash command: stored as a message whose answer is posted in the channel; the reply
    /// is the ephemeral acknowledgement.
    pub async fn on_command(&self, ingress: &dyn Ingress, c: Command) -> Result<Reply, Refusal> {
        if c.text.trim().is_empty() {
            let text = format!("Tell me what you need: `{} <your request>`", escape(&c.command));
            return Ok(Reply::Json(json!({"response_type": "ephemeral", "text": text})));
        }
        let mut event = command(&c, now_ms()).map_err(Refusal::Bad)?;
        if let Some(name) = self.name_of(&c.user_id).await {
            event.actor.display_name = Some(name);
        }
        let place = if event.kind == ConversationKind::Direct { "here" } else { "in this channel" };
        self.store(ingress, event).await?;
        let text = format!("⏳ Working on “{}”; the answer will appear {place}.", escape(c.text.trim()));
        Ok(Reply::Json(json!({"response_type": "ephemeral", "text": text})))
    }
}
