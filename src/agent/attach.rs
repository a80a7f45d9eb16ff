//! The files a person attached, brought into their turn: the media component fetches and reads
//! them; their text joins the person's message (and is stored with it), their images go with
//! that message to the model on every call of this turn (never stored: later turns see the
//! text only), and the notes for the person ("I heard: ...") lead the reply.
//!
//! It must never fail a turn: whatever cannot be fetched or read becomes a note.

use super::state::Turn;
use crate::llm::{ChatMessage, ChatRequest, Image};
use crate::media::{Media, PrepareRequest};

/// Prepares the event's attachments (nothing to do without any) into `turn`.
pub(super) async fn attach(media: &Media, vision: bool, turn: &mut Turn<'_>) {
    let event = turn.event;
    if event.attachments.is_empty() {
        return;
    }
    let prepared = media
        .prepare(PrepareRequest {
            channel: event.channel(),
            attachments: &event.attachments,
            workspace: &turn.tool_ctx.workspace,
            event_id: &event.id.0,
            vision,
        })
        .await;
    tracing::info!(
        attachments = event.attachments.len(),
        images = prepared.images.len(),
        notes = prepared.notes.len(),
        "attachments prepared"
    );
    if let Some(user) = turn.progress.unsaved_user.as_mut() {
        let joined = format!("{}\n{}", user.content.trim_end(), prepared.text.trim_start());
        user.content = joined.trim().to_string();
    }
    turn.progress.images = prepared.images;
    turn.progress.notes = prepared.notes;
}

/// Puts `shown` on the last user message of `req` (the turn's own message).
pub(super) fn with_images(req: &mut ChatRequest, shown: &[Image]) {
    if shown.is_empty() {
        return;
    }
    if let Some(ChatMessage::User { images, .. }) =
        req.messages.iter_mut().rev().find(|m| matches!(m, ChatMessage::User { .. }))
    {
        *images = shown.to_vec();
    }
}
