//! How a failed try of an inbound event ends: retried later with a growing delay, or, after
//! `[limits] max_event_attempts` tries, set aside as `failed` (a dead letter) with one notice
//! to the sender; and when an event is poison (its process died that many times in a row
//! while it ran), so that it is set aside instead of run once more.
//!
//! This must never retry an event without bound, never set an event aside for deaths it did
//! not run through, and never tell a sender twice: the notice has the stable outbox key
//! `<event id>:failed`, so running the dead-lettering again is a no-op.

use crate::ids::{HOOK_CHANNEL, SYSTEM_CHANNEL};
use crate::metrics::METRICS;
use crate::outbox::Deliverer;
use crate::store::{InboxStatus, InboxStore, NewOutbox, OutboxStore, RecoveryStore, StoreError};
use butler_channel::InboundEvent;

/// The delay before the next try after try number `attempts` failed: 1 s, 2 s, 4 s, ...
/// doubling up to 5 minutes.
pub fn backoff_ms(attempts: i32) -> i64 {
    const FIRST_MS: i64 = 1_000;
    const MAX_MS: i64 = 300_000;
    let doublings = attempts.saturating_sub(1).clamp(0, 20) as u32;
    FIRST_MS.saturating_mul(1_i64 << doublings).min(MAX_MS)
}

/// Whether an event whose process died `crashes` times in a row while it ran is poison: it
/// must be set aside, not run once more. Deaths it only waited through never count (see
/// [`crate::store::RecoveryStore::inbox_start`]).
pub fn poisoned(crashes: i32, max_attempts: u32) -> bool {
    i64::from(crashes) >= i64::from(max_attempts)
}

/// The error a poison event is set aside with.
pub fn poison_error(crashes: i32) -> String {
    format!("interrupted {crashes} times in a row (the process died while it ran)")
}

/// Runs `record` (the end of a failed try) until it is stored or `stop` fires, waiting a
/// second between tries: an event whose failure could not be recorded (the database is away)
/// would otherwise stay `processing` on a live replica that nobody takes it back from.
pub async fn until_recorded<F, Fut>(stop: &tokio_util::sync::CancellationToken, event: &str, mut record: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), StoreError>>,
{
    let mut warned = false;
    loop {
        match record().await {
            Ok(()) => return,
            Err(e) => {
                if !warned {
                    tracing::warn!(event, error = %e, "could not record the end of a try; trying again every second");
                    warned = true;
                }
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
            _ = stop.cancelled() => {
                tracing::warn!(event, "stopping before the end of a try was recorded; it is recovered later");
                return;
            }
        }
    }
}

/// What ending a failed try writes: the inbox row, the sender's notice, the drafts it leaves.
pub type FailStores<'a> = (&'a dyn InboxStore, &'a dyn OutboxStore, &'a dyn RecoveryStore);

/// The delay before the next try of an event whose model was away after try number
/// `attempts`: 15 s, 30 s, 1 min, 2 min, ... up to 5 minutes (an outage lasts longer than a
/// database blip, and the model client already retried within the try).
pub fn model_backoff_ms(attempts: i32) -> i64 {
    (backoff_ms(attempts) * 15).min(300_000)
}

/// The outbox key of the one "the model is away" notice of an event.
fn away_key(event_id: &str) -> String {
    format!("{event_id}:model-away")
}

/// Why a try ended without an answer.
#[derive(Clone, Copy, Debug)]
pub enum TryEnd<'a> {
    /// Something failed (the store, say); the error.
    Failed(&'a str),
    /// The model was away (a timeout, a refused connection, a 5xx, a broken stream); how.
    ModelAway(&'a str),
}

/// Ends a try of `event` (try number `attempts`) that gave no answer: retried after
/// [`backoff_ms`] (after [`model_backoff_ms`] when the model was away, its sender told once
/// that an answer will come), or, at `max_attempts`, marked `failed` and the sender told once.
/// Safe to run again: the notices have stable keys.
pub async fn retry_or_fail(
    store: FailStores<'_>,
    deliverer: &Deliverer,
    event: &InboundEvent,
    attempts: i32,
    max_attempts: u32,
    end: TryEnd<'_>,
) -> Result<(), StoreError> {
    let (TryEnd::Failed(error) | TryEnd::ModelAway(error)) = end;
    if i64::from(attempts) >= i64::from(max_attempts) {
        return dead_letter(store, deliverer, event, attempts, error).await;
    }
    let delay = match end {
        TryEnd::Failed(_) => backoff_ms(attempts),
        TryEnd::ModelAway(_) => {
            tell_model_away(store, deliverer, event, error).await?;
            model_backoff_ms(attempts)
        }
    };
    tracing::warn!(event = %event.id, attempts, delay_ms = delay, error, "the try gave no answer; it is retried");
    store.0.inbox_retry(&event.id.0, delay, Some(error)).await
}

/// Tells the sender of `event` (once: the notice has a stable key) that the model is away and
/// the answer will come; triggers and system events have no one to tell.
async fn tell_model_away(
    store: FailStores<'_>,
    deliverer: &Deliverer,
    event: &InboundEvent,
    error: &str,
) -> Result<(), StoreError> {
    let channel = event.channel();
    if channel == HOOK_CHANNEL || channel == SYSTEM_CHANNEL {
        return Ok(());
    }
    let text = format!(
        "⏳ The model is not answering right now ({error}). I'll keep trying and answer here; you don't need to \
         send this again."
    );
    let notice =
        NewOutbox::message(away_key(&event.id.0), event.conversation.to_string(), text).quoting(event.quote_target());
    let row = store.1.outbox_enqueue(&notice).await?;
    deliverer.hand_over(row);
    Ok(())
}

/// Marks `event` `failed` and tells its sender once (not for triggers and system events, which
/// have no one to tell); a reply draft an earlier try streamed is settled (it would show a
/// Stop button for a turn that is gone). Safe to run again.
pub async fn dead_letter(
    store: FailStores<'_>,
    deliverer: &Deliverer,
    event: &InboundEvent,
    attempts: i32,
    error: &str,
) -> Result<(), StoreError> {
    tracing::error!(
        event = %event.id,
        channel = %event.conversation.channel,
        attempts,
        error,
        "event failed for good; see `butler inbox list --failed`"
    );
    let channel = event.channel();
    if channel != HOOK_CHANNEL && channel != SYSTEM_CHANNEL {
        let notice = NewOutbox::failure(
            event,
            format!(
                "⚠️ Sorry, I could not process this message (tried {attempts} times). It was set aside for \
                 Butler's owner to look at."
            ),
        );
        let row = store.1.outbox_enqueue(&notice).await?;
        deliverer.hand_over(row);
    }
    let error = format!("gave up after {attempts} tries: {error}");
    store.0.inbox_finish(&event.id.0, InboxStatus::Failed, Some(&error)).await?;
    crate::outbox::settle_orphan_drafts(store.2).await?;
    METRICS.events_failed.inc();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        let table = [
            (0, 1_000),
            (1, 1_000),
            (2, 2_000),
            (3, 4_000),
            (4, 8_000),
            (8, 128_000),
            (9, 256_000),
            (10, 300_000),
            (1_000, 300_000),
        ];
        for (attempts, want) in table {
            assert_eq!(backoff_ms(attempts), want, "after try {attempts}");
        }
    }

    #[test]
    fn poisoned_at_the_cap_of_deaths_in_a_row() {
        // (deaths in a row while it ran, max_event_attempts, set aside)
        let table =
            [(0, 5, false), (1, 5, false), (4, 5, false), (5, 5, true), (6, 5, true), (1, 1, true), (0, 1, false)];
        for (crashes, max, want) in table {
            assert_eq!(poisoned(crashes, max), want, "{crashes} deaths in a row, cap {max}");
        }
    }
}
