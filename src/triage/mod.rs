//! Triage: the one decision point every inbound event passes. Who is speaking (identity ->
//! user, access), is it for Butler (DM, mention, reply, command), is it a button click, a
//! command handled without the model, or work for a session.
//!
//! Triage must never call the LLM and never run a tool; it only decides and answers commands.

mod access;
mod commands;

pub use access::Access;
pub use commands::{parse_command, Command};

use crate::session::{session_key, Job, JobKind, Sessions};
use crate::store::{Store, StoreError, UserRow};
use butler_channel::{ConversationKind, EventBody, InboundEvent};
use std::sync::Arc;

/// What to do with an event.
#[derive(Debug)]
pub enum Decision {
    /// Not for Butler (another bot, a group message not addressed to it): end it quietly.
    Drop { reason: &'static str },
    /// Answer at once with this text, no session involved.
    Reply { text: String },
    /// Handled, nothing to say.
    Done,
    /// Work for the session `key`.
    Session { key: String, job: Box<Job> },
}

#[derive(Clone)]
pub struct Triage {
    pub store: Arc<dyn Store>,
    pub access: Arc<Access>,
    pub sessions: Sessions,
    /// The model name shown by /status.
    pub model: String,
}

impl Triage {
    #[tracing::instrument(skip_all, fields(event = %event.id, actor = %event.actor.identity))]
    pub async fn decide(&self, event: &InboundEvent) -> Result<Decision, StoreError> {
        if event.actor.is_bot {
            return Ok(Decision::Drop { reason: "from a bot" });
        }
        if event.kind == ConversationKind::Group && !event.addressed {
            return Ok(Decision::Drop { reason: "group message not addressed to Butler" });
        }
        let user = match self.access.resolve(&*self.store, &event.actor).await? {
            Ok(user) => user,
            Err(Some(refusal)) => return Ok(Decision::Reply { text: refusal }),
            Err(None) => return Ok(Decision::Drop { reason: "unknown user, already told" }),
        };
        let key = session_key(event);
        match &event.body {
            EventBody::Action { action, .. } => Ok(self.action(&key, action)),
            EventBody::Message { text } | EventBody::Trigger { text, .. } => match parse_command(text) {
                Some(cmd) => self.command(cmd, event, user, key).await,
                None => Ok(Decision::Session {
                    key,
                    job: Box::new(Job { event: event.clone(), user, kind: JobKind::Turn, attempt: 1 }),
                }),
            },
        }
    }

    fn action(&self, key: &str, action: &str) -> Decision {
        if let Some(turn_id) = action.strip_prefix("stop:") {
            return if self.sessions.stop(key, Some(turn_id)) {
                Decision::Done
            } else {
                Decision::Reply { text: "That reply has already finished.".into() }
            };
        }
        Decision::Reply { text: "That button no longer does anything.".into() }
    }

    async fn command(
        &self,
        cmd: Command,
        event: &InboundEvent,
        user: UserRow,
        key: String,
    ) -> Result<Decision, StoreError> {
        let text = match cmd {
            Command::Help => commands::HELP.to_string(),
            Command::New => {
                self.sessions.stop(&key, None);
                return Ok(Decision::Session {
                    key,
                    job: Box::new(Job { event: event.clone(), user, kind: JobKind::Reset, attempt: 1 }),
                });
            }
            Command::Stop => {
                if self.sessions.stop(&key, None) {
                    return Ok(Decision::Done);
                }
                "Nothing is running.".to_string()
            }
            Command::Status => self.status(&key, &user).await?,
            Command::WhoAmI => format!(
                "You are `{}` (user `{}`, role {}, time zone {}).",
                event.actor.identity,
                user.id,
                user.role.as_str(),
                user.timezone
            ),
            Command::Unknown => {
                return Ok(Decision::Session {
                    key,
                    job: Box::new(Job { event: event.clone(), user, kind: JobKind::Turn, attempt: 1 }),
                })
            }
        };
        Ok(Decision::Reply { text })
    }

    async fn status(&self, key: &str, user: &UserRow) -> Result<String, StoreError> {
        let session = self.store.session_active(key).await?;
        let since = commands::start_of_day_ms(&user.timezone);
        let usage = self.store.usage_since(&user.id, since).await?;
        let running = if self.sessions.is_running(key) { "a turn is running" } else { "idle" };
        Ok(format!(
            "Session: {} ({running})\nModel: {}\nToday: {} turns, {} tokens in, {} tokens out, ${:.4}",
            session.map_or_else(|| "none yet".to_string(), |s| format!("`{}`", &s.id[..8.min(s.id.len())])),
            if self.model.is_empty() { "not configured" } else { &self.model },
            usage.turns,
            usage.input_tokens,
            usage.output_tokens,
            usage.cost_usd
        ))
    }
}
