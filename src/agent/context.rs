//! Turning the stored transcript into the messages sent to the model, repairing what a crash
//! or a window cut can leave behind. The provider must never see a tool call without its result
//! or a result without its call.

use crate::llm::ChatMessage;
use crate::store::{NewMessage, Role};
use std::collections::HashSet;

/// Result text for a tool call whose result was never recorded.
pub(super) const INTERRUPTED: &str =
    "(no result: the turn was interrupted before this tool call finished; it was not re-run)";

/// Tool results missing after the last assistant message with tool calls (a turn cut off
/// between recording its calls and their results).
pub(super) fn dangling_results(history: &[NewMessage]) -> Vec<NewMessage> {
    let Some(pos) = history.iter().rposition(|m| m.role() == Role::Assistant) else { return vec![] };
    let answered: HashSet<&str> = history[pos + 1..].iter().filter_map(|m| m.tool_call_id.as_deref()).collect();
    history[pos]
        .tool_calls
        .iter()
        .filter(|c| !answered.contains(c.id.as_str()))
        .map(|c| NewMessage::tool(c.id.clone(), INTERRUPTED, true))
        .collect()
}

/// The model's view of `history`: starts at a user message, every tool call followed by exactly
/// one result, group speakers named.
pub(super) fn build_messages<'m>(history: impl IntoIterator<Item = &'m NewMessage>) -> Vec<ChatMessage> {
    let history = history.into_iter();
    let mut out = Vec::with_capacity(history.size_hint().0);
    let mut open_calls: Vec<String> = Vec::new();
    let close = |out: &mut Vec<ChatMessage>, open: &mut Vec<String>| {
        for id in open.drain(..) {
            out.push(ChatMessage::Tool { call_id: id, content: INTERRUPTED.into(), is_error: true, images: vec![] });
        }
    };
    for m in history.skip_while(|m| m.role() != Role::User) {
        match m.role() {
            Role::User => {
                close(&mut out, &mut open_calls);
                out.push(ChatMessage::User { content: m.content.clone(), name: m.name.clone(), images: Vec::new() });
            }
            Role::Assistant => {
                close(&mut out, &mut open_calls);
                open_calls = m.tool_calls.iter().map(|c| c.id.clone()).collect();
                out.push(ChatMessage::Assistant { content: m.content.clone(), tool_calls: m.tool_calls.clone() });
            }
            Role::Tool => {
                let Some(id) = m.tool_call_id.as_deref() else { continue };
                let Some(i) = open_calls.iter().position(|c| c == id) else { continue };
                open_calls.remove(i);
                out.push(ChatMessage::Tool {
                    call_id: id.to_string(),
                    content: m.content.clone(),
                    is_error: m.is_error,
                    images: m.images.clone(),
                });
            }
        }
    }
    close(&mut out, &mut open_calls);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolCall;

    fn call(id: &str) -> ToolCall {
        ToolCall { id: id.into(), name: "now".into(), arguments: "{}".into() }
    }

    fn shape(msgs: &[ChatMessage]) -> String {
        msgs.iter()
            .map(|m| match m {
                ChatMessage::User { .. } => "U".to_string(),
                ChatMessage::Assistant { tool_calls, .. } => format!("A{}", tool_calls.len()),
                ChatMessage::Tool { call_id, is_error, .. } => {
                    format!("T{call_id}{}", if *is_error { "!" } else { "" })
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn repairs_table() {
        let u = || NewMessage::user("hi", None, None);
        let a = |ids: &[&str]| NewMessage::assistant("", ids.iter().map(|i| call(i)).collect());
        let t = |id: &str| NewMessage::tool(id, "ok", false);
        let cases: Vec<(&str, Vec<NewMessage>, &str)> = vec![
            ("plain", vec![u(), a(&[]), u()], "U A0 U"),
            ("complete round", vec![u(), a(&["1", "2"]), t("2"), t("1"), a(&[])], "U A2 T2 T1 A0"),
            ("leading orphans dropped", vec![t("9"), a(&["9"]), u(), a(&[])], "U A0"),
            ("missing result filled", vec![u(), a(&["1", "2"]), t("1")], "U A2 T1 T2!"),
            ("missing before next user", vec![u(), a(&["1"]), u()], "U A1 T1! U"),
            ("unknown result dropped", vec![u(), a(&["1"]), t("1"), t("7")], "U A1 T1"),
        ];
        for (name, history, want) in cases {
            assert_eq!(shape(&build_messages(&history)), want, "{name}");
        }
    }

    #[test]
    fn dangling_after_crash() {
        let h = vec![
            NewMessage::user("hi", None, None),
            NewMessage::assistant("", vec![call("1"), call("2")]),
            NewMessage::tool("1", "ok", false),
        ];
        let fix = dangling_results(&h);
        assert_eq!(fix.len(), 1);
        assert_eq!(fix[0].tool_call_id.as_deref(), Some("2"));
        assert!(dangling_results(&h[..1]).is_empty());
    }
}
