//! The dispatcher: claims pending inbox events (oldest first), applies triage's decision and
//! records the outcome. A session that cannot take more work leaves its event pending, to be
//! offered again shortly; nothing is dropped for being busy. With several replicas, an event
//! whose session runs on another replica is handed to that replica (and wakes it).

use crate::cluster::{Cluster, Topic};
use crate::ids::HOOK_CHANNEL;
use crate::outbox::Deliverer;
use crate::session::retry::{dead_letter, poison_error, poisoned, retry_or_fail, until_recorded, TryEnd};
use crate::session::{Placement, Sessions};
use crate::store::{
    now_ms, AuditStore, DeadLetterStore, DecisionRow, InboxRow, InboxStatus, InboxStore, NewOutbox, OutboxStore,
    RecoveryStore, ReplicaStore, StoreError, TurnCommit, TurnStore,
};
use crate::triage::{Decision, Triage};
use butler_channel::{EventBody, InboundEvent, PrivateTo};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio::sync::{oneshot, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// Trigger events routed at once beside the dispatcher.
const SIDE_CONCURRENCY: usize = 4;
/// Delay before a busy session's event is offered again.
const BUSY_RETRY_MS: i64 = 300;
/// Delay before an event is offered again while no session lease can be taken (Redis away).
const AWAY_RETRY_MS: i64 = 1000;
const BATCH: usize = 256;

/// The store traits the dispatcher calls, one field each.
#[derive(Clone)]
pub struct DispatchStores {
    /// Claiming events and ending them.
    pub inbox: Arc<dyn InboxStore>,
    /// Offering an event again later without counting a try.
    pub dead_letters: Arc<dyn DeadLetterStore>,
    /// Handing an event to the replica of its session; taking back an unsure claim.
    pub replicas: Arc<dyn ReplicaStore>,
    /// Settling the drafts a failed event leaves.
    pub recovery: Arc<dyn RecoveryStore>,
    /// Committing triage's own answers.
    pub turns: Arc<dyn TurnStore>,
    /// Acknowledgements, and the notice of a failed event.
    pub outbox: Arc<dyn OutboxStore>,
    /// Triage's decisions, recorded.
    pub audit: Arc<dyn AuditStore>,
}

pub struct Dispatcher {
    store: DispatchStores,
    triage: Triage,
    /// Where session work goes (handed in by the app, the same sessions triage stops).
    sessions: Sessions,
    deliverer: Arc<Deliverer>,
    wake: Arc<Notify>,
    /// Channels whose events this process handles.
    channels: Vec<String>,
    /// This replica among the others; its id is recorded on claimed rows.
    cluster: Arc<Cluster>,
    /// `[limits] max_event_attempts`: tries before an event is set aside as `failed`.
    max_attempts: u32,
}

impl Dispatcher {
    /// `channels`: whose events this process handles; `cluster`: this replica (its id is
    /// recorded on claimed rows); `max_attempts`: `[limits] max_event_attempts`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        store: DispatchStores,
        triage: Triage,
        sessions: Sessions,
        deliverer: Arc<Deliverer>,
        wake: Arc<Notify>,
        channels: Vec<String>,
        cluster: Arc<Cluster>,
        max_attempts: u32,
    ) -> Self {
        Self { store, triage, sessions, deliverer, wake, channels, cluster, max_attempts }
    }

    /// Claims and routes events until `cancel` fires.
    pub async fn run(self: Arc<Self>, cancel: CancellationToken) {
        let side = Arc::new(Semaphore::new(SIDE_CONCURRENCY));
        let mut side_tasks = JoinSet::new();
        // Per source, the signal that its previous event is routed: events of one source keep
        // their order, different sources go side by side.
        let mut tails: HashMap<String, oneshot::Receiver<()>> = HashMap::new();
        // A claim that failed may have committed anyway (the answer lost with the connection):
        // when it was tried, so its events go back before the next claim.
        let mut unsure_since: Option<i64> = None;
        let mut last_claim_ms = 0;
        loop {
            if let Some(since) = unsure_since {
                match self.store.replicas.inbox_unclaim(self.cluster.worker(), since).await {
                    Ok(n) => {
                        if n > 0 {
                            tracing::info!(events = n, "events of a claim whose answer was lost are pending again");
                        }
                        unsure_since = None;
                    }
                    Err(_) => {
                        tokio::select! {
                            _ = tokio::time::sleep(Duration::from_millis(250)) => continue,
                            _ = cancel.cancelled() => break,
                        }
                    }
                }
            }
            // Rows are stamped in milliseconds: a claim starts in a later millisecond than the
            // last one ended, so undoing it from `tried` never undoes the earlier claim's rows.
            if now_ms() <= last_claim_ms {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            let tried = now_ms();
            let claimed = match self.store.inbox.inbox_claim(&self.channels, self.cluster.worker(), BATCH).await {
                Ok(rows) => {
                    last_claim_ms = now_ms();
                    rows
                }
                Err(e) => {
                    tracing::warn!(error = %e, "inbox claim failed");
                    unsure_since = Some(tried);
                    Vec::new()
                }
            };
            let n = claimed.len();
            for row in claimed {
                // Trigger decisions may ask the model (the classifier): they run beside the
                // dispatcher, so a slow classifier never holds up chat messages.
                if row.event.channel() == HOOK_CHANNEL {
                    let (done, next) = oneshot::channel::<()>();
                    let previous = tails.insert(row.event.conversation.to_string(), next);
                    let (side, me, stop) = (side.clone(), self.clone(), cancel.clone());
                    side_tasks.spawn(async move {
                        if let Some(previous) = previous {
                            let _ = previous.await;
                        }
                        let _permit = side.acquire_owned().await;
                        me.route_or_retry(&row, &stop).await;
                        drop(done);
                    });
                    continue;
                }
                self.route_or_retry(&row, &cancel).await;
            }
            while side_tasks.try_join_next().is_some() {}
            tails.retain(|_, rx| rx.try_recv() == Err(oneshot::error::TryRecvError::Empty));
            if n < BATCH {
                tokio::select! {
                    _ = self.wake.notified() => {}
                    _ = tokio::time::sleep(Duration::from_millis(250)) => {}
                    _ = cancel.cancelled() => break,
                }
            } else if cancel.is_cancelled() {
                break;
            }
        }
        while side_tasks.join_next().await.is_some() {}
    }

    async fn route_or_retry(&self, row: &InboxRow, stop: &CancellationToken) {
        // Its process died every time it ran, that many times in a row: never run it once more.
        // Deaths it only waited through (claimed, queued) were not charged to it.
        let spent = poisoned(row.crashes, self.max_attempts);
        let error = if spent {
            poison_error(row.crashes)
        } else {
            match self.route(row).await {
                Ok(()) => return,
                Err(e) => e.to_string(),
            }
        };
        let store = (&*self.store.inbox, &*self.store.outbox, &*self.store.recovery);
        let event = &row.event;
        until_recorded(stop, &event.id.0, || async {
            if spent {
                // This claim is not a try: give it back first, so the row counts the runs.
                self.store.dead_letters.inbox_release(&event.id.0, 0).await?;
                dead_letter(store, &self.deliverer, event, row.attempts - 1, &error).await
            } else {
                retry_or_fail(store, &self.deliverer, event, row.attempts, self.max_attempts, TryEnd::Failed(&error))
                    .await
            }
        })
        .await;
    }

    async fn route(&self, row: &InboxRow) -> Result<(), StoreError> {
        let event = &row.event;
        let id = &event.id.0;
        // With several replicas, an event of a conversation whose session runs elsewhere goes
        // there before triage: triage has effects (an approval decided, a question answered)
        // that must happen once, on the replica that then runs the session.
        if self.cluster.shared() && event.channel() != HOOK_CHANNEL && !matches!(event.body, EventBody::Trigger { .. })
        {
            match self.sessions.place(&crate::session::session_key(event)).await {
                Placement::Here => {}
                Placement::Elsewhere(owner) => return self.hand_to(id, &owner).await,
                Placement::Away => return self.store.dead_letters.inbox_release(id, AWAY_RETRY_MS).await,
            }
        }
        let verdict = self.triage.decide(event).await?;
        if let Some((kind, reason)) = &verdict.audit {
            tracing::info!(event = %id, actor = %event.actor.identity, decision = kind, reason = %reason, "triage decision");
            let record = DecisionRow {
                at_ms: now_ms(),
                event_id: id.clone(),
                actor: event.actor.identity.to_string(),
                conversation: event.conversation.to_string(),
                decision: kind.to_string(),
                reason: reason.clone(),
            };
            self.store.audit.decision_add(&record).await?;
        }
        // A click is answered privately (an alert, an ephemeral message), at once: a refusal
        // with its text, anything else with a bare acknowledgement.
        let click = match &event.body {
            EventBody::Action { interaction, .. } => {
                Some(PrivateTo { user_id: event.actor.identity.user_id.clone(), interaction: interaction.clone() })
            }
            _ => None,
        };
        if let (Some(to), false) = (&click, matches!(verdict.decision, Decision::Reply { .. })) {
            if to.interaction.is_some() {
                self.acknowledge(event, to.clone()).await?;
            }
        }
        match verdict.decision {
            Decision::Drop { reason } => {
                tracing::debug!(event = %id, reason, "dropped");
                self.store.inbox.inbox_finish(id, InboxStatus::Dropped, Some(&reason)).await
            }
            Decision::Done => self.store.inbox.inbox_finish(id, InboxStatus::Done, None).await,
            Decision::Reply { text } => self.answer(event, event.conversation.to_string(), text, click).await,
            Decision::Notify { conversation, text } => self.answer(event, conversation.to_string(), text, None).await,
            Decision::Session { key, mut job } => {
                job.attempt = row.attempts;
                let sessions = &self.sessions;
                match sessions.place(&key).await {
                    Placement::Here => match sessions.submit(&key, *job) {
                        Ok(()) => Ok(()),
                        Err(busy) => {
                            tracing::debug!(event = %id, %busy, "session busy; offering the event again shortly");
                            self.store.dead_letters.inbox_release(id, BUSY_RETRY_MS).await
                        }
                    },
                    Placement::Elsewhere(owner) => self.hand_to(id, &owner).await,
                    Placement::Away => self.store.dead_letters.inbox_release(id, AWAY_RETRY_MS).await,
                }
            }
        }
    }

    /// Hands event `id` to `owner`, the replica running its session, and wakes it.
    async fn hand_to(&self, id: &str, owner: &str) -> Result<(), StoreError> {
        tracing::debug!(event = %id, %owner, "session runs on another replica; handing the event over");
        self.store.replicas.inbox_route(id, owner).await?;
        self.cluster.publish(Topic::Wake, owner).await;
        Ok(())
    }

    /// A bare acknowledgement of a click (the platform stops showing it as pending), through the
    /// outbox, before the slow work the click starts.
    async fn acknowledge(&self, event: &InboundEvent, to: PrivateTo) -> Result<(), StoreError> {
        let ack = NewOutbox::message(format!("{}:ack", event.id), event.conversation.to_string(), "").private(Some(to));
        let row = self.store.outbox.outbox_enqueue(&ack).await?;
        self.deliverer.hand_over(row);
        Ok(())
    }

    /// Ends the event with `text` posted to `conversation` (or only to the clicker), through
    /// the outbox.
    async fn answer(
        &self,
        event: &InboundEvent,
        conversation: String,
        text: String,
        private_to: Option<PrivateTo>,
    ) -> Result<(), StoreError> {
        let reply_to = (conversation == event.conversation.to_string()).then(|| event.quote_target()).flatten();
        let commit = TurnCommit {
            inbox_id: event.id.0.clone(),
            inbox_status: InboxStatus::Done,
            session_id: None,
            messages: vec![],
            reply: Some(
                NewOutbox::message(crate::store::reply_key(&event.id.0), conversation, text)
                    .private(private_to)
                    .quoting(reply_to),
            ),
            usage: None,
            approvals: vec![],
            notices: vec![],
            fence: None,
        };
        if let Some(row) = self.store.turns.finish_event(&commit).await? {
            self.deliverer.hand_over(row);
        }
        Ok(())
    }
}
