//! `ask_user {question, options?}`: the model asks the person a question and the turn parks
//! until they answer, exactly like an approval (a question is an `ApprovalRow` of kind
//! `question`). This file holds the tool offered to the model, the checks of its arguments, the
//! question's record, and the results the resumed call gets.
//!
//! The tool's `call` is never run: the agent's tool round turns the call into a question. Nothing
//! here may wait for a person, send a message or read the store.

use crate::llm::ToolCall;
use crate::permissions::approval::{approval_id, args_hash};
use crate::store::{ApprovalKind, ApprovalRow, ApprovalStatus};
use crate::tools::{Tool, ToolCtx, ToolError, ToolSpec};
use async_trait::async_trait;
use butler_channel::InboundEvent;
use serde_json::{json, Value};
use std::time::Duration;

/// The tool's name.
pub const ASK_USER_TOOL: &str = "ask_user";
/// Most options one question offers (each becomes a button).
pub const MAX_OPTIONS: usize = 10;
/// Longest option, in characters (a button label on every platform).
pub const MAX_OPTION_CHARS: usize = 60;
/// Longest question, in characters.
pub const MAX_QUESTION_CHARS: usize = 1000;
/// The result of a question nobody answered in time.
pub const EXPIRED_RESULT: &str = "no answer in time (expired)";

/// The tool the model sees. Read-only (asking changes nothing), so the policy never asks about
/// asking; the tool round handles the call itself.
pub struct AskUser {
    spec: ToolSpec,
}

impl AskUser {
    pub fn new() -> Self {
        let spec = ToolSpec {
            name: ASK_USER_TOOL.into(),
            description: "Ask the person you are talking with a question and wait for their answer (it comes back \
                          as this tool's result). Use it when you cannot go on without their choice or a fact only \
                          they know. With `options`, they can pick one (shown as buttons); they may also reply in \
                          their own words."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "question": {"type": "string", "description": "the question, short and clear"},
                    "options": {
                        "type": "array",
                        "items": {"type": "string"},
                        "maxItems": MAX_OPTIONS,
                        "description": "short answers to choose from (optional)"
                    }
                },
                "required": ["question"],
                "additionalProperties": false
            }),
            read_only: true,
        };
        Self { spec }
    }
}

impl Default for AskUser {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for AskUser {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, _ctx: &ToolCtx, _args: Value) -> Result<String, ToolError> {
        // Never reached: the tool round turns every `ask_user` call into a question.
        Err(ToolError::Failed("ask_user is answered by the person, not run".into()))
    }
}

/// The question and options of validated arguments, or what is wrong with them (the model sees
/// it as the call's error result).
pub(super) fn question_of(args: &Value) -> Result<(String, Vec<String>), String> {
    let question = args.get("question").and_then(Value::as_str).unwrap_or_default().trim().to_string();
    if question.is_empty() {
        return Err("`question` must not be empty".into());
    }
    if question.chars().count() > MAX_QUESTION_CHARS {
        return Err(format!("`question` is longer than {MAX_QUESTION_CHARS} characters"));
    }
    let options: Vec<String> = match args.get("options") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map(|s| s.trim().to_string()).ok_or("`options` must be strings"))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("`options` must be an array of short strings".into()),
    };
    if options.len() > MAX_OPTIONS {
        return Err(format!("at most {MAX_OPTIONS} options"));
    }
    if let Some(bad) = options.iter().find(|o| o.is_empty() || o.chars().count() > MAX_OPTION_CHARS) {
        return Err(format!("each option must be 1 to {MAX_OPTION_CHARS} characters (`{bad}` is not)"));
    }
    Ok((question, options))
}

/// Where a question is asked: the turn's session and event.
pub(super) struct Asked<'a> {
    pub session_id: &'a str,
    pub session_key: &'a str,
    pub user_id: &'a str,
    pub event: &'a InboundEvent,
}

/// The record of a question: asked of exactly the identity that sent the event (only they may
/// answer), expiring like an approval.
pub(super) fn question_row(
    at: &Asked<'_>,
    call: &ToolCall,
    args: &Value,
    timeout: Duration,
) -> Result<ApprovalRow, String> {
    let (question, options) = question_of(args)?;
    let asked = at.event.actor.identity.to_string();
    let now = crate::clock::now_ms();
    Ok(ApprovalRow {
        id: approval_id(),
        session_id: at.session_id.to_string(),
        session_key: at.session_key.to_string(),
        conversation: at.event.conversation.to_string(),
        event_id: at.event.id.0.clone(),
        tool_call_id: call.id.clone(),
        tool: ASK_USER_TOOL.to_string(),
        args_hash: args_hash(&call.arguments),
        summary: question,
        requester: asked.clone(),
        requester_user: at.user_id.to_string(),
        approvers: vec![asked],
        kind: ApprovalKind::Question,
        options,
        answer: None,
        detail: None,
        status: ApprovalStatus::Pending,
        scope: None,
        decided_by: None,
        decided_ms: None,
        created_ms: now,
        expires_ms: now + timeout.as_millis() as i64,
    })
}

/// What the resumed `ask_user` call returns for a decided question: the answer, or that nobody
/// answered in time (neither is an error: the turn goes on with it), or why there is no answer
/// (an error). `None` for a question still pending.
pub(super) fn answer_result(row: &ApprovalRow) -> Option<(String, bool)> {
    let by = row.decided_by.as_deref().unwrap_or("someone");
    Some(match row.status {
        ApprovalStatus::Approved => (row.answer.clone().unwrap_or_default(), false),
        ApprovalStatus::Expired => (EXPIRED_RESULT.to_string(), false),
        ApprovalStatus::Denied => (format!("{by} declined to answer"), true),
        ApprovalStatus::Cancelled => ("not answered: stopped".to_string(), true),
        ApprovalStatus::Pending => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The question and options wanted, or a piece of the error.
    type Want = Result<(&'static str, Vec<&'static str>), &'static str>;

    #[test]
    fn arguments_table() {
        let long = "x".repeat(MAX_OPTION_CHARS + 1);
        let many: Vec<String> = (0..=MAX_OPTIONS).map(|i| i.to_string()).collect();
        let cases: Vec<(Value, Want)> = vec![
            (json!({"question": "Tea or coffee?"}), Ok(("Tea or coffee?", vec![]))),
            (json!({"question": " Which? ", "options": [" Tea", "Coffee "]}), Ok(("Which?", vec!["Tea", "Coffee"]))),
            (json!({"question": "Which?", "options": null}), Ok(("Which?", vec![]))),
            (json!({"question": "  "}), Err("must not be empty")),
            (json!({"options": ["a"]}), Err("must not be empty")),
            (json!({"question": "Which?", "options": "a, b"}), Err("array of short strings")),
            (json!({"question": "Which?", "options": [1, 2]}), Err("must be strings")),
            (json!({"question": "Which?", "options": ["a", ""]}), Err("1 to 60 characters")),
            (json!({"question": "Which?", "options": [long]}), Err("1 to 60 characters")),
            (json!({"question": "Which?", "options": many}), Err("at most 10 options")),
        ];
        for (args, want) in cases {
            let got = question_of(&args);
            match (&got, want) {
                (Ok((q, o)), Ok((wq, wo))) => {
                    assert_eq!((q.as_str(), o.iter().map(String::as_str).collect::<Vec<_>>()), (wq, wo), "{args}")
                }
                (Err(e), Err(w)) => assert!(e.contains(w), "{args}: {e}"),
                _ => panic!("{args}: {got:?}"),
            }
        }
    }
}
