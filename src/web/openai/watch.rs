//! Waiting for Butler's answer to one message posted through the OpenAI API, as text: the
//! reply's streamed drafts (from the web hub, as the page sees them) become appended deltas, and
//! once the event has settled the store's one outcome query (the committed reply, any failure
//! notice, the session's waiting approvals, each with its `/approve ID` line, as on a channel
//! without buttons) makes the final text. The answer is the committed one: it does not wait for
//! the outbox to show it in the web conversation too.
//!
//! The watch is told, not polling: the hub announces when the event settles (from this process's
//! store, or relayed from the replica that ran it); only then is the store read. A slow safety
//! check covers an announcement lost to a full queue.
//!
//! The watch only reads: it must never change the event, its turn or its delivery, so a client
//! that goes away (the watch is dropped) leaves the turn to finish and be stored as usual. Every
//! wait is bounded (the reply timeout, shutdown).

use crate::ids::reply_key;
use crate::permissions::notice::{approval_notice, Room};
use crate::store::{EventOutcome, InboxStatus, UsageTotals};
use crate::web::hub::{HubEvent, Subscription, SETTLED};
use crate::web::stores::WebStores;
use butler_channel::Identity;
use futures::StreamExt;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::{Instant, Interval, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

/// How often the store is read anyway, should an announcement be lost (a full relay queue).
const SAFETY_CHECK: Duration = Duration::from_secs(5);
/// The longest a request waits for Butler's answer.
pub(super) const REPLY_TIMEOUT: Duration = Duration::from_secs(300);
/// Messages of the conversation remembered while the reply's draft is not known yet.
const SEEN_MAX: usize = 32;

const TIMEOUT_NOTE: &str =
    "⏳ Butler is still working on this; the answer will appear in this conversation (in the web chat).";
const SHUTDOWN_NOTE: &str = "⏹ Butler is shutting down; the answer will follow in this conversation after it restarts.";
const NO_ANSWER_NOTE: &str = "(Butler took this message without an answer.)";
const FAILED_NOTE: &str = "⚠️ Butler could not answer this message.";

/// What the watch has next.
pub(super) enum Step {
    /// More text of the streamed reply (append it).
    Delta(String),
    /// The answer is complete.
    Done(Final),
}

/// The complete answer.
pub(super) struct Final {
    /// The whole answer as one text.
    pub text: String,
    /// What a stream has not sent yet of `text` (all of it when nothing was streamed).
    pub rest: String,
    /// This user's model usage since the request arrived, when Butler recorded any.
    pub usage: Option<UsageTotals>,
}

/// What the watch follows: one event of one web user.
pub(super) struct Target {
    pub event_id: String,
    /// The web user (without `web:`).
    pub user: String,
    /// When the request arrived (usage is counted from here).
    pub started_ms: i64,
}

pub(super) struct Watch {
    store: Arc<WebStores>,
    sub: Subscription,
    open: bool,
    target: Target,
    deadline: Instant,
    shutdown: CancellationToken,
    safety: Interval,
    /// The web message id of the reply's draft, once the outbox has recorded it.
    draft: Option<i64>,
    /// Latest text of assistant messages seen while the draft was not known.
    seen: HashMap<i64, String>,
    /// The text handed out as deltas so far.
    sent: String,
}

impl Watch {
    /// Follows `target` on `sub` (subscribed before the event was handed to the ingress, so no
    /// draft or announcement is missed) until the answer is complete or `timeout` has passed.
    pub(super) fn new(
        store: Arc<WebStores>,
        sub: Subscription,
        target: Target,
        timeout: Duration,
        shutdown: CancellationToken,
    ) -> Self {
        let mut safety = tokio::time::interval_at(Instant::now() + SAFETY_CHECK, SAFETY_CHECK);
        safety.set_missed_tick_behavior(MissedTickBehavior::Delay);
        Self {
            store,
            sub,
            open: true,
            target,
            deadline: Instant::now() + timeout,
            shutdown,
            safety,
            draft: None,
            seen: HashMap::new(),
            sent: String::new(),
        }
    }

    /// Waits for the next delta or the end.
    pub(super) async fn next(&mut self) -> Step {
        loop {
            let look = tokio::select! {
                biased;
                _ = self.shutdown.cancelled() => return Step::Done(self.give_up(SHUTDOWN_NOTE).await),
                _ = tokio::time::sleep_until(self.deadline) => return Step::Done(self.give_up(TIMEOUT_NOTE).await),
                item = self.sub.next(), if self.open => match item {
                    Some(Ok(ev)) if ev.kind == SETTLED => {
                        ev.data.get("event").and_then(|e| e.as_str()) == Some(self.target.event_id.as_str())
                    }
                    Some(Ok(ev)) => match self.take(ev).await {
                        Some(delta) => return Step::Delta(delta),
                        None => false,
                    },
                    // Drafts carry the whole text: the next one catches up; an announcement may
                    // have been among those missed.
                    Some(Err(_lagged)) => true,
                    None => {
                        self.open = false;
                        false
                    }
                },
                _ = self.safety.tick() => true,
            };
            if look {
                if let Some(done) = self.check().await {
                    return Step::Done(done);
                }
            }
        }
    }

    /// Takes one message event of the conversation; returns new text of the reply's draft, if any.
    async fn take(&mut self, ev: HubEvent) -> Option<String> {
        let data = &ev.data;
        let id = data.get("id")?.as_i64()?;
        if ev.kind == "created" && data.get("role").and_then(|r| r.as_str()) != Some("assistant") {
            return None;
        }
        let text = data.get("text")?.as_str()?.to_string();
        if self.draft.is_none() {
            if self.seen.len() >= SEEN_MAX {
                self.seen.clear();
            }
            self.seen.insert(id, text);
            self.draft = self.draft_id().await;
            let draft = self.draft?;
            let latest = self.seen.remove(&draft)?;
            self.seen.clear();
            return self.advance(&latest);
        }
        (self.draft == Some(id)).then(|| self.advance(&text)).flatten()
    }

    async fn outcome(&self) -> Option<EventOutcome> {
        let id = &self.target.event_id;
        match self.store.outcomes.event_outcome(id).await {
            Ok(outcome) => outcome,
            Err(e) => {
                tracing::warn!(error = %e, event = %id, "openai api: cannot read the event; still waiting");
                None
            }
        }
    }

    /// The web message id of the reply's streamed draft, once its outbox row records it (only
    /// the reply's row: this runs on message events until the draft is known).
    async fn draft_id(&self) -> Option<i64> {
        let reply = self.store.replies.outbox_get(&reply_key(&self.target.event_id)).await.ok()??;
        reply.platform_ids.first()?.parse().ok()
    }

    /// New text when `draft` (less its "running tools" line) extends what was sent.
    fn advance(&mut self, draft: &str) -> Option<String> {
        let text = without_progress(draft);
        let more = text.strip_prefix(self.sent.as_str())?;
        if more.is_empty() {
            return None;
        }
        let more = more.to_string();
        self.sent.push_str(&more);
        Some(more)
    }

    /// The answer, once the event is finished.
    async fn check(&mut self) -> Option<Final> {
        let outcome = self.outcome().await.filter(|o| o.finished())?;
        let text = answer(outcome);
        Some(self.finish(text).await)
    }

    /// No answer in time (or shutdown): what was streamed, and a note saying so.
    async fn give_up(&mut self, note: &str) -> Final {
        if let Some(done) = self.check().await {
            return done;
        }
        let text = if self.sent.is_empty() { note.to_string() } else { format!("{}\n\n{note}", self.sent) };
        self.finish(text).await
    }

    async fn finish(&mut self, text: String) -> Final {
        let rest = match text.strip_prefix(self.sent.as_str()) {
            Some(rest) => rest.to_string(),
            // The final text does not extend the streamed one (rare: a revised draft): repeat it.
            None => format!("\n\n{text}"),
        };
        Final { text, rest, usage: self.usage().await }
    }

    async fn usage(&self) -> Option<UsageTotals> {
        let identity = Identity::new(crate::ids::WEB_CHANNEL, &self.target.user);
        let user = self.store.users.identity_user(&identity).await.ok()??;
        let totals = self.store.usage.usage_since(&user.id, self.target.started_ms).await.ok()?;
        (totals.input_tokens > 0 || totals.output_tokens > 0).then_some(totals)
    }
}

/// The final text of a finished event: the reply, a failure notice, the approvals waiting in its
/// session (as a channel without buttons shows them, with the `/approve ID` and `/deny ID`
/// commands that answer them).
fn answer(outcome: EventOutcome) -> String {
    let mut parts: Vec<String> = outcome.reply.map(|r| r.text).filter(|t| !t.trim().is_empty()).into_iter().collect();
    if outcome.status == InboxStatus::Failed {
        parts.push(outcome.failure.map(|n| n.text).unwrap_or_else(|| FAILED_NOTE.to_string()));
    }
    let asker = outcome.event.actor.name().to_string();
    parts.extend(outcome.waiting.iter().map(|a| approval_notice(a, &asker, Room::text()).message.text));
    if parts.is_empty() {
        parts.push(NO_ANSWER_NOTE.to_string());
    }
    parts.join("\n\n")
}

/// A draft without the line the streamer adds while tools run (`_⚙ running name…_`).
fn without_progress(draft: &str) -> &str {
    match draft.rfind("_⚙ running ") {
        Some(at) if draft.ends_with("…_") => draft[..at].trim_end_matches('\n'),
        _ => draft,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_running_tools_line_is_not_text() {
        let cases = [
            ("Hello", "Hello"),
            ("Let me look.\n\n_⚙ running file_read…_", "Let me look."),
            ("_⚙ running now, web_fetch…_", ""),
            ("_⚙ running is a word_ here", "_⚙ running is a word_ here"),
        ];
        for (draft, want) in cases {
            assert_eq!(without_progress(draft), want, "{draft:?}");
        }
    }
}
