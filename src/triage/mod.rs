//! Triage: the one decision point every inbound event passes. Who is speaking (identity ->
//! user, access), is it for Butler (DM, mention, reply, command), is it a button click, a
//! command handled without the model, or work for a session.
//!
//! Triage must never run a tool or an agent turn; it only decides and answers commands. The one
//! model call it may make is the optional trigger classifier (short, cached, with a timeout).

pub mod access;
mod answer;
mod approvals;
mod commands;
mod conversations;
mod scheduled;
mod stores;
mod tasks;
pub mod triggers;
mod verdict;

pub use access::Access;
pub use approvals::expiry_event;
pub use commands::{parse_command, Command, MemoryCommand, PairCommand, HELP};
pub use stores::TriageStores;
pub use triggers::Triggers;
pub use verdict::{Decision, Verdict};

use crate::config::{GroupSession, Respond};
use crate::ids::{HOOK_CHANNEL, SCHEDULE_SOURCE};
use crate::session::{session_key, Job, JobKind, Sessions};
use crate::store::StoreError;
use access::Admission;
use answer::Answers;
use approvals::Approvals;
use butler_channel::{ConversationKind, EventBody, InboundEvent};
use scheduled::ScheduledEvents;
use std::sync::Arc;

/// What [`Triage`] is built from.
pub struct TriageParts {
    pub store: TriageStores,
    pub access: Arc<Access>,
    pub sessions: Sessions,
    pub triggers: Arc<Triggers>,
    /// What `/tools` lists: the agent's own tools and the MCP servers.
    pub tools: crate::mcp::ToolsOverview,
    /// The model name shown by /status.
    pub model: String,
    /// Default time zone for users approved through pairing.
    pub timezone: String,
    /// Told when an approval's message was edited, so the edit goes out at once.
    pub deliverer: Arc<crate::outbox::Deliverer>,
    /// Scheduled jobs (`/schedules`).
    pub schedules: Arc<crate::schedule::Schedules>,
    /// Child agents running in this process (`/cancel`).
    pub running: Arc<crate::delegate::Running>,
    /// What `/usage` reports.
    pub usage: crate::usage::Usage,
}

#[derive(Clone)]
pub struct Triage {
    store: TriageStores,
    access: Arc<Access>,
    sessions: Sessions,
    triggers: Arc<Triggers>,
    /// Decides about the events of due jobs.
    scheduled: Arc<ScheduledEvents>,
    /// Button clicks on approval requests.
    approvals: Approvals,
    /// Commands answered without the model.
    answers: Answers,
}

impl Triage {
    pub fn new(parts: TriageParts) -> Self {
        let TriageParts {
            store,
            access,
            sessions,
            triggers,
            tools,
            model,
            timezone,
            deliverer,
            schedules,
            running,
            usage,
        } = parts;
        let scheduled = Arc::new(ScheduledEvents::new(store.clone(), access.clone()));
        let approvals = Approvals::new(store.clone(), access.clone(), deliverer);
        let answers = Answers {
            store: store.clone(),
            access: access.clone(),
            sessions: sessions.clone(),
            schedules,
            approvals: approvals.clone(),
            tools,
            model,
            timezone,
            tasks: tasks::Tasks { store: store.clone(), running },
            usage,
            conversations: conversations::Conversations { store: store.transcripts.clone() },
        };
        Self { store, access, sessions, triggers, scheduled, approvals, answers }
    }

    #[tracing::instrument(skip_all, fields(event = %event.id, actor = %event.actor.identity))]
    pub async fn decide(&self, event: &InboundEvent) -> Result<Verdict, StoreError> {
        if event.channel() == HOOK_CHANNEL {
            return self.triggers.decide(event).await;
        }
        if event.actor.is_bot {
            return Ok(Verdict::drop("from a bot"));
        }
        if let EventBody::Trigger { source, .. } = &event.body {
            if source == SCHEDULE_SOURCE {
                return self.scheduled.decide(event).await;
            }
        }
        // Approval answers are checked against the request's approvers, not general access.
        if let EventBody::Action { action, .. } = &event.body {
            if let Some(rest) = action.strip_prefix("ap:") {
                return self.approvals.approval_answer(event, rest).await;
            }
        }
        if let Some(verdict) = self.approvals.message_answer(event).await? {
            return Ok(verdict);
        }
        let group = (event.kind == ConversationKind::Group).then(|| self.access.group(&event.conversation)).flatten();
        let respond_all = group.is_some_and(|g| g.respond == Respond::All);
        if event.kind == ConversationKind::Group && !event.addressed && !respond_all {
            return Ok(Verdict::drop("group message not addressed to Butler"));
        }
        let command = match &event.body {
            EventBody::Message { text } => parse_command(text),
            _ => None,
        };
        // `/link CODE` is how a new account joins its user, so it is heard before access.
        if let Some(Command::Link(Some(code))) = &command {
            return self.answers.redeem_link(event, code).await;
        }
        let user = match self.access.admit((&*self.store.users, &*self.store.codes), event).await? {
            Admission::User(user) => user,
            Admission::Answer { text, kind, reason } => {
                return Ok(Verdict::recorded(Decision::Reply { text }, kind, reason))
            }
            Admission::Silent { reason } => return Ok(Verdict::drop(reason)),
        };
        let per_speaker = group.is_some_and(|g| g.session == GroupSession::PerSpeaker);
        let key = match (event.kind, per_speaker) {
            (ConversationKind::Group, true) => format!("{}:{}", session_key(event), event.actor.identity),
            _ => session_key(event),
        };
        // A question waiting for this person here: their message (not a command) is the answer.
        if let (EventBody::Message { text }, None) = (&event.body, &command) {
            if let Some(verdict) = self.approvals.question_answer(event, text).await? {
                return Ok(verdict);
            }
        }
        let job = |kind| Box::new(Job { event: event.clone(), user: user.clone(), kind, attempt: 1, quiet: false });
        match (&event.body, command) {
            (EventBody::Action { action, .. }, _) => Ok(Verdict::plain(self.action(&key, action))),
            (_, Some(Command::Unknown) | None) => {
                Ok(Verdict::plain(Decision::Session { key, job: job(JobKind::Turn) }))
            }
            (_, Some(Command::New)) => {
                self.sessions.stop(&key, None);
                Ok(Verdict::plain(Decision::Session { key, job: job(JobKind::Reset) }))
            }
            (_, Some(Command::Compact)) => Ok(Verdict::plain(Decision::Session { key, job: job(JobKind::Compact) })),
            (_, Some(Command::Resume(n))) => match self.answers.conversations.pick(n, event, &user, &key).await? {
                conversations::Pick::Reopen { session_id, label } => {
                    // As for /new: the running turn stops, so the switch is not queued behind it.
                    self.sessions.stop(&key, None);
                    let job = job(JobKind::Reopen { session_id, label });
                    Ok(Verdict::plain(Decision::Session { key, job }))
                }
                conversations::Pick::Answer(text) => Ok(Verdict::plain(Decision::Reply { text })),
            },
            (_, Some(cmd)) => self.answers.command(cmd, event, &user, &key).await,
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
}
