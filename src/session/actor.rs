//! One session's actor: loads (or opens) the session, runs its jobs one at a time, marks each
//! turn as begun in the inbox (so a process death is charged only to the running event),
//! streams it, commits it, wakes the outbox, and retires when idle.
//!
//! It must never ask the model again for an event whose answer it holds uncommitted, whatever
//! ran in the session meanwhile, and never run an event this process no longer holds.

use super::job::{Job, JobKind};
use super::retry::{retry_or_fail, until_recorded, TryEnd};
use super::shared::{lease_name, lock, Claim, Running, Shared};
use crate::agent::{profile_section, system_prompt, SessionState, Start, TurnError, TurnInput, TurnOutcome};
use crate::config::HookEvent;
use crate::memory::ArchiveJob;
use crate::metrics::METRICS;
use crate::outbox::Streamer;
use crate::permissions::notice::Room;
use crate::store::{InboxStatus, MemoryScope, NewOutbox, NewSession, OutboxRow, StoreError, TurnCommit};
use butler_channel::{Button, ButtonStyle, ConversationKind, Outbound};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

pub(super) struct Actor {
    key: String,
    shared: Arc<Shared>,
    running: Arc<Mutex<Option<Running>>>,
    state: Option<SessionState>,
    /// Finished turns whose commit failed, by event id: the retry of that event commits its
    /// answer instead of asking the model again, also when other events of the session ran in
    /// between (and after `butler inbox retry` of the event set aside). An entry goes when it is
    /// committed, or when the actor, idle, finds its event ended.
    uncommitted: HashMap<String, Box<TurnCommit>>,
    /// With several replicas: the session's lease and fencing token.
    claim: Option<Claim>,
    /// A commit was refused: another replica owns the session now.
    fenced: bool,
}

impl Actor {
    /// A fresh actor for session `key`; `running` is the slot its handle watches.
    /// `claim`: the lease and fencing token, with several replicas.
    pub(super) fn new(
        key: &str,
        shared: Arc<Shared>,
        running: Arc<Mutex<Option<Running>>>,
        claim: Option<Claim>,
    ) -> Self {
        Self { key: key.to_string(), shared, running, state: None, uncommitted: HashMap::new(), claim, fenced: false }
    }

    /// The fencing token this actor's commits carry.
    fn fence(&self) -> Option<crate::store::Fence> {
        self.claim.as_ref().map(|c| c.fence.clone())
    }

    pub(super) async fn run(mut self, mut rx: mpsc::Receiver<Box<Job>>) {
        let idle = Duration::from_secs(self.shared.deps.limits.session_idle_secs.max(1));
        let shutdown = self.shared.shutdown.clone();
        let lost = self.claim.as_ref().map(|c| c.lease.lost.clone()).unwrap_or_default();
        loop {
            let job = tokio::select! {
                biased;
                _ = shutdown.cancelled() => break,
                _ = lost.cancelled() => {
                    tracing::warn!(key = %self.key, "session lease lost; another replica runs it now");
                    self.fenced = true;
                    break;
                }
                job = rx.recv() => match job {
                    Some(job) => job,
                    None => break,
                },
                _ = tokio::time::sleep(idle) => {
                    if self.holds_answers().await {
                        // An answer waits for its event's retry: retiring would lose it.
                        continue;
                    }
                    // Under the placing lock: the lease is given back before the key can be
                    // placed here again.
                    let _placing = self.shared.placing.lock().await;
                    if self.shared.retire_if_idle(&self.key, &rx) {
                        METRICS.sessions_live.add(-1);
                        tracing::debug!(key = %self.key, "idle session actor retired");
                        if self.claim.is_some() {
                            self.shared.deps.cluster.release(&lease_name(&self.key)).await;
                        }
                        return;
                    }
                    continue;
                }
            };
            let span = tracing::info_span!("job", key = %self.key, event = %job.event.id);
            // Boxed: the turn's state lives on the heap only while it runs, so an idle actor's
            // task stays small.
            Box::pin(self.handle(*job).instrument(span)).await;
            if self.fenced {
                break;
            }
        }
        let _placing = self.shared.placing.lock().await;
        self.shared.forget(&self.key);
        // Shutting down, or the session moved: queued jobs go back to the inbox untouched.
        rx.close();
        let (stores, worker) = (&self.shared.deps.stores, self.shared.deps.cluster.worker());
        while let Ok(job) = rx.try_recv() {
            let id = &job.event.id.0;
            let back = if self.fenced {
                stores.replicas.inbox_yield(id, worker).await.map(|_| ())
            } else {
                stores.dead_letters.inbox_release(id, 0).await
            };
            if let Err(e) = back {
                tracing::warn!(error = %e, "could not release a queued event; it is recovered later");
            }
        }
        if self.claim.is_some() && !self.fenced {
            self.shared.deps.cluster.release(&lease_name(&self.key)).await;
        }
        METRICS.sessions_live.add(-1);
    }

    /// Whether an uncommitted answer still waits for its event (entries of events that ended
    /// meanwhile, e.g. set aside by the dispatcher, are dropped here).
    async fn holds_answers(&mut self) -> bool {
        let store = self.shared.deps.stores.inbox.clone();
        let mut open = HashMap::new();
        for (id, commit) in std::mem::take(&mut self.uncommitted) {
            let row = store.inbox_get(&id).await;
            let ended = matches!(&row, Ok(None))
                || matches!(&row, Ok(Some(r)) if !matches!(r.status, InboxStatus::Pending | InboxStatus::Processing));
            if !ended {
                open.insert(id, commit);
            }
        }
        self.uncommitted = open;
        !self.uncommitted.is_empty()
    }

    /// Marks the job's event as running in the inbox before anything of its turn happens:
    /// from here on a process death is charged to it. `false`: this process no longer holds
    /// the event (taken back, or ended), so the job must not run.
    async fn begin(&self, job: &Job) -> Result<bool, StoreError> {
        let worker = self.shared.deps.cluster.worker();
        let held = self.shared.deps.stores.recovery.inbox_start(&job.event.id.0, worker).await?;
        if !held {
            tracing::warn!(event = %job.event.id, "the event is no longer held here; not running it");
        }
        Ok(held)
    }

    async fn handle(&mut self, job: Job) {
        let _watched = crate::metrics::WATCHDOG.watch(crate::metrics::Work::Turn);
        let result = match &job.kind {
            JobKind::Turn | JobKind::Resume { .. } => match self.begin(&job).await {
                Ok(true) => self.turn(&job).await,
                Ok(false) => return,
                Err(e) => Err(e.into()),
            },
            JobKind::Reset => self.reset(&job).await,
            JobKind::Compact => self.compact(&job).await,
            JobKind::Reopen { session_id, label } => self.reopen(&job, session_id, label).await,
        };
        if let Err(TurnError::Store(crate::store::StoreError::Fenced { .. })) = &result {
            // Another replica took the session over: its run of this event is the one that
            // counts. Hand the event back (if nobody took it yet) and stop here.
            METRICS.fencing_refusals.inc();
            tracing::warn!(key = %self.key, event = %job.event.id, "commit refused: the session moved to another replica");
            let (store, worker) = (&self.shared.deps.stores.replicas, self.shared.deps.cluster.worker());
            if let Err(e) = store.inbox_yield(&job.event.id.0, worker).await {
                tracing::warn!(error = %e, "could not hand a refused event back; the takeover finds it");
            }
            self.fenced = true;
            return;
        }
        if let Err(e) = result {
            // The cached state may be behind the store now; reload it next time.
            self.state = None;
            // A model that is away is no failure of the event: it waits longer, its sender told.
            let error = match &e {
                TurnError::ModelAway(away) => away.to_string(),
                other => {
                    METRICS.turns_failed.inc();
                    other.to_string()
                }
            };
            let end = match e {
                TurnError::ModelAway(_) => TryEnd::ModelAway(&error),
                TurnError::Store(_) => TryEnd::Failed(&error),
            };
            let deps = &self.shared.deps;
            let max = deps.limits.max_event_attempts;
            let store = deps.stores.failing();
            let event = job.event.id.0.as_str();
            until_recorded(&self.shared.shutdown, event, || {
                retry_or_fail(store, &deps.deliverer, &job.event, job.attempt, max, end)
            })
            .await;
        }
    }

    async fn load_state(&mut self, job: &Job) -> Result<&mut SessionState, StoreError> {
        if self.state.is_none() {
            let deps = &self.shared.deps;
            let stores = &deps.stores;
            let row = match stores.sessions.session_active(&self.key).await? {
                Some(row) => row,
                None => {
                    // The skills as they are now: a new session sees added or edited skills.
                    let skills = deps.agent.skills_prompt().await;
                    // The person's profile, in private sessions only (a group must not read it).
                    let profile = match job.event.kind {
                        ConversationKind::Direct => {
                            let pins = stores.profiles.memory_pins(&job.user.id).await?;
                            profile_section(&pins, &job.user.timezone, deps.profile_max_tokens)
                        }
                        ConversationKind::Group => String::new(),
                    };
                    let prompt = system_prompt(
                        &deps.agent_cfg.name,
                        deps.agent_cfg.instructions.as_deref(),
                        job.event.channel(),
                        job.event.kind,
                        (&skills, &profile),
                    );
                    let new = NewSession {
                        id: uuid::Uuid::new_v4().to_string(),
                        key: self.key.clone(),
                        user_id: job.user.id.clone(),
                        conversation: job.event.conversation.to_string(),
                        system_prompt: prompt,
                    };
                    let row = stores.sessions.session_open(&new).await?;
                    let payload = serde_json::json!({"session": row.id, "key": row.key, "user": row.user_id});
                    deps.agent.hooks.run(HookEvent::SessionStart, None, &payload).await;
                    row
                }
            };
            self.state = Some(SessionState::load(&*stores.summaries, row).await?);
        }
        Ok(self.state.as_mut().expect("state loaded above"))
    }

    /// One turn: mark it running, then either commit the answer an earlier try could not
    /// commit, or run the agent; a finished turn is committed and handed over, a parked one
    /// goes back to the inbox until the approval arrives.
    async fn turn(&mut self, job: &Job) -> Result<(), TurnError> {
        let started = Instant::now();
        let (turn_id, stop) = self.mark_running();
        let _clear = ClearOnDrop(self.running.clone());
        // The model already answered this event; only its commit failed: commit that answer.
        if let Some(commit) = self.uncommitted.remove(&job.event.id.0) {
            tracing::info!("committing the answer of an earlier try");
            self.load_state(job).await?;
            return self.commit_or_retry(job, commit, started).await;
        }
        match self.run_agent(job, &turn_id, stop).await? {
            TurnOutcome::Finished(commit) => self.commit_or_retry(job, commit, started).await,
            TurnOutcome::Parked => {
                self.state = None;
                self.shared.deps.stores.dead_letters.inbox_release(&job.event.id.0, 0).await?;
                Ok(())
            }
        }
    }

    /// Records the running turn (its id and stop token), so `/stop` can reach it.
    fn mark_running(&self) -> (String, CancellationToken) {
        let stop = CancellationToken::new();
        let turn_id = uuid::Uuid::new_v4().simple().to_string();
        *lock(&self.running) = Some(Running { turn_id: turn_id.clone(), stop: stop.clone() });
        (turn_id, stop)
    }

    /// Runs the agent on the loaded session, streaming into the event's conversation (unless the
    /// job is quiet or the channel is gone); the stream is closed before the outcome is returned.
    async fn run_agent(&mut self, job: &Job, turn_id: &str, stop: CancellationToken) -> Result<TurnOutcome, TurnError> {
        let deps = self.shared.deps.clone();
        let abort = self.shared.abort.clone();
        let event = &job.event;
        let reply = NewOutbox::reply(event, String::new());
        let room = deps.channels.get(event.channel()).map_or_else(Room::none, |ch| Room::of(&ch.caps()));
        // Heartbeats stream nothing: they may end up saying nothing at all.
        let mut streamer = deps.channels.get(event.channel()).filter(|_| !job.quiet).map(|ch| {
            let mut base = Outbound::text(event.conversation.clone(), "");
            base.reply_to = event.quote_target();
            if ch.caps().buttons {
                base.buttons = vec![Button::new("Stop", format!("stop:{turn_id}"), ButtonStyle::Danger)];
            }
            Streamer::start(ch.clone(), deps.stores.outbox.clone(), reply, base)
        });
        let key = self.key.clone();
        let session = self.load_state(job).await?;
        let mut sink = crate::agent::NullObserver;
        let observer: &mut dyn crate::agent::TurnObserver = match streamer.as_mut() {
            Some(s) => s,
            None => &mut sink,
        };
        let start = match &job.kind {
            JobKind::Resume { approval, pending_left } => {
                Start::Resume { approval: approval.clone(), pending_left: *pending_left }
            }
            _ => Start::Message,
        };
        let input = TurnInput {
            session,
            event,
            user: &job.user,
            stop,
            abort,
            first_attempt: job.attempt <= 1,
            start,
            session_key: &key,
            room,
            quiet: job.quiet,
            tree: None,
        };
        let outcome = deps.agent.run(input, observer).await;
        if let Some(s) = streamer {
            s.close().await;
        }
        outcome
    }

    /// Commits a finished turn (its session is loaded), then hands the reply over. A failed
    /// commit is kept for the event's next try, which commits it instead of asking the model.
    async fn commit_or_retry(
        &mut self,
        job: &Job,
        mut commit: Box<TurnCommit>,
        started: Instant,
    ) -> Result<(), TurnError> {
        commit.fence = self.fence();
        let deps = self.shared.deps.clone();
        let session = self.state.as_mut().expect("loaded for this turn");
        let row = match deps.agent.commit(session, &commit).await {
            Ok(row) => row,
            Err(e) => {
                self.uncommitted.insert(commit.inbox_id.clone(), commit);
                return Err(e.into());
            }
        };
        self.hand_over(job, &commit, row, started);
        Ok(())
    }

    /// After the commit: the reply to the deliverer, what was learned to the archivist (in the
    /// background), a wake-up for approval requests, and the turn's metrics.
    fn hand_over(&self, job: &Job, commit: &TurnCommit, row: Option<OutboxRow>, started: Instant) {
        let deps = &self.shared.deps;
        let event = &job.event;
        if let Some(row) = row {
            deps.deliverer.hand_over(row);
        }
        // After the reply is on its way: distil what was learned, in the background.
        if let (Some(archivist), JobKind::Turn, false) = (&deps.archivist, &job.kind, job.quiet) {
            let answer = commit.messages.last().map(|m| m.content.clone()).unwrap_or_default();
            // Only what a person said teaches Butler about them: trigger and schedule
            // prompts are instructions, not facts about the user.
            let said = match &event.body {
                butler_channel::EventBody::Message { text } => Some(text.as_str()),
                _ => None,
            };
            if let (Some(text), true, true) = (said, commit.approvals.is_empty(), commit.reply.is_some()) {
                let kind = event.kind;
                let owner = match kind {
                    butler_channel::ConversationKind::Direct => MemoryScope::personal(&job.user.id),
                    butler_channel::ConversationKind::Group => {
                        MemoryScope::group(&job.user.id, &event.conversation.to_string())
                    }
                };
                archivist.submit(ArchiveJob {
                    owner,
                    session_id: commit.session_id.clone().unwrap_or_default(),
                    event_id: event.id.0.clone(),
                    user_text: text.to_string(),
                    answer,
                });
            }
        }
        if !commit.notices.is_empty() {
            // Approval requests are not handed over: let the worker look now.
            deps.deliverer.wake();
        }
        METRICS.turns.inc();
        METRICS.turn_seconds.observe(started.elapsed().as_secs_f64());
        if let Some(u) = &commit.usage {
            METRICS.llm_input_tokens.add(u.input_tokens as u64);
            METRICS.llm_output_tokens.add(u.output_tokens as u64);
        }
    }

    async fn reset(&mut self, job: &Job) -> Result<(), TurnError> {
        let deps = &self.shared.deps;
        let stores = &deps.stores;
        if let Some(row) = stores.sessions.session_active(&self.key).await? {
            stores.sessions.session_close(&row.id).await?;
            let payload = serde_json::json!({"session": row.id, "key": row.key, "user": row.user_id});
            deps.agent.hooks.run(HookEvent::SessionEnd, None, &payload).await;
        }
        self.state = None;
        let text =
            "🆕 Started a new conversation. Earlier messages are kept in the history but no longer sent to the model.";
        self.answer(job, text).await
    }

    /// `/resume N`: the earlier session becomes this key's open one (the current one is closed,
    /// in the same transaction); the cached state goes, so the next message loads it.
    async fn reopen(&mut self, job: &Job, session_id: &str, label: &str) -> Result<(), TurnError> {
        let deps = &self.shared.deps;
        let stores = &deps.stores;
        let before = stores.sessions.session_active(&self.key).await?;
        let resumed = stores.transcripts.session_resume(&job.user.id, session_id, &self.key).await?;
        self.state = None;
        let text = match resumed {
            Some(row) => {
                if let Some(old) = before.filter(|b| b.id != row.id) {
                    let payload = serde_json::json!({"session": old.id, "key": old.key, "user": old.user_id});
                    deps.agent.hooks.run(HookEvent::SessionEnd, None, &payload).await;
                }
                format!("↩️ Resumed {label}. Its earlier messages are back in context; just carry on.")
            }
            None => "That conversation cannot be resumed here: it is open in another chat (send /new there first), \
                     or it is gone. Nothing changed."
                .to_string(),
        };
        self.answer(job, &text).await
    }

    /// `/compact`: folds the older part of the session into its summary now.
    async fn compact(&mut self, job: &Job) -> Result<(), TurnError> {
        let agent = self.shared.deps.agent.clone();
        let state = self.load_state(job).await?;
        let text = match agent.compact_now(state, &job.user.id).await? {
            0 => "Nothing to compact yet: the conversation is short.".to_string(),
            n => format!(
                "🗜 Folded {n} earlier messages into the conversation's summary (goals, decisions, facts, open \
                 tasks). The transcript keeps them."
            ),
        };
        self.answer(job, &text).await
    }

    /// Ends a command's event with `text` as its reply.
    async fn answer(&mut self, job: &Job, text: &str) -> Result<(), TurnError> {
        let stores = &self.shared.deps.stores;
        let commit = TurnCommit {
            inbox_id: job.event.id.0.clone(),
            inbox_status: InboxStatus::Done,
            session_id: None,
            messages: vec![],
            reply: Some(NewOutbox::reply(&job.event, text)),
            usage: None,
            approvals: vec![],
            notices: vec![],
            fence: self.fence(),
        };
        if let Some(row) = stores.turns.finish_event(&commit).await? {
            self.shared.deps.deliverer.hand_over(row);
        }
        Ok(())
    }
}

/// Clears the running-turn slot however the turn ends.
struct ClearOnDrop(Arc<Mutex<Option<Running>>>);

impl Drop for ClearOnDrop {
    fn drop(&mut self) {
        *lock(&self.0) = None;
    }
}
