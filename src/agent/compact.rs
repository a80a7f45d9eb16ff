//! Summary checkpoints: folding the older part of a session into a structured summary (goals,
//! decisions, facts learned, open tasks, files and tools in use) that replaces those messages
//! in what the model sees. Two reasons to fold: the request is over its token budget (the
//! newest third is kept), or more than `[limits] history_messages` messages follow the
//! checkpoint (all but the newest three quarters of `history_messages` are folded, so the next
//! fold is a quarter of the limit away, not one turn), so no message ever leaves the request
//! window without being in a summary. `/compact` folds on demand.
//!
//! Each summary request is sized to the window of the model that writes it (the `worker` tier's
//! when set): a long backlog is folded in slices, each with the summary so far, and a slice the
//! model still finds too long is retried once at half its size. The transcript itself is never
//! deleted. Nothing here may send to a channel; a failed summary leaves the session as it was.

use super::window::{SessionState, Window};
use crate::config::HookEvent;
use crate::llm::{ChatMessage, ChatRequest, LlmError};
use crate::store::{now_ms, NewMessage, Role, StoreError, SummaryRow, UsageRecord};

/// The summary's instructions: what it must keep, under fixed headings.
const SYSTEM: &str = "You write the running summary of a conversation between a person and their assistant, so \
     the assistant can go on without the messages it replaces. Keep every name, number, date, preference and \
     fact the person gave, even small ones. Use exactly these headings, each with short bullet points (write \
     \"none\" under a heading with nothing):\nGoals\nDecisions\nFacts learned\nOpen tasks\nFiles and tools in use\n\
     No preamble.";

/// Characters of one message at most in a summary request (a long paste is cut).
const MESSAGE_CHARS: usize = 2_000;
/// Tokens the summary itself may take.
const SUMMARY_TOKENS: u32 = 1_200;

/// Where to cut `history` so that the kept part starts at a user message (no tool call is
/// separated from its result), at or before `want`; `None` when nothing can be folded.
fn cut_before(history: &[NewMessage], want: usize) -> Option<usize> {
    let mut cut = want.min(history.len());
    while cut > 0 && history.get(cut).is_some_and(|m| m.role() != Role::User) {
        cut -= 1;
    }
    (cut > 0).then_some(cut)
}

/// Under token pressure: keep the newest third (at least two messages).
pub(super) fn pressure_cut(history: &[NewMessage]) -> Option<usize> {
    let keep = (history.len() / 3).max(2);
    cut_before(history, history.len().checked_sub(keep)?)
}

/// Over `history_messages`: keep the newest `keep`.
pub(super) fn overflow_cut(history: &[NewMessage], keep: usize) -> Option<usize> {
    cut_before(history, history.len().checked_sub(keep.max(2))?)
}

fn line(m: &NewMessage) -> String {
    let who = match (m.role(), m.name.as_deref()) {
        (Role::User, Some(name)) => name.to_string(),
        (Role::User, None) => "user".into(),
        (Role::Assistant, _) => "assistant".into(),
        (Role::Tool, _) => "tool result".into(),
    };
    let mut text: String = m.content.chars().take(MESSAGE_CHARS).collect();
    for c in &m.tool_calls {
        text.push_str(&format!(" [calls {} {}]", c.name, c.arguments.chars().take(200).collect::<String>()));
    }
    format!("{who}: {text}\n")
}

/// How many of `msgs` fit in `budget` characters with the summary so far (at least one).
fn slice_len(summary: Option<&SummaryRow>, msgs: &[NewMessage], budget: usize) -> usize {
    let mut used = summary.map_or(0, |s| s.text.len() + 20);
    let mut n = 0;
    for m in msgs {
        used += line(m).len();
        if used > budget && n > 0 {
            break;
        }
        n += 1;
    }
    n
}

fn request(summary: Option<&SummaryRow>, msgs: &[NewMessage]) -> ChatRequest {
    let mut text = String::new();
    if let Some(s) = summary {
        text.push_str(&format!("Summary so far:\n{}\n\nThen:\n", s.text));
    }
    text.extend(msgs.iter().map(line));
    ChatRequest {
        system: SYSTEM.into(),
        messages: vec![ChatMessage::User {
            content: format!("Summarize this conversation so far, merging the summary so far in:\n\n{text}"),
            name: None,
            images: Vec::new(),
        }],
        tools: Vec::new().into(),
        max_tokens: Some(SUMMARY_TOKENS),
    }
}

/// Characters of transcript one summary request may carry: three quarters of the summary
/// model's window, less the summary's own tokens and the instructions, four characters a
/// token.
fn summary_budget(w: &Window<'_>) -> usize {
    let tokens = (w.summary_window as usize * 3 / 4).saturating_sub(SUMMARY_TOKENS as usize + SYSTEM.len() / 4);
    (tokens * 4).max(1_000)
}

/// When more than `history_messages` follow the checkpoint, folds all but the newest three
/// quarters of them: folding only the excess would make a summary call at every turn.
pub(super) async fn fold_overflow(
    w: &Window<'_>,
    session: &mut SessionState,
    user_id: &str,
) -> Result<bool, StoreError> {
    if session.history.len() <= w.history_messages {
        return Ok(false);
    }
    match overflow_cut(&session.history, w.history_messages * 3 / 4) {
        Some(cut) => fold(w, session, user_id, cut).await,
        None => Ok(false),
    }
}

/// Under token pressure (or `/compact`): folds all but the newest third.
pub(super) async fn compact(w: &Window<'_>, session: &mut SessionState, user_id: &str) -> Result<bool, StoreError> {
    match pressure_cut(&session.history) {
        Some(cut) => fold(w, session, user_id, cut).await,
        None => Ok(false),
    }
}

/// Folds `history[..cut]` into the checkpoint, a slice that fits the summary model at a
/// time. False when the model failed before anything was folded.
async fn fold(w: &Window<'_>, session: &mut SessionState, user_id: &str, cut: usize) -> Result<bool, StoreError> {
    let hook = serde_json::json!({"session": session.row.id, "messages": cut});
    w.hooks.run(HookEvent::PreCompact, None, &hook).await;
    let mut left = cut;
    let mut folded = false;
    while left > 0 {
        let budget = summary_budget(w);
        let mut n = slice_len(session.summary.as_ref(), &session.history[..left], budget);
        let mut retried = false;
        let asm = loop {
            let req = request(session.summary.as_ref(), &session.history[..n]);
            match crate::llm::complete(w.llm, &req).await {
                Ok(asm) => break Some(asm),
                // Too long for the model after all: once more with half the slice.
                Err(LlmError::ContextTooLong(e)) if !retried && n > 1 => {
                    tracing::info!(error = %e, messages = n, "summary request too long: retrying with half");
                    retried = true;
                    n /= 2;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "compaction summary failed");
                    break None;
                }
            }
        };
        let Some(asm) = asm else { break };
        let text = super::storable::text(asm.text.trim().to_string());
        if text.is_empty() {
            break;
        }
        let up_to_seq = session.base_seq + n as i64 - 1;
        w.store.summaries.summary_add(&session.row.id, up_to_seq, &text).await?;
        let event_id = format!("compaction:{}:{up_to_seq}", session.row.id);
        let ids = [user_id, session.row.id.as_str(), event_id.as_str()];
        let model = asm.model_or(w.llm.model());
        let usage = UsageRecord::priced(&w.prices.get(model), "compaction", ids, model, &asm.usage);
        w.store.turns.usage_add(&usage).await?;
        session.history.drain(..n);
        session.base_seq += n as i64;
        session.summary = Some(SummaryRow { up_to_seq, text, created_ms: now_ms() });
        left -= n;
        folded = true;
        tracing::info!(session = %session.row.id, up_to_seq, "folded into the summary checkpoint");
    }
    if folded {
        let up_to_seq = session.summary.as_ref().map_or(0, |s| s.up_to_seq);
        let hook = serde_json::json!({"session": session.row.id, "up_to_seq": up_to_seq});
        w.hooks.run(HookEvent::PostCompact, None, &hook).await;
    }
    Ok(folded)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolCall;

    fn u(t: &str) -> NewMessage {
        NewMessage::user(t, None, None)
    }

    fn a(calls: usize) -> NewMessage {
        let calls = (0..calls).map(|i| ToolCall { id: i.to_string(), name: "t".into(), arguments: "{}".into() });
        NewMessage::assistant("", calls.collect())
    }

    #[test]
    fn cuts_never_separate_a_call_from_its_result() {
        let t = |id: &str| NewMessage::tool(id, "ok", false);
        let history = vec![u("1"), a(1), t("0"), a(0), u("2"), a(1), t("0"), a(0), u("3"), a(0)];
        // (cut, want)
        let cases = [
            (pressure_cut(&history), Some(4)),
            (overflow_cut(&history, 2), Some(8)),
            (overflow_cut(&history, 5), Some(4)),
            (overflow_cut(&history, 10), None),
            (pressure_cut(&[u("only")]), None),
        ];
        for (i, (got, want)) in cases.into_iter().enumerate() {
            assert_eq!(got, want, "case {i}");
            if let Some(cut) = got {
                assert_eq!(history[cut].role(), Role::User, "case {i}");
            }
        }
    }

    #[test]
    fn slices_fit_the_budget_and_take_at_least_one_message() {
        let msgs: Vec<NewMessage> = (0..10).map(|i| u(&format!("message {i} {}", "x".repeat(90)))).collect();
        // Each line is about 110 characters.
        assert_eq!(slice_len(None, &msgs, 350), 3);
        assert_eq!(slice_len(None, &msgs, 10), 1, "a slice is never empty");
        let summary = SummaryRow { up_to_seq: 1, text: "s".repeat(200), created_ms: 0 };
        assert_eq!(slice_len(Some(&summary), &msgs, 350), 1, "the summary so far takes its room");
        let req = request(Some(&summary), &msgs[..2]);
        let ChatMessage::User { content, .. } = &req.messages[0] else { panic!() };
        assert!(content.starts_with("Summarize this conversation so far"));
        assert!(content.contains("Summary so far:") && content.contains("message 1"));
        for heading in ["Goals", "Decisions", "Facts learned", "Open tasks", "Files and tools in use"] {
            assert!(req.system.contains(heading), "{heading}");
        }
    }
}
