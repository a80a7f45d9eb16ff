//! The store's traits, one per concern and each of six methods at most, and [`Store`], their
//! union: a component takes only the traits it calls (the composition root hands them out).
//!
//! Contracts only: the SQL lives in `sql/`, the rows in the `*_records.rs` files.

use super::delegation_records::*;
use super::error::{Backend, Result};
use super::outbox_records::*;
use super::outcome_records::*;
use super::records::*;
use super::schedule_records::*;
use super::transcript_records::*;
use super::usage_records::*;
use super::vector_records::*;
use async_trait::async_trait;
use butler_channel::{Identity, InboundEvent};

/// The inbox: every inbound event, stored under its stable id before it is acknowledged.
#[async_trait]
pub trait InboxStore: Send + Sync {
    /// Stores the event; `false` when its id was already stored (a redelivery).
    async fn inbox_insert(&self, event: &InboundEvent) -> Result<bool>;
    /// Claims up to `limit` pending, due events of the given channels, oldest first, marking them
    /// `processing` by `worker`.
    async fn inbox_claim(&self, channels: &[String], worker: &str, limit: usize) -> Result<Vec<InboxRow>>;
    /// Ends an event: done, dropped or failed (with the error).
    async fn inbox_finish(&self, id: &str, status: InboxStatus, error: Option<&str>) -> Result<()>;
    /// Puts a claimed event back to `pending`, due again after `delay_ms`.
    async fn inbox_retry(&self, id: &str, delay_ms: i64, error: Option<&str>) -> Result<()>;
    /// Single-node start-up: events left `processing` by a dead process become `pending`.
    async fn inbox_recover(&self, channels: &[String]) -> Result<u64>;
    async fn inbox_get(&self, id: &str) -> Result<Option<InboxRow>>;
}

/// What several replicas need from the store: fencing tokens per session, handing an event
/// to the replica that owns its session, taking back what a dead replica held, and claiming
/// an outbox row before sending it.
#[async_trait]
pub trait ReplicaStore: Send + Sync {
    /// Raises the fencing token of session `key` and returns it: commits carrying an older
    /// token are refused from now on.
    async fn fence_take(&self, key: &str) -> Result<Fence>;
    /// Puts a claimed event back as `pending` for `worker` (the owner of its session) only;
    /// others may claim it after [`ROUTE_GRACE_MS`] if the owner does not.
    async fn inbox_route(&self, id: &str, worker: &str) -> Result<bool>;
    /// Every `processing` event whose claimer is not in `alive` goes back to `pending`.
    async fn inbox_takeover(&self, alive: &[String]) -> Result<u64>;
    /// Puts event `id` back as `pending` only if `worker` still holds it.
    async fn inbox_yield(&self, id: &str, worker: &str) -> Result<bool>;
    /// Claims outbox row `id` for sending until `until_ms` (false: not due, or another
    /// replica has it).
    async fn outbox_claim(&self, id: i64, until_ms: i64) -> Result<bool>;
    /// A claim by `worker` that failed with an error may still have committed (the answer was
    /// lost): its events (`processing` by `worker`, claimed at `since_ms` or later) go back to
    /// `pending`. Run before the worker claims again.
    async fn inbox_unclaim(&self, worker: &str, since_ms: i64) -> Result<u64>;
}

/// What a crash leaves behind, and what it may charge: the marker that a claimed event's turn
/// began (a process death charges a try only to the events that were running, and a poison
/// event is one running at several deaths in a row), and the streamed drafts nobody will finish.
#[async_trait]
pub trait RecoveryStore: Send + Sync {
    /// Marks event `id`, held by `worker`, as running its turn from now on: if the process dies
    /// before the try ends, recovery ([`InboxStore::inbox_recover`], [`ReplicaStore::inbox_takeover`])
    /// keeps the try counted and counts one more crash in a row ([`InboxRow::crashes`]); an event
    /// that was never marked gets its claim's try back. `false` when `worker` does not hold the
    /// event (taken back, or ended): it must not run.
    async fn inbox_start(&self, id: &str, worker: &str) -> Result<bool>;
    /// Settles streamed reply drafts (`draft` rows keyed `<event id>:reply`) whose event is no
    /// longer pending or processing, so nobody will finish them: one never shown (no platform
    /// ids) is deleted; a shown one becomes `pending` with `text` and no buttons (delivery edits
    /// the message in place) under the key `<key>:cut:<row id>`, so a later run of the event
    /// (`butler inbox retry`) still gets a reply of its own. Returns how many were settled.
    async fn drafts_settle(&self, text: &str) -> Result<u64>;
}

/// How long an event routed to a replica waits for it before any replica may claim it.
pub const ROUTE_GRACE_MS: i64 = 5000;

/// Events given up on (dead letters) and putting events back without counting a try.
#[async_trait]
pub trait DeadLetterStore: Send + Sync {
    /// Puts a claimed event back to `pending`, due after `delay_ms`, without counting the try
    /// (the session was busy, or the process is shutting down).
    async fn inbox_release(&self, id: &str, delay_ms: i64) -> Result<()>;
    /// Events with `status` (all when `None`), newest first.
    async fn inbox_list(&self, status: Option<InboxStatus>, limit: usize) -> Result<Vec<InboxRow>>;
    /// How many events have `status`.
    async fn inbox_count(&self, status: InboxStatus) -> Result<i64>;
    /// A `failed` event becomes `pending` again with its tries reset; `false` when there is no
    /// failed event with that id.
    async fn inbox_requeue(&self, id: &str) -> Result<bool>;
}

/// Sessions and their transcripts. The transcript is append-only.
#[async_trait]
pub trait SessionStore: Send + Sync {
    /// The open session for a key, if any.
    async fn session_active(&self, key: &str) -> Result<Option<SessionRow>>;
    /// Opens a session for `new.key`; if one is already open (a race), returns that one.
    async fn session_open(&self, new: &NewSession) -> Result<SessionRow>;
    /// Closes a session (`/new`); its transcript stays.
    async fn session_close(&self, id: &str) -> Result<()>;
    /// The last `limit` messages of a session, oldest first.
    async fn messages_recent(&self, session_id: &str, limit: usize) -> Result<Vec<StoredMessage>>;
    /// Appends messages in order (bumping the session version) and returns the last seq.
    async fn messages_append(&self, session_id: &str, msgs: &[NewMessage]) -> Result<i64>;
    /// Whether the user message of an inbound event is already in the session (a re-run turn).
    async fn message_seq_for_event(&self, session_id: &str, event_id: &str) -> Result<Option<i64>>;
}

/// Ending an event atomically: transcript, reply, usage and inbox status in one transaction.
#[async_trait]
pub trait TurnStore: Send + Sync {
    /// Applies a [`TurnCommit`] in one transaction; returns the reply's outbox row.
    async fn finish_event(&self, commit: &TurnCommit) -> Result<Option<OutboxRow>>;
    /// Tokens and cost of one user since `since_ms` (turns counts agent turns only).
    async fn usage_since(&self, user_id: &str, since_ms: i64) -> Result<UsageTotals>;
    /// Records a model call outside a turn (the archivist, a compaction summary).
    async fn usage_add(&self, usage: &UsageRecord) -> Result<()>;
    /// Tokens and cost by model of one user (`None`: everyone) since `since_ms`, dearest first.
    async fn usage_by_model(&self, user_id: Option<&str>, since_ms: i64) -> Result<Vec<ModelUsage>>;
    /// The context size (estimated tokens) of a session's latest turn, 0 if none.
    async fn last_context(&self, session_id: &str) -> Result<i64>;
}

/// Summary checkpoints of long sessions.
#[async_trait]
pub trait SummaryStore: Send + Sync {
    async fn summary_latest(&self, session_id: &str) -> Result<Option<SummaryRow>>;
    /// Stores a checkpoint (idempotent for the same `up_to_seq`).
    async fn summary_add(&self, session_id: &str, up_to_seq: i64, text: &str) -> Result<()>;
    /// The first `limit` messages of a session after `after_seq`, oldest first: what a checkpoint
    /// does not cover yet.
    async fn messages_after(&self, session_id: &str, after_seq: i64, limit: usize) -> Result<Vec<StoredMessage>>;
}

/// The outbox: replies are written here before they are sent.
#[async_trait]
pub trait OutboxStore: Send + Sync {
    /// The row for `key`, creating a `draft` row (for streaming) if there is none.
    async fn outbox_draft(&self, new: &NewOutbox) -> Result<OutboxRow>;
    /// Adds a `pending` reply (no-op returning the existing row if the key exists and is not a draft).
    async fn outbox_enqueue(&self, new: &NewOutbox) -> Result<OutboxRow>;
    /// Records delivery progress: platform ids of the chunks sent so far.
    async fn outbox_progress(&self, id: i64, platform_ids: &[String]) -> Result<()>;
    /// Pending rows of the given channels due at `now_ms`, oldest first.
    async fn outbox_due(&self, channels: &[String], now_ms: i64, limit: usize) -> Result<Vec<OutboxRow>>;
    /// Marks a row sent (with its platform ids) or failed, or reschedules it.
    async fn outbox_mark(&self, id: i64, mark: &OutboxMark) -> Result<()>;
    async fn outbox_get(&self, key: &str) -> Result<Option<OutboxRow>>;
}

/// Long-term memory, always scoped to one user and one [`MemoryScope`].
#[async_trait]
pub trait MemoryStore: Send + Sync {
    async fn memory_add(&self, owner: &MemoryScope, text: &str, source: Option<&str>) -> Result<MemoryRow>;
    /// Full-text search ranked by relevance, then recency.
    async fn memory_search(&self, owner: &MemoryScope, query: &str, limit: usize) -> Result<Vec<MemoryRow>>;
    /// Most recent first.
    async fn memory_list(&self, owner: &MemoryScope, limit: usize) -> Result<Vec<MemoryRow>>;
    /// `false` when the id does not exist for this owner and scope.
    async fn memory_forget(&self, owner: &MemoryScope, id: i64) -> Result<bool>;
    /// Replaces a memory's text (a fact that changed); `false` when it is not this owner's.
    async fn memory_update(&self, owner: &MemoryScope, id: i64, text: &str) -> Result<bool>;
}

/// The queue of texts waiting for a vector (see `memory::embed`). It survives restarts; each
/// batch is claimed with a token, and a vector is stored only while its claim still holds (a
/// text changed meanwhile is queued again, never stored with the old text's vector).
#[async_trait]
pub trait EmbedQueueStore: Send + Sync {
    /// With a model: from now on, queue each new or changed memory and transcript message this
    /// store writes. Without: stop, and forget which models were backfilled (what is written
    /// meanwhile is queued by the next backfill).
    async fn embed_track(&self, model: Option<&str>) -> Result<()>;
    /// Queues every memory and transcript message without a vector of `model`, once per model
    /// (`force`: again); the count queued.
    async fn embed_backfill(&self, model: &str, force: bool) -> Result<u64>;
    /// Claims up to `limit` due entries for `lease_ms` under `claim`, with their texts (entries
    /// whose text is gone are dropped).
    async fn embed_claim(&self, claim: &str, limit: usize, lease_ms: i64) -> Result<Vec<EmbedItem>>;
    /// Stores the vectors of `model` whose entries `claim` still holds and dequeues them; the count stored.
    async fn embed_done(&self, claim: &str, model: &str, done: &[(EmbedRef, Vec<u8>)]) -> Result<u64>;
    /// Gives the entries back, due again at `next_ms`, with the error that stopped them.
    async fn embed_retry(&self, claim: &str, items: &[EmbedRef], next_ms: i64, error: &str) -> Result<()>;
    async fn embed_progress(&self, model: &str) -> Result<EmbedProgress>;
}

/// The vectors recall compares a query with, one owner's at a time (an exact search: a person
/// has thousands of memories, not millions).
#[async_trait]
pub trait VectorStore: Send + Sync {
    /// The owner's memory vectors made by `model`: (memory id, vector bytes).
    async fn memory_vectors(&self, owner: &MemoryScope, model: &str) -> Result<Vec<(i64, Vec<u8>)>>;
    /// The owner's memories among `ids` (others' and missing ones are left out), in no order.
    async fn memories_by_ids(&self, owner: &MemoryScope, ids: &[i64]) -> Result<Vec<MemoryRow>>;
    /// The vectors of `model` of the transcript messages `within` reaches for `user_id`
    /// (session `except` left out): (session id, seq, vector bytes).
    async fn transcript_vectors(
        &self,
        user_id: &str,
        within: &TranscriptScope,
        model: &str,
        except: Option<&str>,
    ) -> Result<Vec<(String, i64, Vec<u8>)>>;
    /// The messages among `refs` (session id, seq) that `within` reaches for `user_id`, in no order.
    async fn transcript_hits(
        &self,
        user_id: &str,
        within: &TranscriptScope,
        refs: &[(String, i64)],
    ) -> Result<Vec<TranscriptHit>>;
}

/// One-time codes and identity links: pairing and `/link`.
#[async_trait]
pub trait AccessStore: Send + Sync {
    /// Stores a new code; `Conflict` if the same (kind, code) exists.
    async fn code_create(&self, code: &CodeRow) -> Result<()>;
    /// Deletes and returns the code when it exists, is of `kind` and is alive at `now_ms`
    /// (single use: two concurrent takers never both get it).
    async fn code_take(&self, kind: CodeKind, code: &str, now_ms: i64) -> Result<Option<CodeRow>>;
    /// Codes of `kind` alive at `now_ms`, newest first.
    async fn codes_live(&self, kind: CodeKind, now_ms: i64) -> Result<Vec<CodeRow>>;
    /// Links `identity` to `user_id` (which must exist), in one transaction. If the identity
    /// belonged to another user, that user's memories, sessions and usage move to `user_id`, and
    /// the old user is deleted once no identity points at it. Returns the previous user id.
    async fn identity_link(&self, identity: &Identity, user_id: &str) -> Result<Option<String>>;
}

/// The record of triage decisions and of permission decisions on tool calls.
#[async_trait]
pub trait AuditStore: Send + Sync {
    async fn decision_add(&self, d: &DecisionRow) -> Result<()>;
    /// Most recent first.
    async fn decisions_recent(&self, limit: usize) -> Result<Vec<DecisionRow>>;
    /// How many decisions of each kind since `since_ms`, sorted by kind.
    async fn decisions_since(&self, since_ms: i64) -> Result<Vec<(String, i64)>>;
    async fn audit_add(&self, row: &AuditRow) -> Result<()>;
    /// Most recent first.
    async fn audit_recent(&self, limit: usize) -> Result<Vec<AuditRow>>;
}

/// Approvals of risky tool calls, and questions to a person (`ask_user`, kind `question`). They
/// are created by [`TurnStore::finish_event`] (with the turn that parks on them).
#[async_trait]
pub trait ApprovalStore: Send + Sync {
    async fn approval_get(&self, id: &str) -> Result<Option<ApprovalRow>>;
    /// Decides a pending approval (compare-and-swap from `pending`). When it wins, in the same
    /// transaction, the approval's message (outbox key `approval:<id>`) gets `decision.message`
    /// as its text, loses its buttons and becomes `pending` again, so the delivery worker edits
    /// the message already shown. `None` when the approval was not pending (or does not exist).
    async fn approval_decide(&self, id: &str, decision: &ApprovalDecision) -> Result<Option<ApprovalRow>>;
    /// Pending approvals whose `expires_ms` is at or before `now_ms`, oldest first.
    async fn approvals_due(&self, now_ms: i64, limit: usize) -> Result<Vec<ApprovalRow>>;
    /// Pending approvals of a session, oldest first.
    async fn approvals_pending(&self, session_id: &str) -> Result<Vec<ApprovalRow>>;
    /// Whether `tool` was approved "always for this session" in this session.
    async fn approval_granted(&self, session_id: &str, tool: &str) -> Result<bool>;
    /// The oldest pending, unexpired (`expires_ms > now_ms`) request in `conversation` that
    /// `waiting` names: a question asked of an identity (a message from them there answers it),
    /// or the request whose message was delivered as a platform message id (its outbox row
    /// `approval:<id>` lists that id). One indexed query.
    async fn approval_waiting(
        &self,
        conversation: &str,
        waiting: Waiting<'_>,
        now_ms: i64,
    ) -> Result<Option<ApprovalRow>>;
}

/// Child agents (`delegate`): one row per call, linked to the parent's call and the child's
/// own session.
#[async_trait]
pub trait DelegationStore: Send + Sync {
    /// Inserts `row`; when the parent's call already has one (a re-run), returns that one
    /// unchanged instead.
    async fn delegation_start(&self, row: &DelegationRow) -> Result<DelegationRow>;
    async fn delegation_get(&self, id: &str) -> Result<Option<DelegationRow>>;
    /// The delegation of a parent's call, or of a child session.
    async fn delegation_find(&self, session_id: &str, call_id: Option<&str>) -> Result<Option<DelegationRow>>;
    /// Moves an open (`running` or `waiting`) delegation on; `None` when it had ended already.
    async fn delegation_update(&self, id: &str, update: &DelegationUpdate) -> Result<Option<DelegationRow>>;
    async fn delegations_list(&self, filter: &DelegationFilter) -> Result<Vec<DelegationRow>>;
    /// Marks a background task's result as handed to the parent's inbox; `false` when it was
    /// already (exactly one caller wins).
    async fn delegation_delivered(&self, id: &str) -> Result<bool>;
}

/// People, their identities on each channel, and conversations.
#[async_trait]
pub trait UserStore: Send + Sync {
    async fn identity_user(&self, identity: &Identity) -> Result<Option<UserRow>>;
    /// Returns the user of `identity`, creating `new` and linking the identity if it has none.
    async fn user_ensure(&self, identity: &Identity, new: &NewUser) -> Result<UserRow>;
    async fn conversation_get(&self, id: &str) -> Result<Option<ConversationRow>>;
    /// Returns the conversation, creating it with `new` as its first state if it does not exist.
    async fn conversation_ensure(&self, new: &ConversationRow) -> Result<ConversationRow>;
    /// The identities of a user, sorted.
    async fn user_identities(&self, user_id: &str) -> Result<Vec<Identity>>;
    /// `false` when there is no such user.
    async fn user_set_role(&self, user_id: &str, role: UserRole) -> Result<bool>;
}

/// The web chat's own message log (its "platform" side).
#[async_trait]
pub trait WebStore: Send + Sync {
    /// Inserts a message; idempotent on `key` (returns the existing row).
    async fn web_insert(&self, new: &NewWebMessage) -> Result<WebMessage>;
    async fn web_update(&self, id: i64, text: &str, buttons: &[butler_channel::Button]) -> Result<Option<WebMessage>>;
    /// Messages with id greater than `after_id`, oldest first.
    async fn web_list(&self, conversation: &str, after_id: i64, limit: usize) -> Result<Vec<WebMessage>>;
}

/// The web chat's conversation list: titles, deleting (hiding) and what Butler wrote there on
/// its own; and the buttons a click may still press.
#[async_trait]
pub trait WebConversationStore: Send + Sync {
    /// The conversations of `owner` (an identity, `web:alice`) and of every other identity of the
    /// same person (the owner's `cli:local` briefings), that show in the list (never deleted, or
    /// with messages since), latest activity first.
    async fn web_conversations(&self, owner: &str, limit: usize) -> Result<Vec<WebConversation>>;
    /// One conversation's entry, shown or not; `None` when there is no such conversation.
    async fn web_conversation(&self, id: &str) -> Result<Option<WebConversation>>;
    /// Sets the user's title (`None`: back to the automatic one); `false` when there is no such
    /// conversation.
    async fn web_rename(&self, id: &str, title: Option<&str>) -> Result<bool>;
    /// Deletes the conversation from the page: it and every message it holds now are hidden
    /// (rows are kept); a later message shows it again. `false` when there is no such conversation.
    async fn web_hide(&self, id: &str) -> Result<bool>;
    /// Records that Butler wrote to the conversation on its own at `at_ms` (keeps the latest).
    async fn web_mark_unprompted(&self, id: &str, at_ms: i64) -> Result<()>;
    /// Every button currently on the conversation's messages, in message order.
    async fn web_live_buttons(&self, id: &str) -> Result<Vec<butler_channel::Button>>;
}

/// Scheduled jobs and their runs (`crate::schedule`). Claiming a run is one transaction: the
/// job's `next_fire_ms` moves on (compare-and-swap) and the run row is inserted under
/// UNIQUE(schedule_id, fire_at_ms), so each (job, fire time) has one winner across processes.
#[async_trait]
pub trait ScheduleStore: Send + Sync {
    /// Creates the job, or updates the one with the same (scope, name) in place (keeping its id,
    /// `paused` and, unless `cron`, `at_ms` or `tz` changed, its `next_fire_ms`).
    async fn schedule_put(&self, new: &NewSchedule) -> Result<ScheduleRow>;
    async fn schedules_list(&self, filter: &ScheduleFilter) -> Result<Vec<ScheduleRow>>;
    /// `false` when nothing changed (no such job; an `Advance` whose `from` no longer holds).
    async fn schedule_set(&self, id: i64, change: &ScheduleChange) -> Result<bool>;
    /// The run row (status `claimed`), or `None` when another claimer won: the advance did not
    /// hold, or the (job, fire time) already has a run (the advance is kept then).
    async fn schedule_claim(&self, claim: &RunClaim) -> Result<Option<RunRow>>;
    async fn schedule_runs(&self, query: &RunQuery) -> Result<Vec<RunRow>>;
    /// Records what the scheduler learnt about a run (`running`, or `dropped` with the reason);
    /// `false` when there is no such run.
    async fn schedule_run_note(
        &self,
        schedule_id: i64,
        fire_at_ms: i64,
        status: RunStatus,
        error: Option<&str>,
    ) -> Result<bool>;
}

/// What one event produced, in one read, and when events settle: what the web chat's APIs and
/// `butler chat` wait on.
#[async_trait]
pub trait OutcomeStore: Send + Sync {
    /// The event's status, reply and failure notice, and the approvals and questions pending in
    /// its session (the open session its key names); `None` for an unknown event.
    async fn event_outcome(&self, event_id: &str) -> Result<Option<EventOutcome>>;
    /// Announces, from now on, each event whose outcome this process's store settles further:
    /// its final status (the turn's commit, a drop, a failure), and its reply's delivery.
    fn settled(&self) -> tokio::sync::broadcast::Receiver<Settled>;
}

/// What a person sets about themselves: their time zone (`/timezone`) and the memories they
/// pinned (`/memory pin ID`: always known, in each new private session's prompt).
#[async_trait]
pub trait ProfileStore: Send + Sync {
    /// Sets the user's IANA time zone; `true` when the user exists.
    async fn user_set_timezone(&self, user_id: &str, timezone: &str) -> Result<bool>;
    /// Pins (or unpins) one of the user's personal memories; `false` when it is not theirs.
    async fn memory_pin(&self, user_id: &str, memory_id: i64, pinned: bool) -> Result<bool>;
    /// The user's pinned memories, in the order they were pinned.
    async fn memory_pins(&self, user_id: &str) -> Result<Vec<MemoryRow>>;
}

/// Past conversations: a full-text search over what was said in them (user and assistant text,
/// never tool output), a person's direct conversations, and taking one up again. Every method
/// is scoped to one person: another person's direct sessions are never read or changed.
#[async_trait]
pub trait TranscriptStore: Send + Sync {
    /// Messages matching the words of `query` (OR semantics, common words left out) in the
    /// sessions `within` allows for `user_id`, except session `except_session`; best match
    /// first, then newest. A query without words finds nothing.
    async fn transcript_search(
        &self,
        user_id: &str,
        within: &TranscriptScope,
        query: &str,
        except_session: Option<&str>,
        limit: usize,
    ) -> Result<Vec<TranscriptHit>>;
    /// The person's direct sessions with at least one message, on every channel, latest
    /// activity first.
    async fn sessions_recent(&self, user_id: &str, limit: usize) -> Result<Vec<SessionSummary>>;
    /// Makes `session_id` (a direct session of `user_id`) the open session of `key` (a direct
    /// key), in one transaction: the session open for `key` now is closed, the resumed one
    /// takes the key and is open again. `None`, changing nothing, when the session is not this
    /// person's direct session, `key` is not a direct key or holds someone else's open session,
    /// or the session is open under another key (it must be closed there first).
    async fn session_resume(&self, user_id: &str, session_id: &str, key: &str) -> Result<Option<SessionRow>>;
}

/// Replies held because the platform's reply window was closed (WhatsApp's 24 hours): pending
/// far in the future, their error starting with `held:`, until the person writes again.
#[async_trait]
pub trait HeldStore: Send + Sync {
    /// Makes every held reply to `conversation` due now, `notice` put before its text; how many.
    async fn outbox_release(&self, conversation: &str, notice: &str) -> Result<u64>;
}

/// Where a channel has read up to on its platform (a Matrix sync token), under a name of the
/// channel's choosing; shared by the replicas.
#[async_trait]
pub trait CursorStore: Send + Sync {
    async fn cursor_get(&self, name: &str) -> Result<Option<String>>;
    /// Replaces the cursor (call it only once everything before it is stored).
    async fn cursor_set(&self, name: &str, cursor: &str) -> Result<()>;
}

/// Secrets Butler makes for itself and the replicas share (the key that signs answer links).
#[async_trait]
pub trait KeyStore: Send + Sync {
    /// The secret named `name`; `fresh` becomes it when there is none yet (of several replicas
    /// asking at once, one wins and all read its secret).
    async fn key_get_or_insert(&self, name: &str, fresh: &str) -> Result<String>;
}

/// Whether the database answers: readiness and `doctor`.
#[async_trait]
pub trait PingStore: Send + Sync {
    /// A cheap round trip.
    async fn ping(&self) -> Result<()>;
}

/// Everything Butler persists. Two implementations: [`SqliteStore`](super::SqliteStore) and
/// [`PgStore`](super::PgStore).
#[async_trait]
pub trait Store:
    InboxStore
    + DeadLetterStore
    + SessionStore
    + TurnStore
    + OutboxStore
    + HeldStore
    + MemoryStore
    + UserStore
    + WebStore
    + WebConversationStore
    + DelegationStore
    + AccessStore
    + AuditStore
    + ApprovalStore
    + ScheduleStore
    + SummaryStore
    + ReplicaStore
    + RecoveryStore
    + OutcomeStore
    + ProfileStore
    + EmbedQueueStore
    + VectorStore
    + TranscriptStore
    + PingStore
    + CursorStore
    + KeyStore
    + Send
    + Sync
{
    fn backend(&self) -> Backend;
    /// Applies pending migrations of this backend.
    async fn migrate(&self) -> Result<()>;
    /// Closes the pool, waiting for in-flight queries.
    async fn close(&self);
}
