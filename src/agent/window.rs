//! What of a session the model sees, and keeping it within the model's context window.
//!
//! A session's live state is its latest summary checkpoint plus the messages after it. Before
//! each model call the request is measured (estimated tokens); over the budget (three quarters
//! of `[llm] context_window`, minus room for the answer) it is shrunk in steps: old tool results
//! are cleared, then long old texts collapsed, and if that is not enough the older part of the
//! session is summarized by the model into a checkpoint (`compact.rs`, which also folds what is
//! over `[limits] history_messages`). The transcript itself is never deleted; checkpoints only
//! change what is sent. Per-turn memory recall goes into the current
//! user message, never into the system prompt.

use super::stores::AgentStores;
use crate::hooks::Hooks;
use crate::llm::{ChatMessage, ChatRequest, PriceBook, Provider, ToolDef};
use crate::store::{MemoryScope, NewMessage, SessionRow, StoreError, SummaryRow, SummaryStore};

/// Messages at the end of the request that are never cleared or collapsed.
const KEEP_RECENT: usize = 8;
/// Old texts longer than this are collapsed.
const COLLAPSE_OVER: usize = 1_200;
const COLLAPSE_TO: usize = 400;

/// A live session's state held by its actor: the stored row, the latest summary checkpoint and
/// the messages after it (the most recent ones).
#[derive(Clone, Debug)]
pub(crate) struct SessionState {
    pub row: SessionRow,
    pub history: Vec<NewMessage>,
    /// The seq of `history[0]` (messages are appended contiguously).
    pub base_seq: i64,
    pub summary: Option<SummaryRow>,
}

impl SessionState {
    /// Loads the latest checkpoint and every message after it (the next request folds what
    /// is over `[limits] history_messages` into a new checkpoint first: nothing after a
    /// checkpoint is ever left out unsummarized). At most [`LOAD_MAX`] messages are read.
    pub async fn load(summaries: &dyn SummaryStore, row: SessionRow) -> Result<Self, StoreError> {
        let summary = summaries.summary_latest(&row.id).await?;
        let after = summary.as_ref().map_or(0, |s| s.up_to_seq);
        let rest = summaries.messages_after(&row.id, after, LOAD_MAX).await?;
        if rest.len() == LOAD_MAX {
            tracing::warn!(session = %row.id, after, "more messages after the checkpoint than one load reads");
        }
        let base_seq = rest.first().map_or(after + 1, |m| m.seq);
        Ok(Self { row, history: rest.into_iter().map(|m| m.msg).collect(), base_seq, summary })
    }
}

/// The most messages after a checkpoint one load reads (a session folds its history into a
/// checkpoint whenever it passes `[limits] history_messages`, so far fewer are there).
const LOAD_MAX: usize = 5_000;

/// What one image counts as in the estimate, in characters (about 1,600 tokens: a large
/// image as vision models bill it).
const IMAGE_CHARS: usize = 6_400;

/// Estimated tokens of a request: about four characters a token, plus a little per message.
pub(super) fn estimate(req: &ChatRequest) -> usize {
    let chars: usize = req.system.len()
        + req.tools.iter().map(ToolDef::chars).sum::<usize>()
        + req
            .messages
            .iter()
            .map(|m| match m {
                ChatMessage::User { content, .. } => content.len(),
                ChatMessage::Assistant { content, tool_calls } => {
                    content.len() + tool_calls.iter().map(|c| c.name.len() + c.arguments.len()).sum::<usize>()
                }
                ChatMessage::Tool { content, images, .. } => content.len() + images.len() * IMAGE_CHARS,
            })
            .sum::<usize>();
    chars / 4 + req.messages.len() * 4
}

/// Cheap shrinking, in order, until `req` fits `budget`: clear old tool results, then collapse
/// long old texts. The last [`KEEP_RECENT`] messages are never touched. Returns the estimate.
pub(super) fn shrink(req: &mut ChatRequest, budget: usize) -> usize {
    let mut size = estimate(req);
    let old = req.messages.len().saturating_sub(KEEP_RECENT);
    // Replaces `text`, keeping the estimate in step (about four characters a token).
    let replace = |text: &mut String, new: String, size: &mut usize| {
        *size = size.saturating_sub(text.len() / 4) + new.len() / 4;
        *text = new;
    };
    for m in req.messages[..old].iter_mut() {
        if size <= budget {
            return size;
        }
        if let ChatMessage::Tool { content, images, .. } = m {
            if content.len() > 80 || !images.is_empty() {
                let shown = match images.len() {
                    0 => String::new(),
                    n => format!(" and {n} image(s)"),
                };
                let cleared =
                    format!("[old tool result cleared to save space; it had {} characters{shown}]", content.len());
                size = size.saturating_sub(images.len() * IMAGE_CHARS / 4);
                images.clear();
                replace(content, cleared, &mut size);
            }
        }
    }
    for m in req.messages[..old].iter_mut() {
        if size <= budget {
            return size;
        }
        let text = match m {
            ChatMessage::User { content, .. } | ChatMessage::Assistant { content, .. } => content,
            ChatMessage::Tool { .. } => continue,
        };
        let total = text.chars().count();
        if total > COLLAPSE_OVER {
            let collapsed =
                format!("{}… [collapsed: {total} characters]", text.chars().take(COLLAPSE_TO).collect::<String>());
            replace(text, collapsed, &mut size);
        }
    }
    size
}

/// The summary checkpoint as the first message of a request.
pub(super) fn summary_message(summary: &SummaryRow) -> ChatMessage {
    ChatMessage::User {
        content: format!("[Summary of the earlier conversation]\n{}", summary.text),
        name: None,
        images: Vec::new(),
    }
}

/// What building a request and keeping it within the context window need of the agent.
pub(super) struct Window<'a> {
    pub(super) store: &'a AgentStores,
    /// The model that writes compaction summaries: the `worker` tier when configured.
    pub(super) llm: &'a dyn Provider,
    pub(super) hooks: &'a Hooks,
    /// Prices the summary's call at the model that answered it.
    pub(super) prices: &'a PriceBook,
    /// The model's context window in tokens.
    pub(super) context_window: u32,
    /// The context window of the model that writes summaries (the `worker` tier's when set).
    pub(super) summary_window: u32,
    /// `[limits] history_messages`: at most this many messages after the checkpoint are sent;
    /// older ones are folded into it first.
    pub(super) history_messages: usize,
    pub(super) max_tokens: u32,
    pub(super) recall_limit: usize,
    pub(super) auto_recall: bool,
    pub(super) recall_budget_tokens: usize,
}

impl Window<'_> {
    /// The model's view of the session: the checkpoint, then the messages (with the turn's
    /// unsaved user message, and the recall block in the current user message).
    pub(super) fn request_messages(
        &self,
        session: &SessionState,
        unsaved_user: Option<&NewMessage>,
        recall: Option<&str>,
    ) -> Vec<ChatMessage> {
        // The history is read in place, never copied: it grows with the conversation.
        let view = session.history.iter().chain(unsaved_user);
        let mut messages: Vec<ChatMessage> = session.summary.iter().map(summary_message).collect();
        messages.extend(super::context::build_messages(view));
        if let Some(block) = recall {
            if let Some(ChatMessage::User { content, .. }) =
                messages.iter_mut().rev().find(|m| matches!(m, ChatMessage::User { .. }))
            {
                *content = format!("{block}\n\n{content}");
            }
        }
        messages
    }

    /// The token budget of a request.
    pub(super) fn budget(&self) -> usize {
        (self.context_window as usize * 3 / 4).saturating_sub(self.max_tokens as usize).max(256)
    }

    /// Memories relevant to `text`, as a block for the current user message (within the
    /// recall budget), or `None`.
    pub(super) async fn recall_block(&self, owner: &MemoryScope, text: &str) -> Result<Option<String>, StoreError> {
        if !self.auto_recall || text.trim().is_empty() {
            return Ok(None);
        }
        let found = self.store.memory.memory_search(owner, text, self.recall_limit).await?;
        let mut budget = self.recall_budget_tokens * 4;
        let mut lines = Vec::new();
        for m in found {
            let line = format!("[memory {}] {}", m.id, m.text);
            if line.len() > budget {
                break;
            }
            budget -= line.len();
            lines.push(line);
        }
        if lines.is_empty() {
            return Ok(None);
        }
        Ok(Some(format!("[Memories that may help; each has an id you can refer to or `forget`]\n{}", lines.join("\n"))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolCall;

    fn req(messages: Vec<ChatMessage>) -> ChatRequest {
        ChatRequest { system: "s".into(), messages, tools: Vec::new().into(), max_tokens: None }
    }

    #[test]
    fn shrinking_clears_old_tool_results_first_then_collapses_old_texts() {
        let long = "x".repeat(4_000);
        let mut msgs = vec![
            ChatMessage::User { content: long.clone(), name: None, images: Vec::new() },
            ChatMessage::Assistant {
                content: String::new(),
                tool_calls: vec![ToolCall { id: "1".into(), name: "t".into(), arguments: "{}".into() }],
            },
            ChatMessage::Tool { call_id: "1".into(), content: long.clone(), is_error: false, images: vec![] },
        ];
        msgs.extend((0..KEEP_RECENT).map(|i| ChatMessage::User {
            content: format!("recent {i} {long}"),
            name: None,
            images: Vec::new(),
        }));
        let mut r = req(msgs);
        let before = estimate(&r);
        // A budget that clearing the tool result alone meets: the old text stays.
        let after_clear = shrink(&mut r.clone(), before - 900);
        assert!(after_clear <= before - 900);
        let mut only_clear = r.clone();
        shrink(&mut only_clear, before - 900);
        assert!(
            matches!(&only_clear.messages[2], ChatMessage::Tool { content, .. } if content.starts_with("[old tool result cleared"))
        );
        assert!(matches!(&only_clear.messages[0], ChatMessage::User { content, .. } if content.len() == 4_000));
        // A tighter budget also collapses the old text; recent messages are untouched.
        shrink(&mut r, 100);
        assert!(
            matches!(&r.messages[0], ChatMessage::User { content, .. } if content.contains("[collapsed: 4000 characters]"))
        );
        for m in &r.messages[3..] {
            assert!(matches!(m, ChatMessage::User { content, .. } if content.len() > 4_000));
        }
    }
}
