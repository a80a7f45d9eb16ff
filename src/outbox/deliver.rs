//! The delivery worker: takes due outbox rows, renders and chunks them for their channel,
//! sends (or finishes the streamed draft by editing it), records each platform id as it goes,
//! and retries with backoff. Replies of one conversation go out in order; different
//! conversations go out concurrently.

use super::{chunk_key, Channels};
use crate::metrics::METRICS;
use crate::store::{now_ms, OutboxMark, OutboxRow, OutboxStatus, OutboxStore, ReplicaStore};
use butler_channel::{chunk_text, ChannelError, ChunkLimit, ConversationRef, MessageRef, Outbound};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::{mpsc, Notify, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

#[derive(Clone, Debug)]
pub struct DeliveryConfig {
    /// Rows fetched per poll.
    pub batch: usize,
    /// Conversations delivered concurrently.
    pub concurrency: usize,
    /// Attempts (not counting rate limits) before a reply is marked failed.
    pub max_attempts: i32,
    /// How often the store is polled for rows not handed over (retries, rows left by a crash).
    pub poll: Duration,
}

impl Default for DeliveryConfig {
    fn default() -> Self {
        Self { batch: 128, concurrency: 64, max_attempts: 10, poll: Duration::from_secs(1) }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

pub struct Deliverer {
    store: Arc<dyn OutboxStore>,
    channels: Channels,
    cfg: DeliveryConfig,
    /// Poll the store now (something may be due that was not handed over).
    wake: Notify,
    handoff_tx: mpsc::Sender<OutboxRow>,
    handoff_rx: Mutex<Option<mpsc::Receiver<OutboxRow>>>,
    /// Rows queued or in flight, by conversation (a conversation's rows go out in order, one
    /// at a time), and the ids among them.
    state: Mutex<Queues>,
    permits: Arc<Semaphore>,
    /// With several replicas: each row is claimed in the store before it is sent, so that only
    /// one replica sends it.
    claims: Option<Arc<dyn ReplicaStore>>,
}

/// How long a claimed row is this replica's to send before another may try (a crash mid-send).
const CLAIM_MS: i64 = 60_000;

#[derive(Default)]
struct Queues {
    by_conversation: HashMap<String, VecDeque<OutboxRow>>,
    ids: HashSet<i64>,
    /// Deliveries ended so far, and the latest ones (id -> its number): a poll whose query was
    /// answered before a delivery ended may still list that row as due, and must not queue it
    /// again (without replicas nothing else stops a second send).
    ended: u64,
    recent: HashMap<i64, u64>,
    order: VecDeque<i64>,
}

/// How many ended deliveries are remembered against stale polls.
const RECENT: usize = 4096;

impl Queues {
    /// Row `id`'s delivery ended (sent, failed or to be retried): it may be queued again only
    /// by what is read from the store from now on.
    fn ended(&mut self, id: i64) {
        self.ids.remove(&id);
        self.ended += 1;
        self.recent.insert(id, self.ended);
        self.order.push_back(id);
        if self.order.len() > RECENT {
            if let Some(old) = self.order.pop_front() {
                if self.recent.get(&old).is_some_and(|n| self.ended - n >= RECENT as u64) {
                    self.recent.remove(&old);
                }
            }
        }
    }

    /// Whether `id` ended after deliveries numbered `since` (so a read made then is stale).
    fn ended_since(&self, id: i64, since: u64) -> bool {
        self.recent.get(&id).is_some_and(|n| *n > since)
    }
}

/// The agent nudges the deliverer when it edited an approval request's message.
impl crate::agent::Nudge for Deliverer {
    fn wake(&self) {
        Deliverer::wake(self);
    }
}

impl Deliverer {
    /// `claims`: the store, with several replicas (rows are claimed before they are sent).
    pub(crate) fn new(
        store: Arc<dyn OutboxStore>,
        channels: Channels,
        cfg: DeliveryConfig,
        claims: Option<Arc<dyn ReplicaStore>>,
    ) -> Arc<Self> {
        let (handoff_tx, handoff_rx) = mpsc::channel(cfg.batch * 8);
        let permits = Arc::new(Semaphore::new(cfg.concurrency.max(1)));
        Arc::new(Self {
            store,
            channels,
            cfg,
            wake: Notify::new(),
            handoff_tx,
            handoff_rx: Mutex::new(Some(handoff_rx)),
            state: Mutex::new(Queues::default()),
            permits,
            claims,
        })
    }

    /// Something may be due that was not handed over: poll the store now.
    pub(crate) fn wake(&self) {
        self.wake.notify_one();
    }

    /// Delivers a row just committed, without waiting for the next poll. If the hand-over queue
    /// is full the row is still safe in the store and the next poll finds it.
    pub(crate) fn hand_over(&self, row: OutboxRow) {
        if row.status != OutboxStatus::Pending {
            return;
        }
        if self.handoff_tx.try_send(row).is_err() {
            self.wake();
        }
    }

    /// Delivers until `cancel` fires, then finishes what is in flight.
    pub(crate) async fn run(self: Arc<Self>, cancel: CancellationToken) {
        let Some(mut rx) = lock(&self.handoff_rx).take() else {
            tracing::error!("the delivery worker was started twice");
            return;
        };
        let mut tasks = JoinSet::new();
        let mut poll = tokio::time::interval(self.cfg.poll);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut batch = Vec::with_capacity(self.cfg.batch);
        loop {
            tokio::select! {
                n = rx.recv_many(&mut batch, self.cfg.batch) => {
                    if n == 0 {
                        break;
                    }
                    self.schedule(batch.drain(..), &mut tasks);
                }
                _ = self.wake.notified() => self.poll(&mut tasks).await,
                _ = poll.tick() => self.poll(&mut tasks).await,
                Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
                _ = cancel.cancelled() => break,
            }
        }
        while tasks.join_next().await.is_some() {}
    }

    /// Delivers everything due now, for shutdown; gives up after `within`.
    pub(crate) async fn flush(self: Arc<Self>, within: Duration) {
        let deadline = tokio::time::Instant::now() + within;
        let mut tasks = JoinSet::new();
        loop {
            self.poll(&mut tasks).await;
            if tasks.is_empty() {
                return;
            }
            tokio::select! {
                _ = tokio::time::sleep_until(deadline) => {
                    tracing::warn!("outbox flush did not finish before the grace period; the rest goes out at next start");
                    return;
                }
                _ = async { while tasks.join_next().await.is_some() {} } => {}
            }
        }
    }

    /// Queues every due row of the store (but a row whose delivery ended while the store was
    /// read: it was read as it was before).
    async fn poll(self: &Arc<Self>, tasks: &mut JoinSet<()>) {
        let since = lock(&self.state).ended;
        match self.store.outbox_due(&self.channels.names(), now_ms(), self.cfg.batch).await {
            Ok(rows) => {
                let fresh: Vec<OutboxRow> = {
                    let q = lock(&self.state);
                    rows.into_iter().filter(|r| !q.ended_since(r.id, since)).collect()
                };
                self.schedule(fresh.into_iter(), tasks)
            }
            Err(e) => tracing::warn!(error = %e, "outbox poll failed"),
        }
    }

    /// Queues rows behind their conversation's delivery, starting a task for each conversation
    /// that has none.
    fn schedule(self: &Arc<Self>, rows: impl Iterator<Item = OutboxRow>, tasks: &mut JoinSet<()>) {
        let (mut start, mut private) = (Vec::new(), Vec::new());
        {
            let mut q = lock(&self.state);
            for row in rows {
                if !q.ids.insert(row.id) {
                    continue; // already queued or in flight
                }
                // The answer to a click (an acknowledgement, an alert) is no part of the
                // conversation's order: it must not wait behind a reply held by a rate limit.
                if row.private_to.is_some() {
                    private.push(row);
                    continue;
                }
                match q.by_conversation.get_mut(&row.conversation) {
                    Some(waiting) => waiting.push_back(row),
                    None => {
                        q.by_conversation.insert(row.conversation.clone(), VecDeque::new());
                        start.push(row);
                    }
                }
            }
        }
        for first in start {
            let me = self.clone();
            tasks.spawn(async move { me.drain(first).await });
        }
        for row in private {
            let me = self.clone();
            tasks.spawn(async move {
                let id = row.id;
                if let Ok(_permit) = me.permits.clone().acquire_owned().await {
                    me.deliver(row).await;
                }
                lock(&me.state).ended(id);
            });
        }
    }

    /// Delivers `row`, then the rows queued behind it for the same conversation.
    async fn drain(&self, mut row: OutboxRow) {
        let Ok(_permit) = self.permits.clone().acquire_owned().await else { return };
        loop {
            let (id, conversation) = (row.id, row.conversation.clone());
            self.deliver(row).await;
            let mut q = lock(&self.state);
            q.ended(id);
            match q.by_conversation.get_mut(&conversation).and_then(VecDeque::pop_front) {
                Some(next) => row = next,
                None => {
                    q.by_conversation.remove(&conversation);
                    return;
                }
            }
        }
    }

    #[tracing::instrument(skip_all, fields(outbox_id = row.id, key = %row.key, channel = %row.channel))]
    async fn deliver(&self, row: OutboxRow) {
        let _watched = crate::metrics::WATCHDOG.watch(crate::metrics::Work::Delivery);
        if let Some(claims) = &self.claims {
            match claims.outbox_claim(row.id, now_ms() + CLAIM_MS).await {
                Ok(true) => {}
                Ok(false) => return, // another replica sends it, or it is not due any more
                Err(e) => {
                    tracing::warn!(error = %e, "could not claim a reply for sending; it is retried");
                    return;
                }
            }
        }
        let mark = match self.send_row(&row).await {
            Ok(platform_ids) => {
                METRICS.outbox_sent.inc();
                METRICS.deliveries.inc(&[&row.channel, "sent"]);
                OutboxMark::Sent { platform_ids, text: row.text.clone() }
            }
            Err(ChannelError::RateLimited { retry_after }) => {
                METRICS.outbox_retried.inc();
                METRICS.deliveries.inc(&[&row.channel, "retried"]);
                OutboxMark::Retry {
                    next_attempt_ms: now_ms() + retry_after.as_millis() as i64,
                    error: "rate limited".into(),
                    count_attempt: false,
                }
            }
            Err(ChannelError::OutsideWindow(why)) => {
                METRICS.deliveries.inc(&[&row.channel, "held"]);
                tracing::info!(error = %why, "outside the platform's reply window: held until the person writes");
                OutboxMark::Retry {
                    next_attempt_ms: now_ms() + super::held::HOLD_MS,
                    error: format!("{}{why}", super::held::HELD),
                    count_attempt: false,
                }
            }
            Err(e) if e.is_retryable() && row.attempts + 1 < self.cfg.max_attempts => {
                METRICS.outbox_retried.inc();
                METRICS.deliveries.inc(&[&row.channel, "retried"]);
                let backoff = 1000i64 << row.attempts.clamp(0, 8);
                let jitter = rand::random::<u64>() % 500;
                tracing::info!(error = %e, attempt = row.attempts + 1, "delivery failed; will retry");
                OutboxMark::Retry {
                    next_attempt_ms: now_ms() + backoff.min(300_000) + jitter as i64,
                    error: e.to_string(),
                    count_attempt: true,
                }
            }
            Err(e) => {
                METRICS.outbox_failed.inc();
                METRICS.deliveries.inc(&[&row.channel, "failed"]);
                tracing::error!(error = %e, "delivery failed for good");
                OutboxMark::Failed { error: e.to_string() }
            }
        };
        if let Err(e) = self.store.outbox_mark(row.id, &mark).await {
            tracing::warn!(error = %e, "could not record delivery result; it will be retried");
        }
    }

    /// Delivers every chunk not delivered yet and returns all platform ids. Progress is recorded
    /// after each chunk but the last (whose id is recorded with the `Sent` mark).
    async fn send_row(&self, row: &OutboxRow) -> Result<Vec<String>, ChannelError> {
        let channel = self
            .channels
            .get(&row.channel)
            .ok_or_else(|| ChannelError::Rejected(format!("no channel named `{}` is configured", row.channel)))?;
        let conversation: ConversationRef = row.conversation.parse().map_err(|e: String| ChannelError::Rejected(e))?;
        let caps = channel.caps();
        // UTF-16 units are never fewer than characters, so this also fits platforms counting characters.
        // A file goes as one message with the text as its caption (the adapter splits a caption
        // too long for its platform); only text is chunked.
        let chunks = match row.file {
            Some(_) => vec![row.text.clone()],
            None => chunk_text(&row.text, ChunkLimit::Utf16(caps.max_len)),
        };
        let mut ids = row.platform_ids.clone();
        let last = chunks.len() - 1;
        for (i, chunk) in chunks.into_iter().enumerate() {
            let msg = Outbound {
                conversation: conversation.clone(),
                text: chunk,
                // The last chunk carries the buttons; a platform without buttons writes the
                // choices into the text its own way (Signal: numbered, answered by a reply).
                buttons: if i == last { row.buttons.clone() } else { vec![] },
                reply_to: if i == 0 { row.reply_to.clone() } else { None },
                draft: false,
                key: Some(chunk_key(&row.key, i)),
                private_to: row.private_to.clone(),
                file: if i == 0 { row.file.clone() } else { None },
                title: row.title.clone(),
            };
            match ids.get(i) {
                // The streamed draft (or a first chunk of an earlier attempt): make it final.
                Some(id) if i == 0 && row.file.is_none() => {
                    let target = MessageRef { conversation: conversation.clone(), id: id.clone() };
                    match channel.edit(&target, &msg).await {
                        Ok(()) | Err(ChannelError::NotModified) => {}
                        Err(ChannelError::NotFound(_)) => {
                            ids[0] = channel.send(&msg).await?.id;
                            if i != last {
                                self.progress(row.id, &ids).await?;
                            }
                        }
                        Err(e) => return Err(e),
                    }
                }
                Some(_) => {} // delivered by an earlier attempt
                None => {
                    ids.push(channel.send(&msg).await?.id);
                    if i != last {
                        self.progress(row.id, &ids).await?;
                    }
                }
            }
        }
        Ok(ids)
    }

    async fn progress(&self, id: i64, ids: &[String]) -> Result<(), ChannelError> {
        self.store.outbox_progress(id, ids).await.map_err(|e| ChannelError::Transient(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poll_that_read_before_a_delivery_ended_does_not_queue_the_row_again() {
        let mut q = Queues::default();
        q.ids.insert(7);
        let since = q.ended; // a poll starts reading the store
        q.ended(7); // row 7's delivery ends (marked sent) before the poll's answer is used
        assert!(q.ended_since(7, since), "the poll read row 7 as it was before: skip it");
        assert!(!q.ended_since(7, q.ended), "a later read may queue it again (a retry)");
        assert!(!q.ended_since(8, since), "other rows are queued");
        assert!(!q.ids.contains(&7));
        for id in 0..(RECENT as i64 * 3) {
            q.ended(100 + id);
        }
        assert!(q.order.len() <= RECENT && q.recent.len() <= RECENT, "bounded: {}", q.recent.len());
    }
}
