//! Making what the agent commits storable on every backend. Postgres cannot hold U+0000 in
//! `text`, so one NUL from the model or a tool would fail the turn's commit forever (ingress
//! cleans inbound text the same way). The agent cleans what enters a turn from outside, once,
//! where it enters: each event the model streams (its text, tool call ids, names and
//! arguments), the model's summaries, and tool results as they become transcript messages.
//! Everything the agent derives from them (drafts, the reply, approval requests, argument
//! hashes) is then clean too.
//!
//! This must never change text that is already storable.

use super::exec::ToolResult;
use crate::llm::StreamEvent;
use crate::store::NewMessage;
use butler_channel::storable_text;

/// `s`, with every character no backend can store replaced by U+FFFD.
pub(super) fn text(s: String) -> String {
    if s.contains('\0') {
        storable_text(&s)
    } else {
        s
    }
}

/// A streamed model event whose text is storable.
pub(super) fn event(ev: StreamEvent) -> StreamEvent {
    match ev {
        StreamEvent::Text(t) => StreamEvent::Text(text(t)),
        StreamEvent::ToolCallStart { index, id, name } => {
            StreamEvent::ToolCallStart { index, id: text(id), name: text(name) }
        }
        StreamEvent::ToolCallArgs { index, delta } => StreamEvent::ToolCallArgs { index, delta: text(delta) },
        other => other,
    }
}

/// Tool results as transcript messages, their text storable.
pub(super) fn tool_messages(results: Vec<ToolResult>) -> Vec<NewMessage> {
    results
        .into_iter()
        .map(|r| NewMessage { images: r.images, ..NewMessage::tool(r.call_id, text(r.content), r.is_error) })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_events_table() {
        let r = "\u{FFFD}";
        let cases = [
            (StreamEvent::Text("a\0b".into()), StreamEvent::Text(format!("a{r}b"))),
            (StreamEvent::Text("plain".into()), StreamEvent::Text("plain".into())),
            (
                StreamEvent::ToolCallStart { index: 1, id: "c\0".into(), name: "n\0".into() },
                StreamEvent::ToolCallStart { index: 1, id: format!("c{r}"), name: format!("n{r}") },
            ),
            (
                StreamEvent::ToolCallArgs { index: 0, delta: "{\"q\":\"\0\"}".into() },
                StreamEvent::ToolCallArgs { index: 0, delta: format!("{{\"q\":\"{r}\"}}") },
            ),
            (StreamEvent::Finish(crate::llm::FinishReason::Stop), StreamEvent::Finish(crate::llm::FinishReason::Stop)),
        ];
        for (input, want) in cases {
            assert_eq!(event(input.clone()), want, "{input:?}");
        }
    }

    #[test]
    fn tool_results_table() {
        let cases = [("out\0put", false, "out\u{FFFD}put"), ("fine", true, "fine"), ("\0", false, "\u{FFFD}")];
        for (content, is_error, want) in cases {
            let msgs = tool_messages(vec![ToolResult {
                call_id: "c1".into(),
                content: content.into(),
                is_error,
                images: vec![],
            }]);
            assert_eq!(msgs, vec![NewMessage::tool("c1", want, is_error)], "{content:?}");
        }
    }
}
