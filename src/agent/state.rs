//! The state of one turn in flight (its input, what it has shown and spent, how it ended) and
//! the steps of a turn that need no more than that state: reading the model's stream, the
//! final reply, and the commits of a finished turn, of a turn that waits for a person and of
//! a turn with nothing to say.
//!
//! Nothing here may touch the store or a channel; the agent (turn.rs) does that.

use super::catalog::Catalog;
use super::input::{Tree, TurnOutcome, QUIET};
use super::narrow::Narrowing;
use super::progress::TurnObserver;
use super::storable;
use super::window::SessionState;
use crate::llm::{Assembled, LlmError, LlmStream, Prices, StreamEvent, ToolDef, Usage};
use crate::permissions::notice::Room;
use crate::store::{ApprovalRow, InboxStatus, NewMessage, NewOutbox, TurnCommit, TurnUsage, UserRow};
use crate::tools::{ToolCtx, Tools};
use butler_channel::InboundEvent;
use futures::StreamExt;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Why the loop ended, when it did not end with a plain answer.
pub(super) enum Ending {
    Answer,
    Stopped,
    Limit,
    Failed(LlmError),
    /// A spending limit was reached: the message names the limit and the spend.
    Budget(String),
    /// Calls wait for a person's approval: the turn parks.
    Waiting(Vec<ApprovalRow>),
    /// A duplicate resume: nothing to do.
    Stale,
    /// Shutdown past the grace period: nothing is committed.
    Parked,
}

#[derive(Default)]
pub(super) struct Progress {
    /// Text shown so far in this turn, across model calls.
    pub(super) shown: String,
    /// Tokens of every call so far, whichever model answered.
    pub(super) usage: Usage,
    /// The same by the model that answered, in the order they first answered.
    pub(super) spent: Vec<Spent>,
    pub(super) iterations: u32,
    /// Estimated tokens of the last request sent.
    pub(super) context_tokens: usize,
    /// The turn's user message until it is stored.
    pub(super) unsaved_user: Option<NewMessage>,
    /// Images the person sent with this turn's message (sent to the model, never stored).
    pub(super) images: Vec<crate::llm::Image>,
    /// Lines for the person about their attachments ("I heard: ..."), leading the reply.
    pub(super) notes: Vec<String>,
}

/// What one model answered in a turn so far, and its prices.
pub(super) struct Spent {
    pub(super) model: String,
    pub(super) prices: Prices,
    pub(super) usage: Usage,
}

impl Progress {
    /// Counts one call's usage under `model`, the model that answered it, at `prices`.
    pub(super) fn spend(&mut self, model: &str, prices: Prices, u: &Usage) {
        add_usage(&mut self.usage, u);
        match self.spent.iter_mut().find(|s| s.model == model) {
            Some(s) => add_usage(&mut s.usage, u),
            None => self.spent.push(Spent { model: model.to_string(), prices, usage: *u }),
        }
    }

    /// What the turn has cost so far in USD, each call at its answering model's prices.
    pub(crate) fn cost_usd(&self) -> f64 {
        self.spent.iter().map(|s| s.prices.cost(&s.usage)).sum()
    }

    pub(super) fn join(&self, more: &str) -> String {
        match (self.shown.is_empty(), more.is_empty()) {
            (true, _) => more.to_string(),
            (_, true) => self.shown.clone(),
            _ => format!("{}\n\n{more}", self.shown),
        }
    }
}

/// One turn in flight: its input, what it has shown and spent so far, and how it goes on.
pub(super) struct Turn<'a> {
    pub(super) session: &'a mut SessionState,
    pub(super) event: &'a InboundEvent,
    pub(super) user: &'a UserRow,
    pub(super) sid: String,
    pub(super) stop: CancellationToken,
    pub(super) abort: CancellationToken,
    pub(super) session_key: &'a str,
    /// What the conversation's channel can show (buttons, length) for approval requests.
    pub(super) room: Room,
    pub(super) quiet: bool,
    pub(super) tool_ctx: ToolCtx,
    pub(super) defs: Arc<[ToolDef]>,
    /// The tools of this turn (the built-ins and the MCP servers' at its start).
    pub(super) tools: Tools,
    /// The `allowed-tools` of the skills loaded in this turn (`defs` is narrowed to them).
    pub(super) narrowing: Narrowing,
    /// When the tools' schemas exceed `[mcp] max_schema_tokens`: the searchable tools and
    /// those unlocked so far (`defs` carries only the unlocked ones and the built-ins).
    pub(super) catalog: Option<Catalog>,
    pub(super) progress: Progress,
    /// Memories recalled for a fresh message (into its user message).
    pub(super) recall: Option<String>,
    /// How a resumed turn ends without asking the model (a stop, other approvals, a duplicate).
    pub(super) skip_model: Option<Ending>,
    /// The one summary checkpoint a turn may make was made.
    pub(super) compacted: bool,
    /// Its place in a tree of delegations, and the tree's spend and budget.
    pub(super) tree: Tree,
}

/// What a finished turn stores and delivers.
pub(super) struct FinalReply {
    /// The last answer (with the note of how the turn ended), stored as the assistant message.
    pub(super) stored: String,
    /// Everything shown in this turn, delivered as the reply.
    pub(super) shown: String,
    /// A heartbeat with nothing to say: nothing is delivered.
    pub(super) silent: bool,
}

/// What is left to do once the loop ended.
pub(super) enum Settled {
    /// Nothing is committed (shutdown).
    Done(TurnOutcome),
    /// Calls wait for a person.
    Waiting(Vec<ApprovalRow>),
    /// A duplicate resume: only the event is marked done.
    Stale,
    /// A reply, with a note saying how the turn ended unless it ended with an answer.
    Reply(Option<String>),
}

/// Streams the model's answer, showing the text as it grows; every event is made storable
/// first. Returns the answer so far and, when the stream did not simply end, why it stopped.
pub(super) async fn read_stream(
    turn: &Turn<'_>,
    mut stream: LlmStream,
    obs: &mut dyn TurnObserver,
) -> (Assembled, Option<Ending>) {
    let mut asm = Assembled::default();
    loop {
        tokio::select! {
            ev = stream.next() => match ev {
                Some(Ok(ev)) => {
                    let ev = storable::event(ev);
                    asm.push(&ev);
                    if let StreamEvent::Text(_) = ev {
                        obs.text(&turn.progress.join(&asm.text));
                    }
                }
                Some(Err(e)) => return (asm, Some(Ending::Failed(e))),
                None => return (asm, None),
            },
            _ = turn.stop.cancelled() => return (asm, Some(Ending::Stopped)),
            _ = turn.abort.cancelled() => return (asm, Some(Ending::Parked)),
        }
    }
}

/// What the turn stores and delivers: the last answer with the note, after what was shown
/// before; a heartbeat answering exactly [`QUIET`] stays silent (its transcript and cost are
/// still kept).
pub(super) fn final_reply(turn: &Turn<'_>, note: Option<String>, last_text: String) -> FinalReply {
    let silent = turn.quiet && note.is_none() && last_text.trim() == QUIET;
    let stored = match note {
        None => last_text,
        Some(n) if last_text.is_empty() => n,
        Some(n) => format!("{last_text}\n\n{n}"),
    };
    let mut shown = turn.progress.join(&stored).trim_end().to_string();
    if !turn.progress.notes.is_empty() {
        shown = format!("{}\n\n{shown}", turn.progress.notes.join("\n")).trim_end().to_string();
    }
    if shown.is_empty() {
        shown = "(The model returned an empty answer.)".into();
    }
    FinalReply { stored, shown, silent }
}

/// The commit of a turn with nothing to say: the event is done, nothing else changes.
pub(super) fn done_only(event: &InboundEvent) -> TurnCommit {
    TurnCommit {
        inbox_id: event.id.0.clone(),
        inbox_status: InboxStatus::Done,
        session_id: None,
        messages: vec![],
        reply: None,
        usage: None,
        approvals: vec![],
        notices: vec![],
        fence: None,
    }
}

pub(super) fn add_usage(total: &mut Usage, u: &Usage) {
    total.input_tokens += u.input_tokens;
    total.output_tokens += u.output_tokens;
    total.cache_read_tokens += u.cache_read_tokens;
    total.cache_write_tokens += u.cache_write_tokens;
}

/// The finished turn's commit: its messages, its reply (unless silent), its usage.
pub(super) fn finished_commit(mut turn: Turn<'_>, reply: FinalReply, usage: TurnUsage) -> TurnCommit {
    let event = turn.event;
    let final_msg = NewMessage::assistant(reply.stored, vec![]);
    let progress = &mut turn.progress;
    tracing::info!(
        iterations = progress.iterations,
        input_tokens = progress.usage.input_tokens,
        output_tokens = progress.usage.output_tokens,
        "turn finished"
    );
    TurnCommit {
        inbox_id: event.id.0.clone(),
        inbox_status: InboxStatus::Done,
        session_id: Some(turn.sid),
        messages: progress.unsaved_user.take().into_iter().chain([final_msg]).collect(),
        reply: (!reply.silent).then(|| NewOutbox::reply(event, reply.shown)),
        usage: Some(usage),
        approvals: vec![],
        notices: vec![],
        fence: None,
    }
}

/// A turn parking on approvals: what was said so far is delivered, the approval requests go
/// out with their buttons (`notices`, with the files of long details), and the event is done;
/// the answers resume the turn later.
pub(super) fn waiting_commit(
    mut turn: Turn<'_>,
    asks: Vec<ApprovalRow>,
    notices: Vec<NewOutbox>,
    usage: TurnUsage,
) -> TurnOutcome {
    let event = turn.event;
    let text = match (turn.progress.shown.trim(), asks.is_empty()) {
        ("", false) if asks.iter().all(|a| a.kind == crate::store::ApprovalKind::Question) => {
            "I have a question for you.".to_string()
        }
        ("", false) => "I need an approval before I go on.".to_string(),
        ("", true) => "Waiting for the other approvals.".to_string(),
        (shown, _) => shown.to_string(),
    };
    tracing::info!(approvals = asks.len(), "turn waits for approval");
    TurnOutcome::Finished(Box::new(TurnCommit {
        inbox_id: event.id.0.clone(),
        inbox_status: InboxStatus::Done,
        session_id: Some(turn.sid.clone()),
        messages: turn.progress.unsaved_user.take().into_iter().collect(),
        reply: Some(NewOutbox::reply(event, text)),
        usage: Some(usage),
        approvals: asks,
        notices,
        fence: None,
    }))
}
