//! The store traits the web chat calls, and nothing more: its message log and conversation
//! list, who owns a conversation, which approval a live button answers, what an event produced,
//! where a reply's draft is shown, and a user's usage. The composition root fills it from the whole store.
//!
//! Plain handles: this file must never hold logic or name the whole store.

use crate::store::{ApprovalStore, OutboxStore, OutcomeStore, TurnStore, UserStore, WebConversationStore, WebStore};
use std::sync::Arc;

#[derive(Clone)]
pub(crate) struct WebStores {
    /// Conversations' owners, and the user behind a web identity.
    pub users: Arc<dyn UserStore>,
    /// The page's message log.
    pub messages: Arc<dyn WebStore>,
    /// The conversation list: titles, deletes, unprompted marks, live buttons.
    pub conversations: Arc<dyn WebConversationStore>,
    /// Whether a clicked approval was already answered.
    pub approvals: Arc<dyn ApprovalStore>,
    /// What an event produced, and when events settle.
    pub outcomes: Arc<dyn OutcomeStore>,
    /// The reply's row alone: where its streamed draft is shown (the OpenAI API's deltas).
    pub replies: Arc<dyn OutboxStore>,
    /// A user's model usage (the OpenAI API's `usage`).
    pub usage: Arc<dyn TurnStore>,
}
