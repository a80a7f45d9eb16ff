//! A tool's store: the rows a tool may read or write, always those of the one user it runs for.
//! [`ToolStores`] holds the narrow store traits the tools need (built once by the app) and the
//! search over past conversations ([`TranscriptSearch`], implemented above the tools by
//! `crate::memory::Transcripts`); [`ToolStores::serve`] gives the [`ToolStore`] of one user in
//! one conversation.
//!
//! A `ToolStore` must never return or change another user's rows: every method scopes to its
//! user (a memory or job id of anyone else is "not found"), and it never hands out the store
//! traits it holds.

use crate::schedule::jobs::{self, JobError, JobOwner};
use crate::store::{
    MemoryRow, MemoryScope, MemoryStore, NewOutbox, NewSchedule, OutboxRow, OutboxStore, Result, RunQuery, RunRow,
    ScheduleChange, ScheduleFilter, ScheduleRow, ScheduleSource, ScheduleStore, StoreError, TranscriptHit,
    TranscriptScope, UserRow, UserStore,
};
use butler_channel::{ConversationKind, ConversationRef, Identity};
use std::sync::Arc;

/// Searching past conversations, for `conversation_search`: scoped to one person and ranked,
/// each hit's text cut to an excerpt. Implemented by `crate::memory::Transcripts` (where the
/// full-text search and, later, other kinds of search are merged), handed in by the app.
#[async_trait::async_trait]
pub trait TranscriptSearch: Send + Sync {
    /// The messages of `user_id`'s conversations `within` matching `query`, except those of
    /// session `except_session`; best first.
    async fn search(
        &self,
        user_id: &str,
        within: &TranscriptScope,
        query: &str,
        except_session: Option<&str>,
        limit: usize,
    ) -> Result<Vec<TranscriptHit>>;
}

/// The store traits the tools use, for every user; only [`ToolStores::serve`] reads them.
#[derive(Clone)]
pub struct ToolStores {
    memory: Arc<dyn MemoryStore>,
    schedules: Arc<dyn ScheduleStore>,
    /// `send_message` and `send_file` queue their messages here.
    outbox: Arc<dyn OutboxStore>,
    /// Whose web conversation a job may deliver to (identities, conversation owners).
    users: Arc<dyn UserStore>,
    /// `conversation_search`.
    transcripts: Arc<dyn TranscriptSearch>,
}

impl ToolStores {
    pub fn new(
        memory: Arc<dyn MemoryStore>,
        schedules: Arc<dyn ScheduleStore>,
        outbox: Arc<dyn OutboxStore>,
        users: Arc<dyn UserStore>,
        transcripts: Arc<dyn TranscriptSearch>,
    ) -> Self {
        Self { memory, schedules, outbox, users, transcripts }
    }

    /// The store of `user` speaking as `identity` in `conversation` (of `kind`).
    pub fn serve(
        &self,
        user: &UserRow,
        identity: &Identity,
        conversation: &ConversationRef,
        kind: ConversationKind,
    ) -> ToolStore {
        let memory_scope = match kind {
            ConversationKind::Direct => MemoryScope::personal(&user.id),
            ConversationKind::Group => MemoryScope::group(&user.id, &conversation.to_string()),
        };
        let owner = JobOwner { identity: identity.clone(), user_id: Some(user.id.clone()) };
        ToolStore {
            user: user.clone(),
            conversation: conversation.clone(),
            memory_scope,
            job_scope: jobs::scope_for(ScheduleSource::Tool, &owner),
            stores: self.clone(),
        }
    }
}

/// One user's rows, for the tools of one call context.
#[derive(Clone)]
pub struct ToolStore {
    user: UserRow,
    /// Where the user speaks (a job may always deliver here).
    conversation: ConversationRef,
    memory_scope: MemoryScope,
    /// The scope the user's own jobs are named in (`user:<id>`).
    job_scope: String,
    stores: ToolStores,
}

impl ToolStore {
    /// Whose memory the memory tools use: the user's own in a DM, the user's share of the group
    /// inside a group (so a group never sees DM memories, nor a DM group memories).
    pub fn memory_scope(&self) -> &MemoryScope {
        &self.memory_scope
    }

    pub async fn memory_add(&self, text: &str, source: Option<&str>) -> Result<MemoryRow> {
        self.stores.memory.memory_add(&self.memory_scope, text, source).await
    }

    pub async fn memory_search(&self, query: &str, limit: usize) -> Result<Vec<MemoryRow>> {
        self.stores.memory.memory_search(&self.memory_scope, query, limit).await
    }

    /// `false` when `id` is not a memory of this user in this scope.
    pub async fn memory_forget(&self, id: i64) -> Result<bool> {
        self.stores.memory.memory_forget(&self.memory_scope, id).await
    }

    /// This user's past conversations `within` matching `query` (the current session's left
    /// out when given), each hit an excerpt. A private search reads only this user's direct
    /// conversations; a group's only that group's.
    pub async fn conversation_search(
        &self,
        within: &TranscriptScope,
        query: &str,
        except_session: Option<&str>,
        limit: usize,
    ) -> Result<Vec<TranscriptHit>> {
        self.stores.transcripts.search(&self.user.id, within, query, except_session, limit).await
    }

    /// The user's jobs.
    pub async fn schedules(&self) -> Result<Vec<ScheduleRow>> {
        self.stores.schedules.schedules_list(&ScheduleFilter::Owner(self.user.id.clone())).await
    }

    /// Job `id` when it is the user's; anyone else's is `None`, as if it did not exist.
    pub async fn schedule(&self, id: i64) -> Result<Option<ScheduleRow>> {
        let rows = self.stores.schedules.schedules_list(&ScheduleFilter::Id(id)).await?;
        Ok(rows.into_iter().find(|r| r.owner_user.as_deref() == Some(self.user.id.as_str())))
    }

    /// Creates (or updates, by name) one of the user's own jobs; a job of anyone else, or named
    /// in another scope, is refused (`Conflict`).
    pub async fn schedule_put(&self, new: &NewSchedule) -> Result<ScheduleRow> {
        if new.owner_user.as_deref() != Some(self.user.id.as_str()) || new.scope != self.job_scope {
            return Err(StoreError::Conflict(format!("job `{}` is not {}'s own", new.name, self.user.id)));
        }
        self.stores.schedules.schedule_put(new).await
    }

    /// Changes the user's job `id`; `false` when it is not theirs (or nothing changed).
    pub async fn schedule_set(&self, id: i64, change: &ScheduleChange) -> Result<bool> {
        if self.schedule(id).await?.is_none() {
            return Ok(false);
        }
        self.stores.schedules.schedule_set(id, change).await
    }

    /// The last run of the user's job `id`; `None` when it has none or is not theirs.
    pub async fn schedule_last_run(&self, id: i64) -> Result<Option<RunRow>> {
        if self.schedule(id).await?.is_none() {
            return Ok(None);
        }
        let runs = self.stores.schedules.schedule_runs(&RunQuery::Of { schedule_id: id, limit: 1 }).await?;
        Ok(runs.into_iter().next())
    }

    /// Whether a job of this user may deliver to `target` ([`jobs::may_target`]).
    pub async fn may_target(&self, target: &ConversationRef) -> Result<Result<(), JobError>> {
        jobs::may_target(&*self.stores.users, &self.user, &self.conversation, target).await
    }

    /// Queues a message the user asked a tool to send (`send_message`, `send_file`).
    pub async fn send(&self, new: &NewOutbox) -> Result<OutboxRow> {
        self.stores.outbox.outbox_enqueue(new).await
    }
}
