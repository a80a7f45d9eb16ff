//! The delivery worker: takes due outbox rows, renders and chunks them for their channel,
//! sends (or finishes the streamed draft by editing it), records each platform id as it goes,
//! and retries with backoff. Replies of one conversation go out in order; different
//! conversations go out concurrently.

use super::{chunk_key, Channels};
use crate::metrics::METRICS;
use crate::store::{now_ms, OutboxMark, OutboxRow, Store};
use butler_channel::{chunk_text, ChannelError, ChunkLimit, ConversationRef, MessageRef, Outbound};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;
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
    /// Poll interval when nothing wakes the worker (retries come due on their own).
    pub poll: Duration,
}

impl Default for DeliveryConfig {
    fn default() -> Self {
        Self { batch: 128, concurrency: 32, max_attempts: 10, poll: Duration::from_millis(500) }
    }
}

pub struct Deliverer {
    store: Arc<dyn Store>,
    channels: Channels,
    cfg: DeliveryConfig,
    wake: Notify,
    /// Conversations with a delivery in flight (their later rows wait, to keep order).
    busy: Mutex<HashSet<String>>,
}

impl Deliverer {
    pub fn new(store: Arc<dyn Store>, channels: Channels, cfg: DeliveryConfig) -> Arc<Self> {
        Arc::new(Self { store, channels, cfg, wake: Notify::new(), busy: Mutex::new(HashSet::new()) })
    }

    /// Something was enqueued: look now instead of at the next poll.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// Delivers until `cancel` fires, then finishes what is in flight.
    pub async fn run(self: Arc<Self>, cancel: CancellationToken) {
        let mut tasks = JoinSet::new();
        loop {
            let started = self.clone().start_due(&mut tasks).await;
            if started == 0 || tasks.len() >= self.cfg.concurrency {
                tokio::select! {
                    _ = self.wake.notified() => {}
                    _ = tokio::time::sleep(self.cfg.poll) => {}
                    Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
                    _ = cancel.cancelled() => break,
                }
            }
            while tasks.try_join_next().is_some() {}
        }
        while tasks.join_next().await.is_some() {}
    }

    /// Delivers everything due now, for shutdown; gives up after `within`.
    pub async fn flush(self: Arc<Self>, within: Duration) {
        let deadline = tokio::time::Instant::now() + within;
        let mut tasks = JoinSet::new();
        loop {
            let started = self.clone().start_due(&mut tasks).await;
            if started == 0 && tasks.is_empty() {
                return;
            }
            tokio::select! {
                _ = tokio::time::sleep_until(deadline) => {
                    tracing::warn!("outbox flush did not finish before the grace period; the rest goes out at next start");
                    return;
                }
                _ = tasks.join_next(), if !tasks.is_empty() => {}
                _ = tokio::time::sleep(Duration::from_millis(20)), if tasks.is_empty() => {}
            }
        }
    }

    /// Starts one task per idle conversation with due rows; returns how many started.
    async fn start_due(self: Arc<Self>, tasks: &mut JoinSet<()>) -> usize {
        let rows = match self.store.outbox_due(&self.channels.names(), now_ms(), self.cfg.batch).await {
            Ok(rows) => rows,
            Err(e) => {
                tracing::warn!(error = %e, "outbox poll failed");
                return 0;
            }
        };
        let mut groups: Vec<(String, Vec<OutboxRow>)> = Vec::new();
        {
            let mut busy = self.busy.lock().unwrap_or_else(|p| p.into_inner());
            for row in rows {
                if let Some(g) = groups.iter_mut().find(|(c, _)| *c == row.conversation) {
                    g.1.push(row);
                } else if !busy.contains(&row.conversation) && tasks.len() + groups.len() < self.cfg.concurrency {
                    busy.insert(row.conversation.clone());
                    groups.push((row.conversation.clone(), vec![row]));
                }
            }
        }
        let started = groups.len();
        for (conversation, rows) in groups {
            let me = self.clone();
            tasks.spawn(async move {
                for row in rows {
                    me.deliver(row).await;
                }
                me.busy.lock().unwrap_or_else(|p| p.into_inner()).remove(&conversation);
            });
        }
        started
    }

    #[tracing::instrument(skip_all, fields(outbox_id = row.id, key = %row.key, channel = %row.channel))]
    async fn deliver(&self, row: OutboxRow) {
        let mark = match self.send_row(&row).await {
            Ok(()) => {
                METRICS.outbox_sent.inc();
                OutboxMark::Sent
            }
            Err(ChannelError::RateLimited { retry_after }) => {
                METRICS.outbox_retried.inc();
                OutboxMark::Retry {
                    next_attempt_ms: now_ms() + retry_after.as_millis() as i64,
                    error: "rate limited".into(),
                    count_attempt: false,
                }
            }
            Err(e) if e.is_retryable() && row.attempts + 1 < self.cfg.max_attempts => {
                METRICS.outbox_retried.inc();
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
                tracing::error!(error = %e, "delivery failed for good");
                OutboxMark::Failed { error: e.to_string() }
            }
        };
        if let Err(e) = self.store.outbox_mark(row.id, &mark).await {
            tracing::warn!(error = %e, "could not record delivery result; it will be retried");
        }
    }

    async fn send_row(&self, row: &OutboxRow) -> Result<(), ChannelError> {
        let channel = self
            .channels
            .get(&row.channel)
            .ok_or_else(|| ChannelError::Rejected(format!("no channel named `{}` is configured", row.channel)))?;
        let conversation: ConversationRef =
            row.conversation.parse().map_err(|e: String| ChannelError::Rejected(e))?;
        let caps = channel.caps();
        let chunks = chunk_text(&row.text, ChunkLimit::Chars(caps.max_len));
        let mut ids = row.platform_ids.clone();
        let last = chunks.len() - 1;
        for (i, chunk) in chunks.into_iter().enumerate() {
            let msg = Outbound {
                conversation: conversation.clone(),
                text: chunk,
                buttons: if i == last && caps.buttons { row.buttons.clone() } else { vec![] },
                reply_to: if i == 0 { row.reply_to.clone() } else { None },
                draft: false,
                key: Some(chunk_key(&row.key, i)),
            };
            match ids.get(i) {
                // The streamed draft (or a first chunk of an earlier attempt): make it final.
                Some(id) if i == 0 => {
                    let target = MessageRef { conversation: conversation.clone(), id: id.clone() };
                    match channel.edit(&target, &msg).await {
                        Ok(()) | Err(ChannelError::NotModified) => {}
                        Err(ChannelError::NotFound(_)) => {
                            ids[0] = channel.send(&msg).await?.id;
                            self.progress(row.id, &ids).await?;
                        }
                        Err(e) => return Err(e),
                    }
                }
                Some(_) => {} // delivered by an earlier attempt
                None => {
                    ids.push(channel.send(&msg).await?.id);
                    self.progress(row.id, &ids).await?;
                }
            }
        }
        Ok(())
    }

    async fn progress(&self, id: i64, ids: &[String]) -> Result<(), ChannelError> {
        self.store.outbox_progress(id, ids).await.map_err(|e| ChannelError::Transient(e.to_string()))
    }
}
