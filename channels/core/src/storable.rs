//! Making inbound text storable on every backend: Postgres cannot hold U+0000 in `text` (nor in
//! JSON), SQLite can, so the same event would be stored on one and refused (forever) on the
//! other. Ingress runs [`InboundEvent::make_storable`] before anything is stored, so both
//! backends keep the same sanitized text.
//!
//! This must never change text that is already storable, and never drop a field.

use crate::event::{EventBody, InboundEvent};

/// What stands in for a character no backend can store (U+FFFD, the replacement character), so
/// that words on either side of it stay apart.
pub const REPLACEMENT: char = '\u{FFFD}';

/// Whether `c` cannot be stored as text on every backend.
fn unstorable(c: char) -> bool {
    c == '\0'
}

/// `s` with every unstorable character replaced by [`REPLACEMENT`].
pub fn storable_text(s: &str) -> String {
    s.chars().map(|c| if unstorable(c) { REPLACEMENT } else { c }).collect()
}

/// Sanitizes `s` in place; `true` when something changed.
fn fix(s: &mut String) -> bool {
    if !s.chars().any(unstorable) {
        return false;
    }
    *s = storable_text(s);
    true
}

fn fix_opt(s: &mut Option<String>) -> bool {
    s.as_mut().is_some_and(fix)
}

/// Sanitizes every string of a JSON value, object keys included.
fn fix_json(v: &mut serde_json::Value) -> bool {
    match v {
        serde_json::Value::String(s) => fix(s),
        serde_json::Value::Array(items) => items.iter_mut().fold(false, |acc, i| fix_json(i) | acc),
        serde_json::Value::Object(map) => {
            if !map.keys().any(|k| k.chars().any(unstorable)) {
                return map.values_mut().fold(false, |acc, i| fix_json(i) | acc);
            }
            let old = std::mem::take(map);
            for (k, mut val) in old {
                fix_json(&mut val);
                map.insert(storable_text(&k), val);
            }
            true
        }
        _ => false,
    }
}

impl InboundEvent {
    /// Replaces every character that some backend cannot store (U+0000) in every text field:
    /// the id, the actor, the conversation, message ids, the body (trigger payloads, headers
    /// and keys included). Returns `true` when anything changed.
    pub fn make_storable(&mut self) -> bool {
        let mut changed = fix(&mut self.id.0);
        changed |= fix(&mut self.actor.identity.channel);
        changed |= fix(&mut self.actor.identity.user_id);
        changed |= fix_opt(&mut self.actor.display_name);
        changed |= fix(&mut self.conversation.channel);
        changed |= fix(&mut self.conversation.id);
        changed |= fix_opt(&mut self.conversation.thread);
        changed |= fix_opt(&mut self.reply_to);
        changed |= fix_opt(&mut self.message_id);
        changed |= match &mut self.body {
            EventBody::Message { text } => fix(text),
            EventBody::Action { action, message, interaction } => fix(action) | fix_opt(message) | fix_opt(interaction),
            EventBody::Trigger { source, text, payload } => fix(source) | fix(text) | fix_json(payload),
        };
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Actor, ConversationKind, ConversationRef, EventId, Identity};
    use serde_json::json;

    #[test]
    fn text_table() {
        let cases = [
            ("", ""),
            ("plain text", "plain text"),
            ("a\0b", "a\u{FFFD}b"),
            ("\0", "\u{FFFD}"),
            ("\0\0x\0", "\u{FFFD}\u{FFFD}x\u{FFFD}"),
            ("tabs\tand\nnewlines\r", "tabs\tand\nnewlines\r"),
            ("ünïcødé 🦀 \u{1}", "ünïcødé 🦀 \u{1}"),
        ];
        for (input, want) in cases {
            assert_eq!(storable_text(input), want, "input {input:?}");
        }
    }

    fn event(body: EventBody) -> InboundEvent {
        InboundEvent {
            id: EventId("tg:1\0".into()),
            actor: Actor {
                identity: Identity::new("telegram", "42\0"),
                display_name: Some("Al\0ice".into()),
                is_bot: false,
            },
            conversation: ConversationRef { channel: "telegram".into(), id: "42".into(), thread: Some("\0".into()) },
            kind: ConversationKind::Direct,
            addressed: true,
            reply_to: Some("7\0".into()),
            message_id: None,
            body,
            at_ms: 1,
            attachments: Vec::new(),
        }
    }

    #[test]
    fn every_field_is_sanitized() {
        let r = "\u{FFFD}";
        let bodies = [
            (EventBody::Message { text: "hi\0".into() }, EventBody::Message { text: format!("hi{r}") }),
            (
                EventBody::Action {
                    action: "ok\0".into(),
                    message: Some("\0".into()),
                    interaction: Some("i\0".into()),
                },
                EventBody::Action {
                    action: format!("ok{r}"),
                    message: Some(r.into()),
                    interaction: Some(format!("i{r}")),
                },
            ),
            (
                EventBody::Trigger {
                    source: "gh\0".into(),
                    text: "push\0".into(),
                    payload: json!({"headers": {"x-a\0": "v\0"}, "body": {"list": ["\0", 1, null], "n": 2}}),
                },
                EventBody::Trigger {
                    source: format!("gh{r}"),
                    text: format!("push{r}"),
                    payload: json!({"headers": {format!("x-a{r}"): format!("v{r}")}, "body": {"list": [r, 1, null], "n": 2}}),
                },
            ),
        ];
        for (body, want) in bodies {
            let mut ev = event(body);
            assert!(ev.make_storable());
            assert_eq!(ev.body, want);
            assert_eq!(ev.id.0, format!("tg:1{r}"));
            assert_eq!(ev.actor.identity.user_id, format!("42{r}"));
            assert_eq!(ev.actor.display_name.as_deref(), Some(format!("Al{r}ice").as_str()));
            assert_eq!(ev.conversation.thread.as_deref(), Some(r));
            assert_eq!(ev.reply_to.as_deref(), Some(format!("7{r}").as_str()));
            let json = serde_json::to_string(&ev).expect("serializes");
            assert!(!json.contains("\\u0000") && !json.contains('\0'), "{json}");
            // Already storable: nothing changes.
            let again = ev.clone();
            assert!(!ev.make_storable());
            assert_eq!(ev, again);
        }
    }
}
