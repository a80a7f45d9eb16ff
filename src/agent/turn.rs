//! The turn loop: model -> tools -> model ... -> final reply, with limits, stop and resume.

use super::approve::{approval_notice, outcome_text, Resumed};
use super::window::shrink;
use super::{dangling_results, SessionState};
use crate::config::LimitsConfig;
use crate::hooks::Hooks;
use crate::llm::{Assembled, ChatRequest, LlmError, Provider, StreamEvent, Usage};
use crate::permissions::Policy;
use crate::store::{
    ApprovalDecision, ApprovalRow, ApprovalStatus, InboxStatus, NewMessage, NewOutbox, OutboxRow, Role, Store,
    StoreError, TurnCommit, UsageRecord, UserRow,
};
use crate::tools::{ToolCtx, Tools};
use butler_channel::{ConversationKind, InboundEvent};
use futures::StreamExt;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Sees a turn's progress, to stream it to the user. Called often; must not block.
pub trait TurnObserver: Send {
    /// The whole reply text so far (not a delta).
    fn text(&mut self, full: &str);
    /// Tools now running (empty when none).
    fn tools(&mut self, names: &[String]);
}

/// USD per million tokens, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Prices {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

impl Prices {
    pub fn from_config(cfg: &crate::config::LlmConfig) -> Self {
        Self {
            input: cfg.input_price_per_mtok,
            output: cfg.output_price_per_mtok,
            cache_read: cfg.cache_read_price_per_mtok,
            cache_write: cfg.cache_write_price_per_mtok,
        }
    }

    /// The cost of `u` in USD. Providers report cached input separately from `input_tokens`.
    pub fn cost(&self, u: &Usage) -> f64 {
        (u.input_tokens as f64 * self.input
            + u.output_tokens as f64 * self.output
            + u.cache_read_tokens as f64 * self.cache_read
            + u.cache_write_tokens as f64 * self.cache_write)
            / 1e6
    }

    /// What one model call of `kind` cost, as the usage ledger stores it; `iterations` and
    /// `context_tokens` are 1 and 0 and a turn sets its own.
    pub fn record(&self, kind: &str, ids: [&str; 3], model: &str, u: &Usage) -> UsageRecord {
        let [user_id, session_id, event_id] = ids;
        UsageRecord {
            user_id: user_id.to_string(),
            session_id: session_id.to_string(),
            event_id: event_id.to_string(),
            model: model.to_string(),
            // The whole prompt, cached or not.
            input_tokens: (u.input_tokens + u.cache_read_tokens + u.cache_write_tokens) as i64,
            output_tokens: u.output_tokens as i64,
            cost_usd: self.cost(u),
            iterations: 1,
            kind: kind.into(),
            context_tokens: 0,
        }
    }
}

/// An observer for channels that cannot show progress.
pub struct NullObserver;

impl TurnObserver for NullObserver {
    fn text(&mut self, _full: &str) {}
    fn tools(&mut self, _names: &[String]) {}
}

/// Everything a turn needs that outlives it.
#[derive(Clone)]
pub struct Agent {
    pub store: Arc<dyn Store>,
    pub llm: Arc<dyn Provider>,
    pub tools: Tools,
    pub limits: LimitsConfig,
    pub max_tokens: u32,
    pub prices: Prices,
    pub recall_limit: usize,
    /// Users' workspaces live below this directory, one per user id.
    pub workspace_root: std::path::PathBuf,
    pub policy: Arc<Policy>,
    pub hooks: Arc<Hooks>,
    /// Nudged when an approval request's message was edited, so the edit goes out at once.
    pub deliverer: Arc<crate::outbox::Deliverer>,
    /// The model's context window in tokens (the request budget derives from it).
    pub context_window: u32,
    /// Recall relevant memories into each turn's user message.
    pub auto_recall: bool,
    pub recall_budget_tokens: usize,
}

/// How a turn begins.
#[derive(Clone, Debug)]
pub enum Start {
    /// A new message (or the re-run of one cut off by a crash).
    Message,
    /// A person answered an approval the session's turn was waiting for; `pending_left` other
    /// calls of that round still wait.
    Resume { approval: Box<ApprovalRow>, pending_left: usize },
}

pub struct TurnInput<'a> {
    pub session: &'a mut SessionState,
    pub event: &'a InboundEvent,
    pub user: &'a UserRow,
    /// `/stop`: end at the next safe point and say so.
    pub stop: CancellationToken,
    /// Shutdown past the grace period: stop now, commit nothing (the event is retried later).
    pub abort: CancellationToken,
    /// False when the event was claimed before (a retry or a re-run after a crash): only then
    /// can its message already be in the transcript.
    pub first_attempt: bool,
    pub start: Start,
    pub session_key: &'a str,
    /// The channel shows buttons (otherwise approval requests say which command answers them).
    pub buttons: bool,
    /// A heartbeat: deliver the answer only if it is not exactly [`QUIET`].
    pub quiet: bool,
}

/// What a heartbeat turn answers when nothing is worth saying (then nothing is delivered).
pub const QUIET: &str = "NOTHING_TO_REPORT";

#[derive(Debug, PartialEq)]
pub enum TurnOutcome {
    /// The turn ended; commit it with [`Agent::commit`] once streaming has stopped.
    Finished(Box<TurnCommit>),
    /// Aborted by shutdown; nothing committed, the event must be retried.
    Parked,
}

#[derive(Debug, thiserror::Error)]
pub enum TurnError {
    /// The store failed: the event stays in the inbox and is retried; the transcript holds
    /// whatever was recorded, and the retry resumes from there.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The idempotency key of the reply to an event.
pub fn reply_key(event_id: &str) -> String {
    format!("{event_id}:reply")
}

/// Why the loop ended, when it did not end with a plain answer.
enum Ending {
    Answer,
    Stopped,
    Limit,
    Failed(LlmError),
    /// Calls wait for a person's approval: the turn parks.
    Waiting(Vec<ApprovalRow>),
    /// A duplicate resume: nothing to do.
    Stale,
}

struct Progress {
    /// Text shown so far in this turn, across model calls.
    shown: String,
    usage: Usage,
    iterations: u32,
    /// Estimated tokens of the last request sent.
    context_tokens: usize,
    /// The turn's user message until it is stored.
    unsaved_user: Option<NewMessage>,
}

impl Progress {
    fn join(&self, more: &str) -> String {
        match (self.shown.is_empty(), more.is_empty()) {
            (true, _) => more.to_string(),
            (_, true) => self.shown.clone(),
            _ => format!("{}\n\n{more}", self.shown),
        }
    }
}

/// What the user sees for a model failure.
pub fn explain(e: &LlmError) -> String {
    match e {
        LlmError::NotConfigured => {
            "⚠️ Butler has no language model configured yet. Set OPENAI_API_KEY (and optionally \
             OPENAI_BASE_URL and BUTLER_MODEL), or ANTHROPIC_API_KEY, or the [llm] section of the config file, then \
             restart Butler."
                .to_string()
        }
        _ => format!("⚠️ {e}"),
    }
}

impl Agent {
    /// Runs one turn for `input.event`. Progress (tool rounds) is persisted as it happens; the
    /// ending is returned for the caller to commit.
    #[tracing::instrument(skip_all, fields(event = %input.event.id, session = %input.session.row.id))]
    pub async fn run(&self, input: TurnInput<'_>, obs: &mut dyn TurnObserver) -> Result<TurnOutcome, TurnError> {
        let TurnInput { session, event, user, stop, abort, first_attempt, start, session_key, buttons, quiet } = input;
        let sid = session.row.id.clone();
        let mut progress = Progress {
            shown: String::new(),
            usage: Usage::default(),
            iterations: 0,
            context_tokens: 0,
            unsaved_user: None,
        };
        let tool_ctx = ToolCtx {
            user: user.clone(),
            identity: event.actor.identity.clone(),
            session_id: sid.clone(),
            conversation: event.conversation.clone(),
            kind: event.kind,
            store: self.store.clone(),
            cancel: stop.child_token(),
            recall_limit: self.recall_limit,
            workspace: self.workspace_root.join(&user.id),
        };
        let mut skip_model = None;
        let mut recall = None;
        match start {
            Start::Message => {
                let fresh = self.start_or_resume(session, event, first_attempt, &mut progress).await?;
                if fresh {
                    recall = self.recall_block(&tool_ctx.memory_scope(), event.text().unwrap_or_default()).await?;
                }
            }
            Start::Resume { approval, pending_left } => {
                let (results, resumed) = self.resume_call(&tool_ctx, &session.history, &approval, pending_left).await?;
                let msgs = results.into_iter().map(|r| NewMessage::tool(r.call_id, r.content, r.is_error)).collect();
                self.append(session, &mut progress, msgs).await?;
                skip_model = match resumed {
                    Resumed::Continue => None,
                    Resumed::Waiting => Some(Ending::Waiting(vec![])),
                    Resumed::Stopped => Some(Ending::Stopped),
                    Resumed::Stale => Some(Ending::Stale),
                };
            }
        }
        let defs = self.tools.defs();
        let budget = self.budget();
        let mut compacted = false;

        let (ending, last_text) = loop {
            if let Some(ending) = skip_model.take() {
                break (ending, String::new());
            }
            if stop.is_cancelled() {
                break (Ending::Stopped, String::new());
            }
            if progress.iterations >= self.limits.max_iterations {
                break (Ending::Limit, String::new());
            }
            progress.iterations += 1;
            let mut req = ChatRequest {
                system: session.row.system_prompt.clone(),
                messages: self.request_messages(session, progress.unsaved_user.as_ref(), recall.as_deref()),
                tools: defs.clone(),
                max_tokens: Some(self.max_tokens),
            };
            let mut size = shrink(&mut req, budget);
            if size > budget && !compacted {
                // Clearing and collapsing were not enough: one summary checkpoint, then measure again.
                compacted = true;
                if self.compact(session, &user.id).await? {
                    req.messages = self.request_messages(session, progress.unsaved_user.as_ref(), recall.as_deref());
                    size = shrink(&mut req, budget);
                }
            }
            progress.context_tokens = size;
            let mut stream = tokio::select! {
                r = self.llm.stream(&req) => match r {
                    Ok(s) => s,
                    Err(LlmError::ContextTooLong(e)) if !compacted => {
                        // The model's own limit was hit: one forced checkpoint, then one retry.
                        compacted = true;
                        if !self.compact(session, &user.id).await? {
                            break (Ending::Failed(LlmError::ContextTooLong(e)), String::new());
                        }
                        progress.iterations -= 1;
                        continue;
                    }
                    Err(e) => break (Ending::Failed(e), String::new()),
                },
                _ = stop.cancelled() => break (Ending::Stopped, String::new()),
                _ = abort.cancelled() => return self.park(),
            };
            let mut asm = Assembled::default();
            let mut failed = None;
            let mut stopped = false;
            loop {
                tokio::select! {
                    ev = stream.next() => match ev {
                        Some(Ok(ev)) => {
                            asm.push(&ev);
                            if let StreamEvent::Text(_) = ev {
                                obs.text(&progress.join(&asm.text));
                            }
                        }
                        Some(Err(e)) => { failed = Some(e); break; }
                        None => break,
                    },
                    _ = stop.cancelled() => { stopped = true; break; }
                    _ = abort.cancelled() => return self.park(),
                }
            }
            add_usage(&mut progress.usage, &asm.usage);
            if let Some(e) = failed {
                break (Ending::Failed(e), asm.text);
            }
            if stopped {
                break (Ending::Stopped, asm.text);
            }
            if asm.tool_calls.is_empty() {
                break (Ending::Answer, asm.text);
            }
            // Record the calls before running them, so a crash mid-tools resumes correctly.
            let calls = asm.tool_calls.clone();
            let round = vec![NewMessage::assistant(asm.text.clone(), calls.clone())];
            self.append(session, &mut progress, round).await?;
            progress.shown = progress.join(&asm.text);
            obs.tools(&calls.iter().map(|c| c.name.clone()).collect::<Vec<_>>());
            let round = tokio::select! {
                r = self.tool_round(&tool_ctx, event, session_key, &calls) => r?,
                _ = abort.cancelled() => return self.park(),
            };
            obs.tools(&[]);
            let msgs = round.results.into_iter().map(|r| NewMessage::tool(r.call_id, r.content, r.is_error)).collect();
            self.append(session, &mut progress, msgs).await?;
            if !round.asks.is_empty() {
                break (Ending::Waiting(round.asks), String::new());
            }
        };
        if let Ending::Stale = ending {
            return Ok(TurnOutcome::Finished(Box::new(TurnCommit {
                inbox_id: event.id.0.clone(),
                inbox_status: InboxStatus::Done,
                session_id: None,
                messages: vec![],
                reply: None,
                usage: None,
                approvals: vec![],
                notices: vec![],
            })));
        }
        if let Ending::Waiting(asks) = ending {
            return Ok(self.waiting(event, user, &sid, progress, asks, buttons));
        }

        let note = match &ending {
            Ending::Answer => None,
            Ending::Stopped => Some("⏹ Stopped.".to_string()),
            Ending::Limit => Some(format!(
                "⚠️ I stopped after {} steps without finishing (limit: [limits] max_iterations).",
                self.limits.max_iterations
            )),
            Ending::Failed(e) => Some(explain(e)),
            Ending::Waiting(_) | Ending::Stale => None,
        };
        if let Ending::Failed(e) = &ending {
            tracing::warn!(error = %e, "model call failed");
        }
        let final_text = match &note {
            None => last_text.clone(),
            Some(n) if last_text.is_empty() => n.clone(),
            Some(n) => format!("{last_text}\n\n{n}"),
        };
        let mut reply = progress.join(&final_text).trim_end().to_string();
        if reply.is_empty() {
            reply = "(The model returned an empty answer.)".into();
        }
        // A heartbeat with nothing to say stays silent (its transcript and cost are still kept).
        let silent = quiet && last_text.trim() == QUIET && matches!(ending, Ending::Answer);
        let final_msg = NewMessage::assistant(final_text, vec![]);
        let usage = self.usage(user, &sid, event, &progress);
        let commit = TurnCommit {
            inbox_id: event.id.0.clone(),
            inbox_status: InboxStatus::Done,
            session_id: Some(sid),
            messages: progress.unsaved_user.take().into_iter().chain([final_msg]).collect(),
            reply: (!silent).then(|| NewOutbox {
                private_to: None,
                key: reply_key(&event.id.0),
                conversation: event.conversation.to_string(),
                text: reply,
                buttons: vec![],
                reply_to: event.quote_target(),
            }),
            usage: Some(usage),
            approvals: vec![],
            notices: vec![],
        };
        tracing::info!(
            iterations = progress.iterations,
            input_tokens = progress.usage.input_tokens,
            output_tokens = progress.usage.output_tokens,
            "turn finished"
        );
        Ok(TurnOutcome::Finished(Box::new(commit)))
    }

    /// Commits a finished turn (after its streaming has stopped) and keeps the session's cached
    /// transcript in step with the store.
    pub async fn commit(
        &self,
        session: &mut SessionState,
        commit: &TurnCommit,
    ) -> Result<Option<OutboxRow>, StoreError> {
        let reply = self.store.finish_event(commit).await?;
        session.history.extend(commit.messages.iter().cloned());
        session.trim(self.limits.history_messages.max(2));
        Ok(reply)
    }

    fn usage(&self, user: &UserRow, sid: &str, event: &InboundEvent, progress: &Progress) -> UsageRecord {
        let ids = [user.id.as_str(), sid, event.id.0.as_str()];
        UsageRecord {
            iterations: progress.iterations as i32,
            context_tokens: progress.context_tokens as i64,
            ..self.prices.record("turn", ids, self.llm.model(), &progress.usage)
        }
    }

    /// A turn parking on approvals: what was said so far is delivered, the approval requests go
    /// out with their buttons, and the event is done; the answers resume the turn later.
    fn waiting(
        &self,
        event: &InboundEvent,
        user: &UserRow,
        sid: &str,
        mut progress: Progress,
        asks: Vec<ApprovalRow>,
        buttons: bool,
    ) -> TurnOutcome {
        let text = match (progress.shown.trim(), asks.is_empty()) {
            ("", false) => "I need an approval before I go on.".to_string(),
            ("", true) => "Waiting for the other approvals.".to_string(),
            (shown, _) => shown.to_string(),
        };
        let asker = event.actor.name().to_string();
        let notices = asks.iter().map(|a| approval_notice(a, &asker, buttons)).collect();
        tracing::info!(approvals = asks.len(), "turn waits for approval");
        TurnOutcome::Finished(Box::new(TurnCommit {
            inbox_id: event.id.0.clone(),
            inbox_status: InboxStatus::Done,
            session_id: Some(sid.to_string()),
            messages: progress.unsaved_user.take().into_iter().collect(),
            reply: Some(NewOutbox {
                private_to: None,
                key: reply_key(&event.id.0),
                conversation: event.conversation.to_string(),
                text,
                buttons: vec![],
                reply_to: event.quote_target(),
            }),
            usage: Some(self.usage(user, sid, event, &progress)),
            approvals: asks,
            notices,
        }))
    }

    /// Closes calls a parked turn left waiting, because a new message came first: their
    /// approvals are cancelled (the requests say so) and each call gets a refusal result.
    async fn supersede_waiting(&self, session: &mut SessionState, event: &InboundEvent) -> Result<(), StoreError> {
        let fixes = dangling_results(&session.history);
        if fixes.is_empty() {
            return Ok(());
        }
        let by = event.actor.name().to_string();
        for approval in self.store.approvals_pending(&session.row.id).await? {
            let decision = ApprovalDecision {
                status: ApprovalStatus::Cancelled,
                scope: None,
                decided_by: by.clone(),
                message: outcome_text(
                    &approval,
                    ApprovalStatus::Cancelled,
                    None,
                    &format!("{by} (a new message came first)"),
                ),
            };
            if let Some(row) = self.store.approval_decide(&approval.id, &decision).await? {
                let audit = super::approve::decision_audit(&row, ApprovalStatus::Cancelled, None, &by);
                self.store.audit_add(&audit).await?;
                self.deliverer.wake();
            }
        }
        let msgs: Vec<NewMessage> = fixes
            .into_iter()
            .filter_map(|f| f.tool_call_id)
            .map(|id| NewMessage::tool(id, "not run: cancelled because a new message came first", true))
            .collect();
        self.store.messages_append(&session.row.id, &msgs).await?;
        session.history.extend(msgs);
        Ok(())
    }

    fn park(&self) -> Result<TurnOutcome, TurnError> {
        tracing::info!("turn parked by shutdown");
        Ok(TurnOutcome::Parked)
    }

    /// Persists `msgs` (preceded by the turn's user message if that is not stored yet) and adds
    /// them to the cached transcript.
    async fn append(
        &self,
        session: &mut SessionState,
        progress: &mut Progress,
        msgs: Vec<NewMessage>,
    ) -> Result<(), StoreError> {
        let msgs: Vec<NewMessage> = progress.unsaved_user.take().into_iter().chain(msgs).collect();
        if msgs.is_empty() {
            return Ok(());
        }
        self.store.messages_append(&session.row.id, &msgs).await?;
        session.history.extend(msgs);
        Ok(())
    }

    /// Prepares the user message (stored with the first tool round or the final commit, so a
    /// plain turn costs one write), or, when this event's message is already in the transcript
    /// (the turn is being re-run after a crash or a retry), repairs the transcript and restores
    /// the text shown so far.
    async fn start_or_resume(
        &self,
        session: &mut SessionState,
        event: &InboundEvent,
        first_attempt: bool,
        progress: &mut Progress,
    ) -> Result<bool, StoreError> {
        let eid = event.id.0.as_str();
        let found = session.history.iter().rposition(|m| m.event_id.as_deref() == Some(eid));
        let found = match found {
            Some(i) => Some(i),
            None if first_attempt => None,
            None if self.store.message_seq_for_event(&session.row.id, eid).await?.is_some() => {
                // In the store but outside the cached window: reload the tail.
                let row = session.row.clone();
                *session = SessionState::load(&*self.store, row, self.limits.history_messages).await?;
                session.history.iter().rposition(|m| m.event_id.as_deref() == Some(eid))
            }
            None => None,
        };
        match found {
            None => {
                self.supersede_waiting(session, event).await?;
                let text = event.text().unwrap_or_default();
                // In a group every speaker is named (the providers show the name to the model).
                let name = (event.kind == ConversationKind::Group).then(|| event.actor.name().to_string());
                let content = text.to_string();
                progress.unsaved_user = Some(NewMessage::user(content, name, Some(eid.to_string())));
                Ok(true)
            }
            Some(i) => {
                tracing::info!(event = eid, "resuming a turn cut off earlier");
                for m in &session.history[i + 1..] {
                    if m.role() == Role::Assistant && !m.content.is_empty() {
                        progress.shown = progress.join(&m.content);
                    }
                    if m.role() == Role::Assistant {
                        progress.iterations += 1;
                    }
                }
                let fixes = dangling_results(&session.history[i..]);
                self.append(session, progress, fixes).await?;
                Ok(false)
            }
        }
    }
}

fn add_usage(total: &mut Usage, u: &Usage) {
    total.input_tokens += u.input_tokens;
    total.output_tokens += u.output_tokens;
    total.cache_read_tokens += u.cache_read_tokens;
    total.cache_write_tokens += u.cache_write_tokens;
}
