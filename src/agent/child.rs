//! Child agents: the `delegate` calls of a tool round run as turns of their own, each in a
//! fresh session (the task and the archetype's prompt, never the parent's transcript), on its
//! tier's model, with its share of the parent's tools, under its own iteration and time limits.
//! Foreground children run concurrently (at most `max_parallel`) and their answers become the
//! calls' results; a child that asks a person parks its parent too, and the answer resumes the
//! chain from the top. Background children run as tracked tasks and report through the inbox.
//!
//! Every child is a `delegations` row linked to the parent's call, and its transcript is stored
//! as it goes, so a crash never loses a finished child's answer nor runs a child twice. Nothing
//! here may wait for a person or send to a channel.

use super::admit::admit_helper;
use super::context::{dangling_results, INTERRUPTED};
use super::exec::ToolResult;
use super::input::{Start, Tree, TurnInput};
use super::state::{Ending, Turn};
use super::stores::AgentStores;
use super::tasks::{child_event, child_event_id, child_key, deliver, recorded_result};
use super::window::SessionState;
use crate::clock::now_ms;
use crate::delegate::{child_prompt, plan, DelegateArgs, Plan};
use crate::llm::ToolCall;
use crate::store::{
    ApprovalRow, AuditRow, DelegationRow, DelegationStatus, DelegationUpdate, NewMessage, NewSession, StoreError,
    TurnUsage, UserRow,
};
use crate::tools::Tools;
use butler_channel::InboundEvent;
use futures::{FutureExt, StreamExt};
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// What children need of the turn that started them (owned, so background ones can keep it).
#[derive(Clone)]
pub(super) struct Parent {
    pub event: InboundEvent,
    pub user: UserRow,
    pub session_id: String,
    pub session_key: String,
    pub tools: Tools,
    pub tree: Tree,
    pub stop: CancellationToken,
    pub abort: CancellationToken,
    pub room: crate::permissions::notice::Room,
}

impl Parent {
    pub(super) fn of(turn: &Turn<'_>) -> Self {
        Self {
            event: turn.event.clone(),
            user: turn.user.clone(),
            session_id: turn.sid.clone(),
            session_key: turn.session_key.to_string(),
            tools: turn.tools.clone(),
            tree: turn.tree.clone(),
            stop: turn.stop.clone(),
            abort: turn.abort.clone(),
            room: turn.room,
        }
    }
}

/// How one child turn ended.
enum ChildEnd {
    /// An answer; `reason` is set when a limit stopped it (the text is then partial).
    Answer { text: String, status: DelegationStatus, reason: Option<String> },
    /// It waits for a person: these approvals go out with the parent's commit.
    Waiting(Vec<ApprovalRow>),
    /// Shutdown: nothing more is recorded; the parent parks too.
    Parked,
}

/// What a round's delegate calls came to.
#[derive(Default)]
pub(super) struct ChildRound {
    pub results: Vec<ToolResult>,
    pub asks: Vec<ApprovalRow>,
    pub parked: bool,
}

/// How one child turn ran: its ending, its answer (or what it showed), what it cost.
pub(super) struct ChildTurn {
    pub ending: Ending,
    pub text: String,
    pub usage: TurnUsage,
}

/// What a stored child turn ends with: given the ending and the text, the final assistant
/// message to store after the turn (`None`: only the task, when it waits).
pub(super) type Finish<'f> = &'f (dyn Fn(&Ending, &str) -> Option<String> + Send + Sync);

/// What children need of the agent that runs them. The agent implements it; a trait, so that
/// this file never imports the turn loop that runs children.
#[async_trait::async_trait]
pub(super) trait ChildHost: Send + Sync {
    fn store(&self) -> &AgentStores;
    /// The assistant's name, `[agent.delegation]` and the archetypes.
    fn config(&self) -> &crate::config::AgentConfig;
    fn tiers(&self) -> &crate::llm::Tiers;
    fn running(&self) -> &Arc<crate::delegate::Running>;
    /// An owned handle, for background children.
    fn owned(&self) -> Arc<dyn ChildHost>;
    /// Runs one child turn on `tier` with only `tools` to its end; stores its messages.
    async fn child_turn(
        &self,
        child: (&str, &Tools),
        input: TurnInput<'_>,
        finish: Finish<'_>,
    ) -> Result<ChildTurn, StoreError>;
}

/// The child-running part of an agent.
pub(super) struct Children<'a> {
    pub(super) agent: &'a dyn ChildHost,
}

impl Children<'_> {
    /// Runs a round's delegate calls: background ones start and answer at once, foreground ones
    /// concurrently (at most `max_parallel`, a failing one never stopping the others), each
    /// getting a result or waiting for a person.
    pub(super) async fn run(&self, parent: &Parent, calls: Vec<(ToolCall, Value)>) -> Result<ChildRound, StoreError> {
        let max = self.agent.config().delegation.max_parallel.max(1);
        let runs = calls.into_iter().map(|(call, args)| {
            let parent = parent.clone();
            async move {
                let id = call.id.clone();
                let name = call.name.clone();
                match std::panic::AssertUnwindSafe(self.start(&parent, call, args)).catch_unwind().await {
                    Ok(r) => r,
                    Err(_) => Ok(Outcome::Result(ToolResult::error(id, format!("tool `{name}` crashed")))),
                }
            }
        });
        let mut out = ChildRound::default();
        let mut stream = futures::stream::iter(runs).buffer_unordered(max);
        while let Some(done) = stream.next().await {
            match done? {
                Outcome::Result(r) => out.results.push(r),
                Outcome::Waiting(asks) => out.asks.extend(asks),
                Outcome::Parked => out.parked = true,
            }
        }
        Ok(out)
    }

    /// Plans one call and starts its child: a result at once (a bad call, a background task),
    /// or the child's answer.
    async fn start(&self, parent: &Parent, call: ToolCall, args: Value) -> Result<Outcome, StoreError> {
        let refuse = |text: String| Ok(Outcome::Result(ToolResult::error(call.id.clone(), text)));
        let args: DelegateArgs = match serde_json::from_value(args) {
            Ok(a) => a,
            Err(e) => return refuse(format!("invalid arguments: {e}")),
        };
        let names = super::catalog::shareable(&parent.tools);
        let cfg = self.agent.config();
        let plan = match plan(cfg, args, parent.tree.depth, &names) {
            Ok(p) => p,
            Err(e) => return refuse(e.to_string()),
        };
        let who = (&parent.tree, parent.user.id.as_str());
        let admitted = admit_helper(self.agent.running(), self.agent.store(), cfg, who, plan.background).await?;
        let slot = match admitted {
            Ok(slot) => slot,
            Err(text) => return refuse(text),
        };
        let (row, mut state) = match self.open(parent, &call, &plan).await? {
            Opened::New(new) => *new,
            // The call has its child already (a re-run): its recorded outcome stands.
            Opened::Existing(row) => return Ok(Outcome::Result(recorded_result(&row))),
        };
        if let Some(slot) = slot {
            let started = format!(
                "Started background task {id}. Its result will arrive in this conversation as a new message; \
                 /tasks lists tasks and /cancel {id} stops it.",
                id = row.id
            );
            let agent = self.agent.owned();
            let parent = parent.clone();
            let running = self.agent.running().clone();
            running.chains().keep(&parent.tree.chain);
            running.clone().spawn(async move {
                Children { agent: &*agent }.background(parent, row, state, &running).await;
                drop(slot);
            });
            return Ok(Outcome::Result(ToolResult {
                call_id: call.id,
                content: started,
                is_error: false,
                images: vec![],
            }));
        }
        let end = self.drive(parent, &row, &mut state, Start::Message, parent.stop.child_token()).await?;
        self.conclude(parent, &row, &call.id, end).await
    }

    /// Creates the child's session and its `delegations` row (or finds the row a re-run left).
    async fn open(&self, parent: &Parent, call: &ToolCall, plan: &Plan) -> Result<Opened, StoreError> {
        let store = self.agent.store();
        if let Some(row) = store.delegations.delegation_find(&parent.session_id, Some(&call.id)).await? {
            return Ok(Opened::Existing(Box::new(row)));
        }
        let id = format!("t-{}", &uuid::Uuid::new_v4().simple().to_string()[..10]);
        let choice = self.agent.tiers().get(&plan.tier);
        let session = store
            .sessions
            .session_open(&NewSession {
                id: uuid::Uuid::new_v4().to_string(),
                key: child_key(&id),
                user_id: parent.user.id.clone(),
                conversation: parent.event.conversation.to_string(),
                system_prompt: child_prompt(&self.agent.config().name, plan),
            })
            .await?;
        let row = DelegationRow {
            id,
            parent_session_id: parent.session_id.clone(),
            parent_call_id: call.id.clone(),
            child_session_id: session.id.clone(),
            root_session_id: parent.tree.root_session.clone().unwrap_or_else(|| parent.session_id.clone()),
            user_id: parent.user.id.clone(),
            requester: parent.event.actor.identity.to_string(),
            conversation: parent.event.conversation.to_string(),
            group_chat: parent.event.kind == butler_channel::ConversationKind::Group,
            depth: parent.tree.depth as i32 + 1,
            archetype: plan.archetype.clone(),
            tier: choice.tier.clone(),
            model: choice.provider.model().to_string(),
            tools: plan.tools.clone(),
            task: plan.task.clone(),
            background: plan.background,
            status: DelegationStatus::Running,
            result: None,
            reason: None,
            cost_usd: 0.0,
            input_tokens: 0,
            output_tokens: 0,
            created_ms: now_ms(),
            finished_ms: None,
            delivered_ms: None,
            origin: parent.tree.chain.origin().to_string(),
            worker: self.agent.running().worker().to_string(),
        };
        let row = store.delegations.delegation_start(&row).await?;
        tracing::info!(task = %row.id, tier = %row.tier, model = %row.model, depth = row.depth, background = row.background, "child agent started");
        Ok(Opened::New(Box::new((row, SessionState { row: session, history: vec![], base_seq: 1, summary: None }))))
    }

    /// Runs (or resumes) one child's turn to its end, under its time limit and `stop`.
    /// Boxed (and `Send`) because the chain recurses: a resumed child resumes its own child.
    fn drive<'s>(
        &'s self,
        parent: &'s Parent,
        row: &'s DelegationRow,
        state: &'s mut SessionState,
        start: Start,
        stop: CancellationToken,
    ) -> futures::future::BoxFuture<'s, Result<ChildEnd, StoreError>> {
        Box::pin(async move {
            let cfg = &self.agent.config().delegation;
            let tools = parent.tools.only(&row.tools);
            let event = child_event(row, &parent.event);
            let _registered = self.agent.running().register(&row.id, stop.clone());
            let timed_out = Arc::new(AtomicBool::new(false));
            let timer = {
                let (stop, timed_out) = (stop.clone(), timed_out.clone());
                let limit = Duration::from_secs(cfg.timeout_secs);
                async move {
                    tokio::time::sleep(limit).await;
                    timed_out.store(true, Ordering::SeqCst);
                    stop.cancel();
                    std::future::pending::<()>().await
                }
            };
            let tree = Tree {
                depth: row.depth as u32,
                root_session: Some(row.root_session_id.clone()),
                chain: parent.tree.chain.clone(),
                budget: parent.tree.budget,
                background: parent.tree.background,
            };
            let input = TurnInput {
                session: state,
                event: &event,
                user: &parent.user,
                stop: stop.clone(),
                abort: parent.abort.clone(),
                first_attempt: matches!(start, Start::Message) && row.status == DelegationStatus::Running,
                start,
                session_key: &parent.session_key,
                room: parent.room,
                quiet: false,
                tree: Some(tree),
            };
            let finish = |ending: &Ending, text: &str| match ending {
                Ending::Waiting(_) => None,
                ending => {
                    let (_, _, note) = self.why(ending, &timed_out, parent);
                    Some(match &note {
                        Some(n) if text.is_empty() => n.clone(),
                        Some(n) => format!("{text}\n\n{n}"),
                        None => text.to_string(),
                    })
                }
            };
            let work = async {
                let ran = self.agent.child_turn((&row.tier, &tools), input, &finish).await?;
                let end = match ran.ending {
                    Ending::Waiting(asks) => ChildEnd::Waiting(asks),
                    Ending::Parked => ChildEnd::Parked,
                    ending => {
                        let (status, reason, _) = self.why(&ending, &timed_out, parent);
                        ChildEnd::Answer { text: ran.text, status, reason }
                    }
                };
                Ok::<_, StoreError>((end, ran.usage))
            };
            let (end, usage) = tokio::select! {
                r = work => r?,
                _ = timer => unreachable!("the timer never ends"),
            };
            if !matches!(end, ChildEnd::Parked) {
                self.record_usage(row, usage).await?;
            }
            Ok(end)
        })
    }

    /// Why a child ended, as its status, the reason the parent is told and the note stored.
    fn why(
        &self,
        ending: &Ending,
        timed_out: &AtomicBool,
        parent: &Parent,
    ) -> (DelegationStatus, Option<String>, Option<String>) {
        let limits = &self.agent.config().delegation;
        match ending {
            Ending::Answer | Ending::Stale => (DelegationStatus::Done, None, None),
            Ending::Stopped if timed_out.load(Ordering::SeqCst) => {
                let r = format!("its time limit of {} s ([agent.delegation] timeout_secs)", limits.timeout_secs);
                (DelegationStatus::Stopped, Some(r.clone()), Some(format!("(stopped by {r})")))
            }
            Ending::Stopped if parent.tree.background && parent.tree.chain.halted().is_some() => {
                let by = parent.tree.chain.halted().unwrap_or_default();
                (DelegationStatus::Cancelled, Some(by.clone()), Some(format!("(stopped by {by})")))
            }
            Ending::Stopped if parent.stop.is_cancelled() => {
                (DelegationStatus::Cancelled, Some("/stop".into()), Some("(stopped by /stop)".into()))
            }
            Ending::Stopped => (DelegationStatus::Cancelled, Some("/cancel".into()), Some("(cancelled)".into())),
            Ending::Limit => {
                let r =
                    format!("its limit of {} model calls ([agent.delegation] max_iterations)", limits.max_iterations);
                (DelegationStatus::Stopped, Some(r.clone()), Some(format!("(stopped by {r})")))
            }
            Ending::Budget(msg) => (DelegationStatus::Stopped, Some(msg.clone()), Some(msg.clone())),
            Ending::Failed(e) => (DelegationStatus::Failed, Some(e.to_string()), Some(format!("(failed: {e})"))),
            Ending::Waiting(_) | Ending::Parked => (DelegationStatus::Running, None, None),
        }
    }

    /// Records a child's usage (kind `delegate`, under its own session) and adds it to its row.
    async fn record_usage(&self, row: &DelegationRow, usage: TurnUsage) -> Result<(), StoreError> {
        for mut r in usage.rows.into_iter().filter(|r| r.iterations > 0 || r.input_tokens > 0) {
            r.kind = "delegate".into();
            r.event_id = child_event_id(&row.id);
            self.agent.store().turns.usage_add(&r).await?;
        }
        self.agent.running().days().committed(&row.user_id, usage.cost_usd);
        let update = DelegationUpdate {
            status: DelegationStatus::Running,
            result: None,
            reason: None,
            cost_usd: usage.cost_usd,
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
        };
        self.agent.store().delegations.delegation_update(&row.id, &update).await?;
        Ok(())
    }

    /// Records how a foreground child ended and turns it into its call's outcome.
    async fn conclude(
        &self,
        parent: &Parent,
        row: &DelegationRow,
        call_id: &str,
        end: ChildEnd,
    ) -> Result<Outcome, StoreError> {
        match end {
            ChildEnd::Parked => Ok(Outcome::Parked),
            ChildEnd::Waiting(asks) => {
                self.set_status(row, DelegationStatus::Waiting, None, None).await?;
                Ok(Outcome::Waiting(asks))
            }
            ChildEnd::Answer { text, status, reason } => {
                let ended = self.set_status(row, status, Some(text), reason).await?.unwrap_or_else(|| row.clone());
                self.audit(parent, &ended).await?;
                let mut result = recorded_result(&ended);
                result.call_id = call_id.to_string();
                Ok(Outcome::Result(result))
            }
        }
    }

    async fn set_status(
        &self,
        row: &DelegationRow,
        status: DelegationStatus,
        result: Option<String>,
        reason: Option<String>,
    ) -> Result<Option<DelegationRow>, StoreError> {
        let update = DelegationUpdate::to(status, result, reason.as_deref());
        self.agent.store().delegations.delegation_update(&row.id, &update).await
    }

    /// The audit row of an ended child: archetype, tier, model, tools, outcome.
    async fn audit(&self, parent: &Parent, row: &DelegationRow) -> Result<(), StoreError> {
        let reason = format!(
            "task {} depth {} archetype {} tier {} model {} tools [{}] cost ${:.4}{}",
            row.id,
            row.depth,
            row.archetype.as_deref().unwrap_or("-"),
            row.tier,
            row.model,
            row.tools.join(", "),
            row.cost_usd,
            row.reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default()
        );
        self.agent
            .store()
            .audit
            .audit_add(&AuditRow {
                at_ms: now_ms(),
                actor: row.requester.clone(),
                user_id: parent.user.id.clone(),
                session_id: row.parent_session_id.clone(),
                tool: crate::delegate::DELEGATE_TOOL.into(),
                args_hash: row.id.clone(),
                outcome: row.status.as_str().into(),
                reason,
            })
            .await
    }

    /// A background child: runs to its end (a call that would ask a person is refused: nobody
    /// is waiting for it), records the outcome and hands the result to the parent's inbox once,
    /// with its chain's totals; a halted chain's task reports nothing (no turn follows it).
    async fn background(
        &self,
        mut parent: Parent,
        row: DelegationRow,
        mut state: SessionState,
        running: &crate::delegate::Running,
    ) {
        // `/cancel` stops it (through the registry), and so does halting its chain (`/stop`, or
        // `/cancel` of the chain); shutdown only parks it, so the next start reports it as
        // interrupted rather than cancelled. It spends from its message's chain.
        let stop = parent.tree.chain.halt_token().child_token();
        parent.stop = CancellationToken::new();
        parent.abort = running.shutdown_token();
        parent.tree.background = true;
        let mut start = Start::Message;
        let ended = loop {
            let end = match self.drive(&parent, &row, &mut state, start, stop.clone()).await {
                Ok(end) => end,
                Err(e) => {
                    tracing::warn!(task = %row.id, error = %e, "background task failed on the store");
                    break ChildEnd::Answer {
                        text: String::new(),
                        status: DelegationStatus::Failed,
                        reason: Some(e.to_string()),
                    };
                }
            };
            let ChildEnd::Waiting(asks) = end else { break end };
            let refusals: Vec<NewMessage> = asks
                .iter()
                .map(|a| {
                    NewMessage::tool(
                        a.tool_call_id.clone(),
                        "not run: a background task cannot ask for approval; run it in the foreground",
                        true,
                    )
                })
                .collect();
            if self.agent.store().sessions.messages_append(&state.row.id, &refusals).await.is_err() {
                break ChildEnd::Parked;
            }
            state.history.extend(refusals);
            start = Start::Message;
        };
        let ChildEnd::Answer { text, status, reason } = ended else { return };
        let ended = match self.set_status(&row, status, Some(text), reason).await {
            Ok(r) => r.unwrap_or(row),
            Err(e) => {
                tracing::warn!(task = %row.id, error = %e, "could not record the background task's end");
                return;
            }
        };
        if let Err(e) = self.audit(&parent, &ended).await {
            tracing::warn!(task = %ended.id, error = %e, "could not audit the background task");
        }
        let chain = &parent.tree.chain;
        if chain.halted().is_some() {
            if let Err(e) = self.agent.store().delegations.delegation_delivered(&ended.id).await {
                tracing::warn!(task = %ended.id, error = %e, "could not mark the halted task's report as not needed");
            }
            return;
        }
        running.chains().report_pending(chain, &ended.id);
        if let Err(e) = deliver(self.agent.store().reports(), &ended, Some(chain.totals())).await {
            tracing::warn!(task = %ended.id, error = %e, "background result not handed over; it is at next start");
        }
    }

    /// After a crash, the results of delegate calls the parent's transcript left without one:
    /// a finished child's recorded answer (never re-run), or "interrupted" once for a child that
    /// was cut off.
    pub(super) async fn settle_dangling(
        &self,
        session_id: &str,
        fixes: Vec<NewMessage>,
    ) -> Result<Vec<NewMessage>, StoreError> {
        let mut out = Vec::with_capacity(fixes.len());
        for fix in fixes {
            let Some(call_id) = fix.tool_call_id.clone() else { continue };
            let Some(row) = self.agent.store().delegations.delegation_find(session_id, Some(&call_id)).await? else {
                out.push(fix);
                continue;
            };
            let row = if row.status.is_open() {
                let text = Some(INTERRUPTED.to_string());
                let reason = Some("interrupted by a restart".to_string());
                self.set_status(&row, DelegationStatus::Interrupted, text, reason).await?.unwrap_or(row)
            } else {
                row
            };
            let r = recorded_result(&row);
            out.push(NewMessage::tool(call_id, r.content, r.is_error));
        }
        Ok(out)
    }

    /// A person answered an approval asked inside a descendant: resumes the chain of children
    /// from this turn down to it. Returns the parent call's result once the direct child ended,
    /// or the approvals it waits for now.
    pub(super) async fn resume(
        &self,
        turn: &Turn<'_>,
        approval: &ApprovalRow,
        pending_left: usize,
    ) -> Result<Option<Outcome>, StoreError> {
        let store = self.agent.store();
        // Walk up from the asking child to this turn's direct child.
        let mut row = match store.delegations.delegation_find(&approval.session_id, None).await? {
            Some(r) => r,
            None => return Ok(None),
        };
        for _ in 0..16 {
            if row.parent_session_id == turn.sid {
                break;
            }
            row = match store.delegations.delegation_find(&row.parent_session_id, None).await? {
                Some(r) => r,
                None => return Ok(None),
            };
        }
        let waiting = dangling_results(&turn.session.history);
        if row.parent_session_id != turn.sid
            || !row.status.is_open()
            || !waiting.iter().any(|m| m.tool_call_id.as_deref() == Some(row.parent_call_id.as_str()))
        {
            return Ok(None);
        }
        let Some(session) = store.sessions.session_active(&child_key(&row.id)).await? else { return Ok(None) };
        let mut state = SessionState::load(&*store.summaries, session).await?;
        let parent = Parent::of(turn);
        self.set_status(&row, DelegationStatus::Running, None, None).await?;
        let start = Start::Resume { approval: Box::new(approval.clone()), pending_left };
        let end = self.drive(&parent, &row, &mut state, start, parent.stop.child_token()).await?;
        let call_id = row.parent_call_id.clone();
        self.conclude(&parent, &row, &call_id, end).await.map(Some)
    }
}

/// A delegate call's child: new, or the one a re-run of the call found.
enum Opened {
    New(Box<(DelegationRow, SessionState)>),
    Existing(Box<DelegationRow>),
}

/// One delegate call's outcome in its round.
pub(super) enum Outcome {
    Result(ToolResult),
    Waiting(Vec<ApprovalRow>),
    Parked,
}
