//! Streaming a turn's reply by editing one message in place, at most once per the channel's
//! `min_edit_interval`, plus a typing indicator until the first draft is shown.
//!
//! The draft message is recorded in the outbox row of the reply (status `draft`) before
//! anything else happens to it, so the final delivery edits this same message instead of
//! sending a second one, also after a crash and re-run. A streamer must be closed (awaited)
//! before the turn commits, so no late draft edit can overwrite the final text. A draft whose
//! event ended without finishing it (set aside after its process died) is settled by
//! [`settle_orphan_drafts`], never left showing a Stop button for a turn that is gone.

use super::chunk_key;
use crate::agent::TurnObserver;
use crate::store::{NewOutbox, OutboxStatus, OutboxStore, RecoveryStore, StoreError};
use butler_channel::{Caps, Channel, ChannelError, MessageRef, Outbound};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// What a streamed draft says once nobody will finish it: its turn was cut off (the process
/// died) and its event ended without a reply of its own (set aside, say).
pub const CUT_OFF: &str = "⚠️ This reply was cut off and will not be finished.";

/// Settles the drafts nobody will finish (see [`RecoveryStore::drafts_settle`]): at start, when a
/// dead replica's events are taken back, and when an event is set aside. The shown ones become
/// [`CUT_OFF`] through the normal delivery, which edits them in place.
pub async fn settle_orphan_drafts(store: &dyn RecoveryStore) -> Result<u64, StoreError> {
    let settled = store.drafts_settle(CUT_OFF).await?;
    if settled > 0 {
        tracing::info!(drafts = settled, "settled reply drafts whose turn will not finish them");
    }
    Ok(settled)
}

/// How often the typing indicator is renewed (platforms expire it after ~5 s).
const TYPING_EVERY: Duration = Duration::from_secs(4);

#[derive(Clone, Default)]
struct Draft {
    text: String,
    tools: Vec<String>,
}

/// Feeds a turn's progress to the streaming task.
pub(crate) struct Streamer {
    tx: watch::Sender<Draft>,
    close: CancellationToken,
    task: Option<JoinHandle<()>>,
}

impl TurnObserver for Streamer {
    fn text(&mut self, full: &str) {
        self.tx.send_modify(|d| full.clone_into(&mut d.text));
    }

    fn tools(&mut self, names: &[String]) {
        self.tx.send_modify(|d| d.tools = names.to_vec());
    }
}

impl Streamer {
    /// Starts streaming for the reply `row` (key, conversation, reply_to) on `channel`, with
    /// `base.buttons` (e.g. a Stop button) shown while the draft is live.
    pub(crate) fn start(
        channel: Arc<dyn Channel>,
        store: Arc<dyn OutboxStore>,
        row: NewOutbox,
        base: Outbound,
    ) -> Self {
        let (tx, rx) = watch::channel(Draft::default());
        let close = CancellationToken::new();
        let task = tokio::spawn(run(channel, store, row, base, rx, close.clone()));
        Self { tx, close, task: Some(task) }
    }

    /// Stops streaming and waits until no draft edit is in flight.
    pub(crate) async fn close(mut self) {
        self.close.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for Streamer {
    fn drop(&mut self) {
        self.close.cancel();
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// The text shown while streaming: the reply so far, a line for running tools, clipped to
/// what the platform accepts.
fn render(d: &Draft, caps: &Caps) -> String {
    let mut text = d.text.clone();
    if !d.tools.is_empty() {
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(&format!("_⚙ running {}…_", d.tools.join(", ")));
    }
    let limit = caps.max_len.saturating_sub(2);
    if text.chars().count() > limit {
        text = text.chars().take(limit).collect::<String>() + " …";
    }
    text
}

async fn run(
    channel: Arc<dyn Channel>,
    store: Arc<dyn OutboxStore>,
    row: NewOutbox,
    base: Outbound,
    mut rx: watch::Receiver<Draft>,
    close: CancellationToken,
) {
    let caps = channel.caps();
    let mut target: Option<MessageRef> = None;
    let mut shown = String::new();
    let mut next_typing = tokio::time::Instant::now();
    loop {
        if caps.typing && target.is_none() && tokio::time::Instant::now() >= next_typing {
            let _ = channel.typing(&base.conversation).await;
            next_typing = tokio::time::Instant::now() + TYPING_EVERY;
        }
        tokio::select! {
            changed = rx.changed() => if changed.is_err() { return },
            _ = close.cancelled() => return,
            _ = tokio::time::sleep_until(next_typing), if caps.typing && target.is_none() => continue,
        }
        if !caps.edit {
            continue;
        }
        // Coalesce changes for one interval, so edits stay under the platform's rate.
        tokio::select! {
            _ = tokio::time::sleep(caps.min_edit_interval) => {}
            _ = close.cancelled() => return,
        }
        let text = render(&rx.borrow_and_update(), &caps);
        if text.trim().is_empty() || text == shown {
            continue;
        }
        let msg = Outbound { text: text.clone(), draft: true, key: Some(chunk_key(&row.key, 0)), ..base.clone() };
        let result = match &target {
            Some(t) => channel.edit(t, &msg).await,
            None => match open_draft(&*channel, &*store, &row, &msg).await {
                Ok(Some(t)) => {
                    target = Some(t);
                    Ok(())
                }
                Ok(None) => return, // the reply is already final: leave it alone
                Err(e) => Err(e),
            },
        };
        match result {
            Ok(()) | Err(ChannelError::NotModified) => shown = text,
            Err(ChannelError::RateLimited { retry_after }) => {
                tracing::debug!(?retry_after, "draft edit rate limited");
                tokio::select! {
                    _ = tokio::time::sleep(retry_after) => {}
                    _ = close.cancelled() => return,
                }
            }
            Err(e) => tracing::debug!(error = %e, "draft update failed; the final reply will still be delivered"),
        }
    }
}

/// Finds or creates the draft message for the reply, recording its platform id in the outbox.
async fn open_draft(
    channel: &dyn Channel,
    store: &dyn OutboxStore,
    row: &NewOutbox,
    msg: &Outbound,
) -> Result<Option<MessageRef>, ChannelError> {
    let stored = store.outbox_draft(row).await.map_err(|e| ChannelError::Transient(e.to_string()))?;
    if stored.status != OutboxStatus::Draft {
        return Ok(None);
    }
    if let Some(id) = stored.platform_ids.first() {
        let target = MessageRef { conversation: msg.conversation.clone(), id: id.clone() };
        channel.edit(&target, msg).await.or_else(|e| match e {
            ChannelError::NotModified => Ok(()),
            e => Err(e),
        })?;
        return Ok(Some(target));
    }
    let sent = channel.send(msg).await?;
    store
        .outbox_progress(stored.id, std::slice::from_ref(&sent.id))
        .await
        .map_err(|e| ChannelError::Transient(e.to_string()))?;
    Ok(Some(sent))
}
