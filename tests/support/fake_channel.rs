//! A fake chat platform for tests: a real `Channel` that records what Butler sends and edits,
//! and builds the `InboundEvent`s a group-capable platform would emit (DMs, groups, threads,
//! mentions). Events go in through the app's real ingress.

use async_trait::async_trait;
use butler_channel::{
    Actor, Button, Caps, Channel, ChannelError, ConversationKind, ConversationRef, EventBody, EventId, Identity,
    InboundEvent, MessageRef, Outbound, TextFormat,
};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// One message as the fake platform shows it.
#[derive(Clone, Debug)]
pub struct Shown {
    pub id: String,
    pub conversation: String,
    pub text: String,
    pub buttons: Vec<Button>,
    /// False while it is a streaming draft.
    pub done: bool,
    /// Shown only to one person (the answer to their click).
    pub private: bool,
}

pub struct FakeChannel {
    name: String,
    shown: Mutex<Vec<Shown>>,
    next_id: AtomicU64,
    next_event: AtomicU64,
}

impl FakeChannel {
    pub fn new(name: &str) -> std::sync::Arc<Self> {
        std::sync::Arc::new(Self {
            name: name.to_string(),
            shown: Mutex::new(Vec::new()),
            next_id: AtomicU64::new(1),
            next_event: AtomicU64::new(1),
        })
    }

    /// A message from `user` (display name `name`) in conversation `conv` (an id on this
    /// platform; `conv/thread` for a thread). Groups need `addressed` (a mention) to be answered.
    pub fn message(
        &self,
        user: &str,
        name: &str,
        conv: &str,
        kind: ConversationKind,
        addressed: bool,
        text: &str,
    ) -> InboundEvent {
        let n = self.next_event.fetch_add(1, Ordering::Relaxed);
        let conversation: ConversationRef = format!("{}:{conv}", self.name).parse().expect("conversation");
        InboundEvent {
            id: EventId(format!("{}:update:{n}:{}", self.name, uuid::Uuid::new_v4().simple())),
            actor: Actor {
                identity: Identity::new(&self.name, user),
                display_name: Some(name.to_string()),
                is_bot: false,
            },
            conversation,
            kind,
            addressed: addressed || kind == ConversationKind::Direct,
            reply_to: None,
            message_id: Some(format!("m{n}")),
            body: EventBody::Message { text: text.to_string() },
            at_ms: 0,
            attachments: Vec::new(),
        }
    }

    /// A DM from `user`: the conversation id is the user id, as on most platforms.
    pub fn dm(&self, user: &str, text: &str) -> InboundEvent {
        self.message(user, user, user, ConversationKind::Direct, true, text)
    }

    /// Everything shown in `conv` (the id on this platform), oldest first.
    pub fn shown(&self, conv: &str) -> Vec<Shown> {
        let full = format!("{}:{conv}", self.name);
        self.shown.lock().unwrap().iter().filter(|m| m.conversation == full).cloned().collect()
    }

    /// Waits until `conv` shows `n` finished messages and returns their texts.
    pub async fn wait_texts(&self, conv: &str, n: usize) -> Vec<String> {
        for _ in 0..1200 {
            let done: Vec<String> = self.shown(conv).into_iter().filter(|m| m.done).map(|m| m.text).collect();
            if done.len() >= n {
                return done;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("{conv} never showed {n} messages; it shows {:?}", self.shown(conv));
    }

    /// Waits a little and asserts `conv` still shows exactly `n` messages.
    pub async fn assert_quiet(&self, conv: &str, n: usize) {
        tokio::time::sleep(Duration::from_millis(400)).await;
        let shown = self.shown(conv);
        assert_eq!(shown.len(), n, "{conv} should show {n} messages: {shown:?}");
    }
}

#[async_trait]
impl Channel for FakeChannel {
    fn name(&self) -> &str {
        &self.name
    }

    fn caps(&self) -> Caps {
        Caps {
            buttons: true,
            edit: true,
            max_len: 4000,
            typing: false,
            min_edit_interval: Duration::from_millis(50),
            format: TextFormat::Markdown,
            exclusive: false,
            reply_window: false,
        }
    }

    async fn send(&self, msg: &Outbound) -> Result<MessageRef, ChannelError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed).to_string();
        self.shown.lock().unwrap().push(Shown {
            id: id.clone(),
            conversation: msg.conversation.to_string(),
            text: msg.text.clone(),
            buttons: msg.buttons.clone(),
            done: !msg.draft,
            private: msg.private_to.is_some(),
        });
        Ok(MessageRef { conversation: msg.conversation.clone(), id })
    }

    async fn edit(&self, target: &MessageRef, msg: &Outbound) -> Result<(), ChannelError> {
        let mut shown = self.shown.lock().unwrap();
        let m =
            shown.iter_mut().find(|m| m.id == target.id).ok_or_else(|| ChannelError::NotFound(target.id.clone()))?;
        m.text.clone_from(&msg.text);
        m.buttons.clone_from(&msg.buttons);
        m.done = !msg.draft;
        Ok(())
    }
}
