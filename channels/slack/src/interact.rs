//! Button clicks (`block_actions`) and slash commands (`/butler <text>`) as [`InboundEvent`]s.
//! Over HTTP a click arrives as the form field `payload=<JSON>` and a command as form fields;
//! over Socket Mode both arrive as JSON inside the envelope. The same structs read both.
//!
//! - A click is `slack:action:<trigger_id>` (or `action_ts`), in the conversation of the message
//!   it sits on (`slack:<channel>/<thread_ts>` in a thread), with
//!   `EventBody::Action { action: the button's value, message: the message ts, interaction:
//!   the response URL }`.
//! - A command is `slack:command:<trigger_id>`: a message with the command's text, in the
//!   channel it was typed in (Butler answers there; a channel answer starts a new thread).
//!
//! This module only maps: it must never call Slack or store anything.

use crate::inbound::ts_ms;
use crate::CHANNEL;
use butler_channel::{Actor, ConversationKind, ConversationRef, EventBody, EventId, Identity, InboundEvent};
use serde::Deserialize;

#[derive(Deserialize)]
struct Interaction {
    #[serde(rename = "type")]
    kind: String,
    user: Option<User>,
    channel: Option<Named>,
    container: Option<Container>,
    message: Option<Message>,
    trigger_id: Option<String>,
    response_url: Option<String>,
    #[serde(default)]
    actions: Vec<Action>,
}

#[derive(Deserialize)]
struct User {
    id: String,
    name: Option<String>,
    username: Option<String>,
}

#[derive(Deserialize)]
struct Named {
    id: String,
}

#[derive(Deserialize)]
struct Container {
    message_ts: Option<String>,
    channel_id: Option<String>,
    thread_ts: Option<String>,
}

#[derive(Deserialize)]
struct Message {
    ts: Option<String>,
    thread_ts: Option<String>,
}

#[derive(Deserialize)]
struct Action {
    value: Option<String>,
    action_ts: Option<String>,
}

/// The fields of a slash command (form-encoded over HTTP, JSON over Socket Mode).
#[derive(Clone, Debug, Deserialize)]
pub struct Command {
    pub command: String,
    #[serde(default)]
    pub text: String,
    pub user_id: String,
    pub user_name: Option<String>,
    pub channel_id: String,
    pub trigger_id: String,
}

/// Whether a Slack id can be part of Butler's names (`slack:<channel>/<thread>`, `slack:<user>`)
/// and read back from the inbox as itself: not empty, without the thread separator `/` (found
/// by fuzzing, fuzz/regressions/slack_event/ and slack_interaction/).
pub(crate) fn usable(id: &str) -> bool {
    !id.is_empty() && !id.contains('/')
}

fn kind_of(channel: &str) -> ConversationKind {
    if channel.starts_with('D') {
        ConversationKind::Direct
    } else {
        ConversationKind::Group
    }
}

/// A `block_actions` click as an event; `Ok(None)` for other interaction types (which Butler
/// acknowledges and ignores). `now_ms` stands in when the click carries no time.
pub fn interaction(payload: &[u8], now_ms: i64) -> Result<Option<InboundEvent>, String> {
    let i: Interaction = serde_json::from_slice(payload).map_err(|e| format!("not an interaction payload: {e}"))?;
    if i.kind != "block_actions" {
        return Ok(None);
    }
    let action = i.actions.first().ok_or("the click carries no action")?;
    let value = action.value.clone().ok_or("the button has no value")?;
    let user = i.user.filter(|u| usable(&u.id)).ok_or("the click has no user")?;
    let container = i.container.as_ref();
    let channel = container
        .and_then(|c| c.channel_id.clone())
        .or_else(|| i.channel.map(|c| c.id))
        .filter(|c| usable(c))
        .ok_or("the click is not on a message in a conversation")?;
    let message_ts =
        container.and_then(|c| c.message_ts.clone()).or_else(|| i.message.as_ref().and_then(|m| m.ts.clone()));
    let thread =
        i.message.as_ref().and_then(|m| m.thread_ts.clone()).or_else(|| container.and_then(|c| c.thread_ts.clone()));
    let thread = thread.filter(|t| usable(t));
    let key = i.trigger_id.clone().or_else(|| action.action_ts.clone()).ok_or("the click has no trigger_id")?;
    Ok(Some(InboundEvent {
        id: EventId(format!("slack:action:{key}")),
        actor: Actor {
            identity: Identity::new(CHANNEL, &user.id),
            display_name: user.name.or(user.username),
            is_bot: false,
        },
        conversation: ConversationRef::new(CHANNEL, &channel).with_thread(thread),
        kind: kind_of(&channel),
        addressed: true,
        reply_to: None,
        message_id: message_ts.clone(),
        body: EventBody::Action { action: value, message: message_ts, interaction: i.response_url },
        at_ms: action.action_ts.as_deref().map_or(now_ms, ts_ms),
        attachments: Vec::new(),
    }))
}

/// A slash command as an event (its text goes to the agent); `Err` when its channel or user is no
/// Slack id.
pub fn command(c: &Command, now_ms: i64) -> Result<InboundEvent, String> {
    if !usable(&c.channel_id) || !usable(&c.user_id) {
        return Err("the command names no Slack channel or user".into());
    }
    Ok(InboundEvent {
        id: EventId(format!("slack:command:{}", c.trigger_id)),
        actor: Actor { identity: Identity::new(CHANNEL, &c.user_id), display_name: c.user_name.clone(), is_bot: false },
        conversation: ConversationRef::new(CHANNEL, &c.channel_id),
        kind: kind_of(&c.channel_id),
        addressed: true,
        reply_to: None,
        message_id: None,
        body: EventBody::Message { text: c.text.trim().to_string() },
        at_ms: now_ms,
        attachments: Vec::new(),
    })
}

/// The JSON text of the `payload` form field of an interactive request.
pub fn form_payload(body: &[u8]) -> Result<String, String> {
    let fields: Vec<(String, String)> =
        serde_urlencoded::from_bytes(body).map_err(|e| format!("not a form-encoded body: {e}"))?;
    fields.into_iter().find(|(k, _)| k == "payload").map(|(_, v)| v).ok_or_else(|| "no `payload` field".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    const CLICK: &str = include_str!("../../../tests/fixtures/slack/block_actions_button_bolt_python.json");
    const SIGNED: &str = include_str!("../../../tests/fixtures/slack/signing_vectors.json");

    #[test]
    fn the_recorded_click_over_the_form_body() {
        let fixture: Value = serde_json::from_str(CLICK).unwrap();
        let raw = fixture["raw_body_as_built_by_bolt_python_test"].as_str().unwrap();
        let payload = form_payload(raw.as_bytes()).unwrap();
        let e = interaction(payload.as_bytes(), 0).unwrap().unwrap();
        assert_eq!(e.id.0, "slack:action:111.222.valid");
        assert_eq!(e.actor.identity.to_string(), "slack:W111");
        assert_eq!(e.actor.name(), "primary-owner");
        assert_eq!(e.conversation.to_string(), "slack:C111");
        assert_eq!(e.kind, ConversationKind::Group);
        assert_eq!(
            e.body,
            EventBody::Action {
                action: "click_me_123".into(),
                message: Some("111.222".into()),
                interaction: Some("https://hooks.slack.com/actions/T111/111/random-value".into()),
            }
        );
        assert_eq!(e.at_ms, 1_596_530_385_194);
        // The JSON form (Socket Mode) gives the same event.
        let same = interaction(fixture["payload_json"].to_string().as_bytes(), 0).unwrap().unwrap();
        assert_eq!(same, e);
    }

    #[test]
    fn a_click_in_a_thread_belongs_to_the_thread() {
        let payload = serde_json::json!({
            "type": "block_actions", "user": {"id": "U1", "username": "ann"}, "trigger_id": "9.9",
            "container": {"type": "message", "message_ts": "5.5", "channel_id": "C1", "thread_ts": "4.4"},
            "message": {"ts": "5.5", "thread_ts": "4.4"},
            "actions": [{"value": "ap:abc:once", "action_ts": "6.6"}]
        });
        let e = interaction(payload.to_string().as_bytes(), 0).unwrap().unwrap();
        assert_eq!(e.conversation.to_string(), "slack:C1/4.4");
        assert_eq!(e.actor.name(), "ann");
        let other = serde_json::json!({"type": "view_submission"});
        assert_eq!(interaction(other.to_string().as_bytes(), 0).unwrap(), None);
        assert!(interaction(b"{}", 0).is_err());
    }

    #[test]
    fn the_documented_slash_command() {
        let v: Value = serde_json::from_str(SIGNED).unwrap();
        let body = v["vectors"][0]["body"].as_str().unwrap();
        let c: Command = serde_urlencoded::from_bytes(body.as_bytes()).unwrap();
        assert_eq!(c.command, "/webhook-collect");
        let e = command(&c, 7).unwrap();
        assert_eq!(e.id.0, "slack:command:398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c");
        assert_eq!(e.conversation.to_string(), "slack:G8PSS9T3V");
        assert_eq!(e.actor.name(), "roadrunner");
        assert_eq!((e.kind, e.addressed, e.at_ms), (ConversationKind::Group, true, 7));
        assert!(form_payload(body.as_bytes()).is_err(), "a command has no payload field");
    }
}
