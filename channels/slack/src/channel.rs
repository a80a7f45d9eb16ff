//! The sending side: [`Channel`] for Slack.
//!
//! - `send` posts in the conversation's thread (`slack:C…/ts`; top level without a thread),
//!   resolving `#name` to a channel id first (conversations.list, cached), and remembers the
//!   thread as Butler's. A private answer to a click (`private_to`) is chat.postEphemeral to
//!   that person, or nothing at all for a bare acknowledgement (Slack's 200 to the click was
//!   the acknowledgement).
//! - `edit` is chat.update, never sooner than [`EDIT_SPACING`] after the message was last
//!   posted or updated (the streamer already paces drafts; this also holds for the final edit).
//! - The working reaction (if configured) goes on a message when its event is stored and comes
//!   off with the next final (non-draft) message in its conversation: the one replying to it,
//!   else the oldest still marked there (a session answers in order; DM replies carry no
//!   `reply_to`).
//! - A message carrying a file is the file shared in the thread with the text as its comment
//!   (`upload`); its id is the file's (`F…`), and editing it is refused.
//! - `run` owns the Socket Mode loop (with an app token), and waits for background calls on stop.
//!
//! Errors are [`ChannelError`]s from `api`; nothing here retries or drops a message itself.

use crate::blocks::{render, MESSAGE_MAX};
use crate::upload::is_file_id;
use crate::{socket, Shared, SlackChannel, CHANNEL};
use butler_channel::{
    Caps, Channel, ChannelError, ConversationRef, Ingress, MessageRef, Outbound, PrivateTo, TextFormat,
};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Shortest time between two writes (post or update) of one message.
pub const EDIT_SPACING: Duration = Duration::from_secs(1);

impl Shared {
    /// The channel id of a conversation id (`C…`, `D…`, or `#name`).
    pub(crate) async fn resolve(&self, id: &str) -> Result<String, ChannelError> {
        let Some(name) = id.strip_prefix('#') else { return Ok(id.to_string()) };
        if let Some(found) = self.channel_ids.lock().unwrap_or_else(|p| p.into_inner()).get(name) {
            return Ok(found.clone());
        }
        let found = self.api.find_channel(name).await?.ok_or_else(|| {
            ChannelError::NotFound(format!("no channel named #{name} that Butler can see; invite Butler or use its id"))
        })?;
        self.channel_ids.lock().unwrap_or_else(|p| p.into_inner()).insert(name.to_string(), found.clone());
        Ok(found)
    }

    /// Waits until `ts` may be written again, per [`EDIT_SPACING`].
    async fn pace(&self, ts: &str) {
        let last = self.touched.lock().unwrap_or_else(|p| p.into_inner()).get(ts).copied();
        if let Some(last) = last {
            tokio::time::sleep_until(last + EDIT_SPACING).await;
        }
    }

    fn touch(&self, ts: &str) {
        let mut touched = self.touched.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        if touched.len() > 1_000 {
            touched.retain(|_, t| now.duration_since(*t) < EDIT_SPACING);
        }
        touched.insert(ts.to_string(), now);
    }

    /// Puts the working reaction on message `ts` of `conversation`, in the background.
    pub(crate) fn mark_working(&self, conversation: &ConversationRef, ts: String) {
        let Some(name) = self.settings.working_reaction.clone() else { return };
        let channel = conversation.id.clone();
        {
            let mut working = self.working.lock().unwrap_or_else(|p| p.into_inner());
            if working.len() >= 10_000 {
                working.clear();
            }
            let queue = working.entry(conversation.to_string()).or_default();
            queue.push_back((channel.clone(), ts.clone()));
            if queue.len() > 50 {
                queue.pop_front();
            }
        }
        let me = self.self_ref();
        self.tasks.spawn(async move {
            if let Some(me) = me {
                if let Err(e) = me.api.reaction(true, &channel, &ts, &name).await {
                    tracing::debug!(error = %e, "could not add the working reaction");
                }
            }
        });
    }

    /// A final message in a conversation answers the message it replies to, else the oldest
    /// one still marked (a session answers in order): its working reaction comes off.
    pub(crate) async fn done_working(&self, msg: &Outbound) {
        let Some(name) = self.settings.working_reaction.as_deref().filter(|_| !msg.draft) else { return };
        let done = {
            let mut working = self.working.lock().unwrap_or_else(|p| p.into_inner());
            let key = msg.conversation.to_string();
            let Some(queue) = working.get_mut(&key) else { return };
            let at = msg.reply_to.as_ref().and_then(|r| queue.iter().position(|(_, ts)| ts == r)).unwrap_or(0);
            let done = queue.remove(at);
            if queue.is_empty() {
                working.remove(&key);
            }
            done
        };
        if let Some((channel, ts)) = done {
            if let Err(e) = self.api.reaction(false, &channel, &ts, name).await {
                tracing::debug!(error = %e, "could not remove the working reaction");
            }
        }
    }

    /// A weak handle for background tasks (they must not keep the channel alive).
    fn self_ref(&self) -> Option<Arc<Shared>> {
        self.this.upgrade()
    }

    async fn send_private(&self, msg: &Outbound, to: &PrivateTo) -> Result<MessageRef, ChannelError> {
        let id = MessageRef { conversation: msg.conversation.clone(), id: "ephemeral".into() };
        if msg.text.trim().is_empty() {
            return Ok(id); // the click was acknowledged by the 200 Slack already got
        }
        let channel = self.resolve(&msg.conversation.id).await?;
        let rendered = render(&msg.text, &[]);
        self.api.post_ephemeral(&channel, &to.user_id, msg.conversation.thread.as_deref(), rendered).await?;
        Ok(id)
    }
}

fn thread_of(c: &ConversationRef) -> Option<&str> {
    c.thread.as_deref()
}

#[async_trait::async_trait]
impl Channel for SlackChannel {
    fn name(&self) -> &str {
        CHANNEL
    }

    fn caps(&self) -> Caps {
        Caps {
            buttons: true,
            edit: true,
            max_len: MESSAGE_MAX,
            typing: false,
            min_edit_interval: EDIT_SPACING,
            format: TextFormat::Native,
            exclusive: self.shared.settings.app_token.is_some(),
            reply_window: false,
        }
    }

    async fn send(&self, msg: &Outbound) -> Result<MessageRef, ChannelError> {
        let s = &self.shared;
        if let Some(to) = &msg.private_to {
            if msg.file.is_some() {
                return Err(ChannelError::Rejected("Slack cannot send a file privately to one person".into()));
            }
            return s.send_private(msg, to).await;
        }
        if let Some(file) = &msg.file {
            return s.send_file(msg, file).await;
        }
        let channel = s.resolve(&msg.conversation.id).await?;
        let rendered = render(&msg.text, &msg.buttons);
        if rendered.blocks.is_empty() {
            return Err(ChannelError::Rejected("an empty message".into()));
        }
        let thread = thread_of(&msg.conversation);
        let (channel_id, ts) = s.api.post_message(&channel, thread, rendered).await?;
        s.touch(&ts);
        // Butler has spoken in this thread (or started one): replies there are for it.
        s.threads.add(&channel_id, thread.unwrap_or(&ts));
        s.done_working(msg).await;
        Ok(MessageRef { conversation: msg.conversation.clone(), id: ts })
    }

    async fn edit(&self, target: &MessageRef, msg: &Outbound) -> Result<(), ChannelError> {
        let s = &self.shared;
        if msg.private_to.is_some() || target.id == "ephemeral" {
            return Ok(()); // ephemeral messages cannot be edited; nothing was promised
        }
        if is_file_id(&target.id) {
            return Err(ChannelError::Rejected("a file shared on Slack cannot be edited".into()));
        }
        let channel = s.resolve(&target.conversation.id).await?;
        let rendered = render(&msg.text, &msg.buttons);
        if rendered.blocks.is_empty() {
            return Err(ChannelError::Rejected("an empty message".into()));
        }
        s.pace(&target.id).await;
        s.api.update(&channel, &target.id, rendered).await?;
        s.touch(&target.id);
        s.done_working(msg).await;
        Ok(())
    }

    async fn run(&self, ingress: Arc<dyn Ingress>, cancel: CancellationToken) -> Result<(), ChannelError> {
        let s = self.shared.clone();
        if s.settings.app_token.is_some() {
            socket::run(s.clone(), ingress, cancel).await;
        } else {
            cancel.cancelled().await;
        }
        s.tasks.close();
        let _ = tokio::time::timeout(Duration::from_secs(2), s.tasks.wait()).await;
        Ok(())
    }
}
