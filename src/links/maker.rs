//! Making answer links: [`Links`] holds the key (made once, kept in the database through
//! `KeyStore`) and `[server] public_url`, and signs a link per request choice.
//!
//! It must never make a link for anything but a request's answer, nor show the key.

use crate::config::ServerConfig;
use crate::store::{ApprovalStore, KeyStore, StoreError};
use butler_channel::{AnswerLinks, Button, ConversationRef};
use std::sync::Arc;

/// How long a link works.
pub const TTL_MS: i64 = 3 * 24 * 3600 * 1000;
/// The key's name in the database.
const KEY_NAME: &str = "answer_links";

/// Makes and opens answer links.
pub struct Links {
    pub(super) key: Vec<u8>,
    /// `[server] public_url` without a trailing slash.
    base: String,
    /// Read to show what a link answers, and whether it still waits.
    pub(super) approvals: Arc<dyn ApprovalStore>,
}

impl Links {
    /// The links of `server`, `None` when `public_url` is not set; the key is made on first use.
    pub async fn load(
        server: &ServerConfig,
        keys: &dyn KeyStore,
        approvals: Arc<dyn ApprovalStore>,
    ) -> Result<Option<Arc<Self>>, StoreError> {
        let base = server.public_url.trim().trim_end_matches('/');
        if base.is_empty() {
            return Ok(None);
        }
        let fresh = hex::encode(rand::random::<[u8; 32]>());
        let key = keys.key_get_or_insert(KEY_NAME, &fresh).await?;
        Ok(Some(Arc::new(Self { key: key.into_bytes(), base: base.to_string(), approvals })))
    }

    /// [`AnswerLinks::link`] working until `expires_ms` (instead of [`TTL_MS`] from now).
    pub fn link_until(
        &self,
        conversation: &ConversationRef,
        person: &str,
        button: &Button,
        expires_ms: i64,
    ) -> Option<String> {
        // Only the answers to a request (`ap:<id>:<choice>`).
        button.action.strip_prefix("ap:")?.split_once(':')?;
        let claim = super::token::Claim {
            channel: conversation.channel.clone(),
            person: person.to_string(),
            conversation: conversation.id.clone(),
            thread: conversation.thread.clone(),
            action: button.action.clone(),
            label: button.label.clone(),
            expires_ms,
        };
        Some(format!("{}/approve/{}", self.base, super::token::sign(&self.key, &claim)))
    }
}

impl AnswerLinks for Links {
    fn link(&self, conversation: &ConversationRef, person: &str, button: &Button) -> Option<String> {
        self.link_until(conversation, person, button, butler_channel::now_ms() + TTL_MS)
    }
}
