//! The turn loop: model -> tools -> model ... -> final reply, with limits, stop and resume.
//!
//! [`Agent::run`] is "the path of one message" in five steps: `begin` (the user message, or the
//! transcript repaired after a crash, or the approved call of a resumed turn), `loop_until_answer`
//! (model call, shrink or compact on overflow, tool round, again), `settle` (how the turn ended:
//! an answer, a stop, a limit, a failure, approvals to wait for), `final_reply` (what is stored
//! and what is delivered) and `build_commit`. Nothing here may send to a channel or wait for a
//! person.

use super::admit::{admit_call, halted_report, refused, root_tree, worst_case, Admission, RootParts};
use super::approve::{Resumed, ToolRound};
use super::catalog::Catalog;
use super::child::{Children, Outcome, Parent};
use super::context::dangling_results;
use super::exec::ToolResult;
use super::input::{Start, TurnError, TurnInput, TurnOutcome};
use super::narrow::Narrowing;
use super::notices::approval_notices;
use super::progress::{Nudge, TurnObserver};
use super::state::{
    done_only, final_reply, finished_commit, read_stream, waiting_commit, Ending, Progress, Settled, Spent, Turn,
};
use super::storable;
use super::stores::AgentStores;
use super::window::{shrink, SessionState, Window};
use crate::config::{AgentConfig, Config, LimitsConfig};
use crate::delegate::Running;
use crate::hooks::Hooks;
use crate::llm::{Assembled, ChatRequest, LlmError, PriceBook, Provider, Tiers, ToolCall};
use crate::permissions::Policy;
use crate::skills::{Skills, SKILL_TOOL};
use crate::store::{ApprovalStatus, NewMessage, OutboxRow, StoreError, TurnCommit, TurnUsage, UsageRecord};
use crate::tools::{ToolCtx, ToolSource, Tools};
use std::sync::Arc;

/// Everything a turn needs that outlives it. Built once by [`Agent::new`].
#[derive(Clone)]
pub struct Agent {
    pub(super) store: AgentStores,
    /// The model of the turns: the `chat` tier, which is `[llm]` unless configured.
    llm: Arc<dyn Provider>,
    /// Every model tier (children and background work run on them).
    pub(crate) tiers: Tiers,
    /// The built-in tools; each turn adds what `tool_source` offers then.
    tools: Tools,
    tool_source: Option<Arc<dyn ToolSource>>,
    /// The live skills catalog: its section of a new session's system prompt, and the
    /// `allowed-tools` of the skills a turn loads.
    skills: Arc<Skills>,
    pub(super) limits: LimitsConfig,
    max_tokens: u32,
    /// Each call is priced at the prices of the model that answered it.
    prices: Arc<PriceBook>,
    recall_limit: usize,
    /// Users' workspaces live below this directory, one per user id.
    workspace_root: std::path::PathBuf,
    policy: Arc<Policy>,
    /// Run by the session actor (session start and end) as well.
    pub(crate) hooks: Arc<Hooks>,
    /// Nudged when an approval request's message was edited, so the edit goes out at once.
    pub(super) nudge: Arc<dyn Nudge>,
    /// The model's context window in tokens (the request budget derives from it).
    context_window: u32,
    /// Recall relevant memories into each turn's user message.
    auto_recall: bool,
    recall_budget_tokens: usize,
    /// Above this many schema tokens a turn offers `tool_search` instead of every tool.
    max_schema_tokens: usize,
    /// The assistant's name, `[agent.delegation]` and the archetypes (children's plans).
    delegation: Arc<AgentConfig>,
    /// The children running in this process (`/cancel`, background tasks).
    running: Arc<Running>,
    /// Fetches and reads the files people attach.
    media: Arc<crate::media::Media>,
    /// The turn's model reads images (`[llm] vision` of the `chat` tier).
    vision: bool,
}

/// The services an [`Agent`] calls, besides what it reads from the config.
pub(crate) struct AgentParts {
    pub store: AgentStores,
    /// The model tiers; turns run on `chat`, compaction on `worker`.
    pub tiers: Tiers,
    pub tools: Tools,
    pub policy: Arc<Policy>,
    pub hooks: Arc<Hooks>,
    /// Woken when an approval request's message was edited (the outbox's deliverer).
    pub nudge: Arc<dyn Nudge>,
    /// The skills catalog the `skill` tool reads too.
    pub skills: Arc<Skills>,
    /// The registry of running children (shared with triage for `/cancel`).
    pub running: Arc<Running>,
}

/// What the user sees for a model failure.
fn explain(e: &LlmError) -> String {
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
    /// An agent calling `parts`, with the limits, prices, memory recall and context window of `cfg`.
    pub(crate) fn new(cfg: &Config, parts: AgentParts) -> Self {
        let AgentParts { store, tiers, tools, policy, hooks, nudge, skills, running } = parts;
        let tools = super::own::with_agent_tools(&cfg.agent, tools);
        let chat = tiers.get(crate::config::CHAT_TIER);
        Self {
            store,
            llm: chat.provider,
            prices: tiers.prices().clone(),
            tiers,
            tools,
            tool_source: None,
            skills,
            limits: cfg.limits.clone(),
            max_tokens: chat.max_tokens,
            recall_limit: cfg.memory.recall_limit,
            workspace_root: cfg.tools.workspace_dir.clone().into(),
            policy,
            hooks,
            nudge,
            context_window: chat.context_window,
            auto_recall: cfg.memory.enabled && cfg.memory.recall,
            recall_budget_tokens: cfg.memory.recall_budget_tokens,
            max_schema_tokens: cfg.mcp.max_schema_tokens,
            delegation: Arc::new(cfg.agent.clone()),
            running,
            // No channel file sources until `with_media` gives the app's.
            media: Arc::new(crate::media::Media::new(&cfg.media, Default::default())),
            vision: cfg.llm.tier_or_main(crate::config::CHAT_TIER).vision,
        }
    }

    /// Attachments are fetched through `media` (the channels' file sources).
    pub(crate) fn with_media(mut self, media: Arc<crate::media::Media>) -> Self {
        self.media = media;
        self
    }

    /// Children register in (and background ones run on) `running`, shared with triage.
    pub(crate) fn with_running(mut self, running: Arc<Running>) -> Self {
        self.running = running;
        self
    }

    /// The re-run part of the agent (crash repair, superseded approvals).
    fn rerun(&self) -> super::rerun::Rerun<'_> {
        super::rerun::Rerun { store: &self.store, nudge: &*self.nudge, children: Children { agent: self } }
    }

    /// The agent of a child on `tier`: the tier's model, only `tools` (its own `tool_search`
    /// over many), the child's own iteration limit, no memory recall (its context is its task).
    pub(super) fn child(&self, tier: &str, tools: &Tools) -> Agent {
        let mut child = self.clone();
        let choice = self.tiers.get(tier);
        child.llm = choice.provider;
        child.context_window = choice.context_window;
        child.max_tokens = choice.max_tokens;
        (child.tools, child.tool_source) = super::catalog::child_tools(&self.tools, tools);
        child.auto_recall = false;
        child.limits.max_iterations = self.delegation.delegation.max_iterations;
        child
    }

    /// The assistant's name, `[agent.delegation]` and the archetypes.
    pub(super) fn agent_config(&self) -> &AgentConfig {
        &self.delegation
    }

    /// The children running in this process.
    pub(super) fn running_children(&self) -> &Arc<Running> {
        &self.running
    }

    /// Each turn also offers the tools `source` has at its start (the MCP servers'), after the
    /// built-ins, which keep their names.
    pub(crate) fn with_tool_source(mut self, source: Arc<dyn ToolSource>) -> Self {
        self.tool_source = Some(source);
        self
    }

    /// The names of the agent's own tools (built-ins, extras, `skill`), without the source's.
    pub(crate) fn tool_names(&self) -> Vec<String> {
        self.tools.names().into_iter().map(String::from).collect()
    }

    /// The skills section of a new session's system prompt: the catalog as it is now (names
    /// and descriptions in name order; empty without skills).
    pub(crate) async fn skills_prompt(&self) -> String {
        crate::skills::prompt_section(&*self.skills.load().await)
    }

    /// The tool-round part of the agent (policy, hooks, the turn's tools, limits).
    fn round<'a>(&'a self, tools: &'a Tools) -> ToolRound<'a> {
        ToolRound { store: &self.store, tools, policy: &self.policy, hooks: &self.hooks, limits: &self.limits }
    }

    /// The context-window part of the agent (request building, recall, compaction).
    fn window(&self) -> Window<'_> {
        Window {
            store: &self.store,
            llm: &*self.tiers.choice(crate::config::WORKER_TIER).provider,
            hooks: &self.hooks,
            prices: &self.prices,
            context_window: self.context_window,
            summary_window: self.tiers.choice(crate::config::WORKER_TIER).context_window,
            history_messages: self.limits.history_messages,
            max_tokens: self.max_tokens,
            recall_limit: self.recall_limit,
            auto_recall: self.auto_recall,
            recall_budget_tokens: self.recall_budget_tokens,
        }
    }

    /// Runs one turn for `input.event`. Progress (tool rounds) is persisted as it happens; the
    /// ending is returned for the caller to commit.
    #[tracing::instrument(skip_all, fields(event = %input.event.id, session = %input.session.row.id))]
    pub(crate) async fn run(&self, input: TurnInput<'_>, obs: &mut dyn TurnObserver) -> Result<TurnOutcome, TurnError> {
        let root = input.tree.is_none();
        let mut turn = self.begin(input).await?;
        let (ending, last_text) = self.loop_until_answer(&mut turn, obs).await?;
        let ending = match ending {
            Ending::Failed(e) if root && e.is_outage() => return Err(TurnError::ModelAway(e)),
            other => other,
        };
        let note = match self.settle(ending) {
            Settled::Done(outcome) => return Ok(outcome),
            Settled::Waiting(asks) => {
                let usage = self.usage(&turn);
                let asker = turn.event.actor.name().to_string();
                let notices = approval_notices(&asks, &asker, turn.room, &self.workspace_root).await;
                return Ok(waiting_commit(turn, asks, notices, usage));
            }
            Settled::Stale => return Ok(TurnOutcome::Finished(Box::new(done_only(turn.event)))),
            Settled::Reply(note) => note,
        };
        let reply = final_reply(&turn, note, last_text);
        let usage = self.usage(&turn);
        Ok(TurnOutcome::Finished(Box::new(finished_commit(turn, reply, usage))))
    }

    /// Sets a turn up: its tool context, then the user message (or the transcript repaired
    /// after a crash) and the memories it recalls, or, for a resumed turn, the answered call.
    pub(super) async fn begin<'a>(&self, input: TurnInput<'a>) -> Result<Turn<'a>, StoreError> {
        let TurnInput { session, event, user, stop, abort, first_attempt, start, session_key, room, quiet, tree } =
            input;
        let tree = match tree {
            Some(t) => t,
            None => {
                let parts = RootParts {
                    limits: &self.limits,
                    caps: crate::delegate::Caps::of(&self.delegation.delegation),
                    running: &self.running,
                };
                root_tree(parts, event, session_key)
            }
        };
        let sid = session.row.id.clone();
        let tool_ctx = ToolCtx {
            user: user.clone(),
            identity: event.actor.identity.clone(),
            session_id: sid.clone(),
            session_key: session_key.to_string(),
            conversation: event.conversation.clone(),
            kind: event.kind,
            store: self.store.tools.serve(user, &event.actor.identity, &event.conversation, event.kind),
            cancel: stop.child_token(),
            recall_limit: self.recall_limit,
            workspace: self.workspace_root.join(&user.id),
        };
        // This turn's tools: the built-ins and what the source offers now.
        let mut tools = self.tools.with_source(self.tool_source.as_deref());
        let searchable = Catalog::install(&self.tools, &mut tools, self.max_schema_tokens);
        let mut turn = Turn {
            session,
            event,
            user,
            sid,
            stop,
            abort,
            session_key,
            room,
            quiet,
            tool_ctx,
            defs: tools.defs(),
            tools,
            narrowing: Narrowing::default(),
            catalog: searchable,
            progress: Progress::default(),
            recall: None,
            skip_model: None,
            compacted: false,
            tree,
        };
        match start {
            Start::Message => {
                let fresh =
                    self.rerun().start_or_resume(turn.session, event, first_attempt, &mut turn.progress).await?;
                if fresh {
                    let text = event.text().unwrap_or_default();
                    turn.recall = self.window().recall_block(&turn.tool_ctx.memory_scope(), text).await?;
                    super::attach::attach(&self.media, self.vision, &mut turn).await;
                }
            }
            Start::Resume { approval, pending_left } if approval.session_id != turn.sid => {
                // Asked inside a child: resume the chain of children down to it.
                let resumed = Children { agent: self }.resume(&turn, &approval, pending_left).await?;
                turn.skip_model = match resumed {
                    None => Some(Ending::Stale),
                    Some(Outcome::Parked) => Some(Ending::Parked),
                    Some(Outcome::Waiting(asks)) => Some(Ending::Waiting(asks)),
                    Some(Outcome::Result(result)) => {
                        self.append(turn.session, &mut turn.progress, storable::tool_messages(vec![result])).await?;
                        let others = dangling_results(&turn.session.history);
                        if approval.status == ApprovalStatus::Cancelled {
                            // `/stop` while a child waited: the whole tree stops.
                            Some(Ending::Stopped)
                        } else {
                            (!others.is_empty()).then_some(Ending::Waiting(vec![]))
                        }
                    }
                };
            }
            Start::Resume { approval, pending_left } => {
                let history = &turn.session.history;
                let (results, resumed) =
                    self.round(&turn.tools).resume_call(&turn.tool_ctx, history, &approval, pending_left).await?;
                self.append(turn.session, &mut turn.progress, storable::tool_messages(results)).await?;
                turn.skip_model = match resumed {
                    Resumed::Continue => None,
                    Resumed::Waiting => Some(Ending::Waiting(vec![])),
                    Resumed::Stopped => Some(Ending::Stopped),
                    Resumed::Stale => Some(Ending::Stale),
                };
            }
        }
        // A turn taken up again (after an approval or a crash) keeps the narrowing of the
        // skills it loaded before; a fresh one's message is not in the transcript yet.
        if turn.progress.unsaved_user.is_none() && Narrowing::called_skill(&turn.session.history) {
            let catalog = self.skills.load().await;
            turn.narrowing = Narrowing::from_turn(&turn.session.history, &catalog);
            turn.defs = turn.narrowing.offered(&turn.defs);
        }
        if let Some(catalog) = &turn.catalog {
            if turn.progress.unsaved_user.is_none() {
                catalog.resume(&turn.session.history);
            }
            turn.defs = catalog.offer(&turn.narrowing, &turn.tools, &[]);
        }
        if halted_report(turn.event, &turn.tree) {
            // `/stop` or `/cancel` ended the chain this report belongs to: no follow-up.
            tracing::info!(origin = %turn.tree.chain.origin(), "report of a halted chain: no turn");
            turn.skip_model = Some(Ending::Stale);
        }
        Ok(turn)
    }

    /// Asks the model, runs the tools it calls, and asks again, until it answers without tools
    /// or something ends the turn. Returns the ending and the text of the last answer.
    pub(super) async fn loop_until_answer(
        &self,
        turn: &mut Turn<'_>,
        obs: &mut dyn TurnObserver,
    ) -> Result<(Ending, String), StoreError> {
        loop {
            if let Some(ending) = turn.skip_model.take() {
                return Ok((ending, String::new()));
            }
            if turn.stop.is_cancelled() {
                return Ok((Ending::Stopped, String::new()));
            }
            if turn.progress.iterations >= self.limits.max_iterations {
                return Ok((Ending::Limit, String::new()));
            }
            // The message's totals (every turn of its chain): a cheap check before the request
            // is built, then the call is admitted (counted, its worst case reserved) atomically.
            let cap = turn.tree.budget.chain_cap();
            if let Err(r) = turn.tree.chain.check(cap, turn.tree.background) {
                return Ok((refused(&turn.tree, r), String::new()));
            }
            let req = self.request(turn).await?;
            let worst = worst_case(&self.prices.get(self.llm.model()), turn.progress.context_tokens, self.max_tokens);
            let admission = Admission { days: self.running.days(), turns: &*self.store.turns, cap, worst };
            let ticket = match admit_call(turn, admission).await? {
                Ok(t) => t,
                Err(ending) => return Ok((ending, String::new())),
            };
            turn.progress.iterations += 1;
            let opened = tokio::select! {
                r = self.llm.stream(&req) => r,
                _ = turn.stop.cancelled() => return Ok((Ending::Stopped, String::new())),
                _ = turn.abort.cancelled() => return Ok((Ending::Parked, String::new())),
            };
            let stream = match opened {
                Ok(s) => s,
                Err(LlmError::ContextTooLong(e)) if !turn.compacted => {
                    // The model's own limit was hit: one forced checkpoint, then one retry.
                    turn.compacted = true;
                    if !super::compact::compact(&self.window(), turn.session, &turn.user.id).await? {
                        return Ok((Ending::Failed(LlmError::ContextTooLong(e)), String::new()));
                    }
                    turn.progress.iterations -= 1;
                    continue;
                }
                Err(e) => return Ok((Ending::Failed(e), String::new())),
            };
            let (asm, cut) = read_stream(turn, stream, obs).await;
            let before = turn.progress.cost_usd();
            self.spend(&mut turn.progress, &asm);
            ticket.settle(turn.progress.cost_usd() - before);
            if let Some(ending) = cut {
                return Ok((ending, self.policy.defuse_reply(asm.text)));
            }
            if asm.tool_calls.is_empty() {
                return Ok((Ending::Answer, self.policy.defuse_reply(asm.text)));
            }
            if let Some(ending) = self.tool_step(turn, asm, obs).await? {
                return Ok((ending, String::new()));
            }
        }
    }

    /// The next request: the session as the model sees it, shrunk to the budget, and (once per
    /// turn) compacted into a summary checkpoint when shrinking is not enough.
    async fn request(&self, turn: &mut Turn<'_>) -> Result<ChatRequest, StoreError> {
        let window = self.window();
        let budget = window.budget();
        // Nothing leaves the window unsummarized: what is over `history_messages` is folded first.
        super::compact::fold_overflow(&window, turn.session, &turn.user.id).await?;
        let unsaved = turn.progress.unsaved_user.as_ref();
        let mut req = ChatRequest {
            system: turn.session.row.system_prompt.clone(),
            messages: window.request_messages(turn.session, unsaved, turn.recall.as_deref()),
            tools: turn.defs.clone(),
            max_tokens: Some(self.max_tokens),
        };
        super::attach::with_images(&mut req, &turn.progress.images);
        let mut size = shrink(&mut req, budget);
        if size > budget && !turn.compacted {
            // Clearing and collapsing were not enough: one summary checkpoint, then measure again.
            turn.compacted = true;
            if super::compact::compact(&window, turn.session, &turn.user.id).await? {
                let unsaved = turn.progress.unsaved_user.as_ref();
                req.messages = window.request_messages(turn.session, unsaved, turn.recall.as_deref());
                super::attach::with_images(&mut req, &turn.progress.images);
                size = shrink(&mut req, budget);
            }
        }
        turn.progress.context_tokens = size;
        Ok(req)
    }

    /// Records the calls of an answer (before running them, so a crash mid-tools resumes
    /// correctly), runs the round and records its results. `Some` when the turn cannot go on:
    /// calls wait for a person, or shutdown.
    async fn tool_step(
        &self,
        turn: &mut Turn<'_>,
        asm: Assembled,
        obs: &mut dyn TurnObserver,
    ) -> Result<Option<Ending>, StoreError> {
        let calls = asm.tool_calls;
        let round = vec![NewMessage::assistant(asm.text.clone(), calls.clone())];
        self.append(turn.session, &mut turn.progress, round).await?;
        turn.progress.shown = turn.progress.join(&asm.text);
        obs.tools(&calls.iter().map(|c| c.name.clone()).collect::<Vec<_>>());
        let tools = self.round(&turn.tools);
        let round = tokio::select! {
            r = tools.tool_round(&turn.tool_ctx, turn.event, turn.session_key, &calls, &turn.narrowing) => r?,
            _ = turn.abort.cancelled() => return Ok(Some(Ending::Parked)),
        };
        obs.tools(&[]);
        let mut round = round;
        if !round.children.is_empty() {
            let children = std::mem::take(&mut round.children);
            let ran = Children { agent: self }.run(&Parent::of(turn), children).await?;
            round.results.extend(ran.results);
            round.asks.extend(ran.asks);
            let order = |id: &str| calls.iter().position(|c| c.id == id).unwrap_or(usize::MAX);
            round.results.sort_by_key(|r| order(&r.call_id));
            if ran.parked {
                return Ok(Some(Ending::Parked));
            }
        }
        self.narrow(turn, &calls, &round.results).await;
        if let Some(catalog) = &turn.catalog {
            turn.defs = catalog.offer(&turn.narrowing, &turn.tools, &calls);
        }
        self.append(turn.session, &mut turn.progress, storable::tool_messages(round.results)).await?;
        Ok((!round.asks.is_empty()).then_some(Ending::Waiting(round.asks)))
    }

    /// Takes in the skills this round loaded: their `allowed-tools` narrow the rest of the turn.
    async fn narrow(&self, turn: &mut Turn<'_>, calls: &[ToolCall], results: &[ToolResult]) {
        let ok = |c: &&ToolCall| results.iter().any(|r| r.call_id == c.id && !r.is_error);
        let loaded: Vec<&ToolCall> = calls.iter().filter(|c| c.name == SKILL_TOOL).filter(ok).collect();
        if loaded.is_empty() {
            return;
        }
        let catalog = self.skills.load().await;
        for call in loaded {
            turn.narrowing.loaded(call, &catalog);
        }
        turn.defs = turn.narrowing.offered(&turn.defs);
    }

    /// How the turn ended, as what is left to do: nothing more (parked), a commit of its own
    /// (waiting for approvals, a duplicate), or a reply with an optional note.
    pub(super) fn settle(&self, ending: Ending) -> Settled {
        let note = match ending {
            Ending::Parked => {
                tracing::info!("turn parked by shutdown");
                return Settled::Done(TurnOutcome::Parked);
            }
            Ending::Stale => return Settled::Stale,
            Ending::Waiting(asks) => return Settled::Waiting(asks),
            Ending::Answer => None,
            Ending::Stopped => Some("⏹ Stopped.".to_string()),
            Ending::Budget(message) => Some(message),
            Ending::Limit => Some(format!(
                "⚠️ I stopped after {} steps without finishing (limit: [limits] max_iterations).",
                self.limits.max_iterations
            )),
            Ending::Failed(e) => {
                tracing::warn!(error = %e, "model call failed");
                Some(explain(&e))
            }
        };
        Settled::Reply(note)
    }

    /// Commits a finished turn (after its streaming has stopped) and keeps the session's cached
    /// transcript in step with the store.
    pub(crate) async fn commit(
        &self,
        session: &mut SessionState,
        commit: &TurnCommit,
    ) -> Result<Option<OutboxRow>, StoreError> {
        let reply = self.store.turns.finish_event(commit).await?;
        if let Some(row) = commit.usage.as_ref().and_then(|u| u.rows.first().map(|r| (r, u.cost_usd))) {
            self.running.days().committed(&row.0.user_id, row.1);
        }
        // Kept whole: the next request folds what is over `history_messages` into a checkpoint.
        session.history.extend(commit.messages.iter().cloned());
        Ok(reply)
    }

    /// `/compact`: folds the older part of `session` into its summary now; how many messages.
    pub(crate) async fn compact_now(&self, session: &mut SessionState, user_id: &str) -> Result<usize, StoreError> {
        let before = session.history.len();
        super::compact::compact(&self.window(), session, user_id).await?;
        Ok(before - session.history.len())
    }

    /// Counts one model call's usage under the model that answered it, at that model's prices.
    fn spend(&self, progress: &mut Progress, asm: &Assembled) {
        let model = asm.model_or(self.llm.model());
        progress.spend(model, self.prices.get(model), &asm.usage);
        tracing::debug!(model, turn_cost_usd = progress.cost_usd(), "model call counted");
    }

    /// The turn's usage rows: one per model that answered (the turn's own model, with no
    /// tokens, when none did), each at its own prices; the first carries the iterations.
    pub(super) fn usage(&self, turn: &Turn<'_>) -> TurnUsage {
        let progress = &turn.progress;
        let ids = [turn.user.id.as_str(), turn.sid.as_str(), turn.event.id.0.as_str()];
        let model = self.llm.model();
        let none = [Spent { model: model.to_string(), prices: self.prices.get(model), usage: Default::default() }];
        let spent = if progress.spent.is_empty() { &none[..] } else { &progress.spent[..] };
        let rows = spent
            .iter()
            .enumerate()
            .map(|(i, s)| UsageRecord {
                iterations: if i == 0 { progress.iterations as i32 } else { 0 },
                context_tokens: progress.context_tokens as i64,
                ..UsageRecord::priced(&s.prices, "turn", ids, &s.model, &s.usage)
            })
            .collect();
        TurnUsage::new(rows)
    }

    /// Persists `msgs` (preceded by the turn's user message if that is not stored yet) and adds
    /// them to the cached transcript.
    pub(super) async fn append(
        &self,
        session: &mut SessionState,
        progress: &mut Progress,
        msgs: Vec<NewMessage>,
    ) -> Result<(), StoreError> {
        super::rerun::append(&self.store, session, progress, msgs).await
    }
}
