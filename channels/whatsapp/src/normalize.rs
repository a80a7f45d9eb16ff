//! WhatsApp webhook deliveries as Butler's `InboundEvent`s. One delivery (`object:
//! whatsapp_business_account`) may carry several changes, each with messages and statuses.
//!
//! - Every message is a direct conversation `whatsapp:<wa_id>` from `whatsapp:<wa_id>`
//!   (the Cloud API has no groups), always addressed to Butler, with the id
//!   `whatsapp:msg:<wamid>`: a redelivery is the same event.
//! - text -> its body; image, audio, voice notes, video, documents, stickers -> attachments
//!   (the caption is the text); location and contacts -> a plain description; interactive
//!   button and list replies (and template quick-reply buttons) -> `EventBody::Action` with the
//!   button's id; `context.id` -> `reply_to`; a 👍 / 👎 reaction -> `Action` `#yes` / `#no` on the
//!   reacted message (an answer to a request); other reactions, and messages of a type Butler does not
//!   know, are not events.
//! - Statuses (sent, delivered, read, failed) are returned apart: they never start a turn.
//!
//! This module is pure: it must never call WhatsApp or the ingress.

use butler_channel::{
    reaction_answer, Actor, Attachment, ConversationKind, ConversationRef, EventBody, EventId, Identity, InboundEvent,
    MediaKind,
};
use serde_json::Value;

/// The channel name in identities and conversations.
pub const CHANNEL: &str = "whatsapp";

/// A status callback: what happened to a message Butler sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Status {
    /// The sent message's id (`wamid.…`).
    pub id: String,
    /// `sent`, `delivered`, `read` or `failed`.
    pub status: String,
    pub recipient: String,
    /// For `failed`: the error codes Meta gave.
    pub errors: Vec<i64>,
}

/// What one webhook delivery holds.
#[derive(Debug, Default)]
pub struct Delivery {
    pub events: Vec<InboundEvent>,
    pub statuses: Vec<Status>,
    /// Messages that are no event (reactions, unsupported types), by type, for the log.
    pub skipped: Vec<String>,
}

/// Reads a delivery for `phone_number_id`; changes for another number are left out.
pub fn delivery(body: &Value, phone_number_id: &str) -> Delivery {
    let mut out = Delivery::default();
    let changes =
        body["entry"].as_array().into_iter().flatten().flat_map(|e| e["changes"].as_array().into_iter().flatten());
    for change in changes {
        let value = &change["value"];
        let to = value["metadata"]["phone_number_id"].as_str().unwrap_or_default();
        if change["field"].as_str() != Some("messages") || (!to.is_empty() && to != phone_number_id) {
            continue;
        }
        for m in value["messages"].as_array().into_iter().flatten() {
            match message(m, value) {
                Some(ev) => out.events.push(ev),
                None => out.skipped.push(m["type"].as_str().unwrap_or("unknown").to_string()),
            }
        }
        for s in value["statuses"].as_array().into_iter().flatten() {
            out.statuses.push(Status {
                id: s["id"].as_str().unwrap_or_default().to_string(),
                status: s["status"].as_str().unwrap_or_default().to_string(),
                recipient: s["recipient_id"].as_str().unwrap_or_default().to_string(),
                errors: s["errors"].as_array().into_iter().flatten().filter_map(|e| e["code"].as_i64()).collect(),
            });
        }
    }
    out
}

fn str_of(v: &Value) -> Option<String> {
    v.as_str().filter(|s| !s.is_empty()).map(str::to_string)
}

/// One message object as an event, or `None` when it is not one.
pub fn message(m: &Value, value: &Value) -> Option<InboundEvent> {
    // The sender names the conversation (`whatsapp:<wa_id>`): one with the thread separator `/`
    // would read back from the inbox as another (fuzz/regressions/whatsapp_notification/).
    let from = str_of(&m["from"]).filter(|f| !f.contains('/'))?;
    let id = str_of(&m["id"])?;
    let kind = m["type"].as_str().unwrap_or_default();
    let mut attachments = Vec::new();
    let body = match kind {
        "text" => EventBody::Message { text: m["text"]["body"].as_str().unwrap_or_default().to_string() },
        "interactive" => {
            let i = &m["interactive"];
            let reply = if i["type"] == "list_reply" { &i["list_reply"] } else { &i["button_reply"] };
            action(str_of(&reply["id"])?, m)
        }
        "button" => action(str_of(&m["button"]["payload"]).or_else(|| str_of(&m["button"]["text"]))?, m),
        "image" | "audio" | "video" | "document" | "sticker" => {
            let media = &m[kind];
            attachments.push(attachment(kind, media)?);
            EventBody::Message { text: media["caption"].as_str().unwrap_or_default().to_string() }
        }
        "location" => EventBody::Message { text: location(&m["location"]) },
        "contacts" => EventBody::Message { text: contacts(&m["contacts"]) },
        // 👍 / 👎 on a request answer it (Butler finds the request sent as that message);
        // other reactions, and removed ones (an empty emoji), are not events.
        "reaction" => EventBody::Action {
            action: reaction_answer(m["reaction"]["emoji"].as_str().unwrap_or_default())?.to_string(),
            message: Some(str_of(&m["reaction"]["message_id"])?),
            interaction: None,
        },
        _ => return None,
    };
    let name = value["contacts"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["wa_id"].as_str() == Some(from.as_str()))
        .and_then(|c| str_of(&c["profile"]["name"]));
    let at_ms = m["timestamp"].as_str().and_then(|t| t.parse::<i64>().ok()).and_then(|s| s.checked_mul(1000));
    let reply_to = match body {
        EventBody::Action { .. } => None,
        _ => str_of(&m["context"]["id"]),
    };
    Some(InboundEvent {
        id: EventId(format!("{CHANNEL}:msg:{id}")),
        actor: Actor { identity: Identity::new(CHANNEL, from.clone()), display_name: name, is_bot: false },
        conversation: ConversationRef::new(CHANNEL, from),
        kind: ConversationKind::Direct,
        addressed: true,
        reply_to,
        message_id: Some(id),
        body,
        at_ms: at_ms.unwrap_or_else(butler_channel::now_ms),
        attachments,
    })
}

/// A button or list choice: the id Butler gave the button, on the message it sits on.
fn action(action: String, m: &Value) -> EventBody {
    EventBody::Action { action, message: str_of(&m["context"]["id"]), interaction: None }
}

fn attachment(kind: &str, media: &Value) -> Option<Attachment> {
    let media_kind = match kind {
        "image" | "sticker" => MediaKind::Image,
        "audio" if media["voice"].as_bool() == Some(true) => MediaKind::Voice,
        // Voice notes arrive as OGG/Opus audio; older payloads carry no `voice` flag.
        "audio" if media["mime_type"].as_str().is_some_and(|t| t.starts_with("audio/ogg")) => MediaKind::Voice,
        "audio" => MediaKind::Audio,
        "video" => MediaKind::Video,
        _ => MediaKind::Document,
    };
    let mut a = Attachment::new(media_kind, str_of(&media["id"])?);
    a.mime = str_of(&media["mime_type"]).map(|t| t.split(';').next().unwrap_or_default().trim().to_string());
    a.name = str_of(&media["filename"]);
    a.size = media["file_size"].as_u64();
    Some(a)
}

fn location(l: &Value) -> String {
    let (lat, lon) = (l["latitude"].as_f64().unwrap_or_default(), l["longitude"].as_f64().unwrap_or_default());
    let mut text = format!("[shared a location: {lat}, {lon}");
    for key in ["name", "address"] {
        if let Some(s) = str_of(&l[key]) {
            text.push_str(&format!("; {s}"));
        }
    }
    text.push(']');
    text
}

fn contacts(list: &Value) -> String {
    let cards: Vec<String> = list
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let name = str_of(&c["name"]["formatted_name"]).unwrap_or_else(|| "someone".into());
            let phones: Vec<String> =
                c["phones"].as_array().into_iter().flatten().filter_map(|p| str_of(&p["phone"])).collect();
            if phones.is_empty() {
                name
            } else {
                format!("{name} ({})", phones.join(", "))
            }
        })
        .collect();
    format!("[shared contacts: {}]", cards.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn wrap(message: Value) -> Value {
        json!({"object": "whatsapp_business_account", "entry": [{"id": "WABA", "changes": [{"field": "messages",
            "value": {"messaging_product": "whatsapp",
                "metadata": {"display_phone_number": "15550001111", "phone_number_id": "PN"},
                "contacts": [{"profile": {"name": "Kerry"}, "wa_id": "16505551234"}],
                "messages": [message]}}]}]})
    }

    #[test]
    fn messages_become_events() {
        let base = json!({"from": "16505551234", "id": "wamid.A", "timestamp": "1700000000"});
        let with = |extra: Value| {
            let mut m = base.clone();
            m.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            m
        };
        type Want = (&'static str, Option<&'static str>, usize, Option<&'static str>);
        let cases: Vec<(Value, Option<Want>)> = vec![
            (with(json!({"type": "text", "text": {"body": "hi"}})), Some(("hi", None, 0, None))),
            (
                with(json!({"type": "text", "text": {"body": "re"}, "context": {"from": "1", "id": "wamid.Q"}})),
                Some(("re", None, 0, Some("wamid.Q"))),
            ),
            (
                with(json!({"type": "interactive", "context": {"from": "1", "id": "wamid.B"},
                    "interactive": {"type": "button_reply", "button_reply": {"id": "ap:7:once", "title": "Approve"}}})),
                Some(("", Some("ap:7:once"), 0, None)),
            ),
            (
                with(json!({"type": "interactive",
                    "interactive": {"type": "list_reply", "list_reply": {"id": "q:1:2", "title": "Two"}}})),
                Some(("", Some("q:1:2"), 0, None)),
            ),
            (
                with(json!({"type": "image", "image": {"id": "M1", "mime_type": "image/jpeg", "caption": "look"}})),
                Some(("look", None, 1, None)),
            ),
            (
                with(
                    json!({"type": "audio", "audio": {"id": "M2", "mime_type": "audio/ogg; codecs=opus", "voice": true}}),
                ),
                Some(("", None, 1, None)),
            ),
            (
                with(json!({"type": "location", "location": {"latitude": 1.5, "longitude": 2.0, "name": "Home"}})),
                Some(("[shared a location: 1.5, 2; Home]", None, 0, None)),
            ),
            (
                with(json!({"type": "contacts", "contacts": [{"name": {"formatted_name": "Ann"},
                    "phones": [{"phone": "+1 555", "type": "CELL"}]}]})),
                Some(("[shared contacts: Ann (+1 555)]", None, 0, None)),
            ),
            (
                with(json!({"type": "reaction", "reaction": {"message_id": "wamid.X", "emoji": "👍🏽"}})),
                Some(("", Some("#yes"), 0, None)),
            ),
            (with(json!({"type": "reaction", "reaction": {"message_id": "wamid.X", "emoji": "😂"}})), None),
            (with(json!({"type": "reaction", "reaction": {"message_id": "wamid.X", "emoji": ""}})), None),
            (with(json!({"type": "unsupported"})), None),
        ];
        for (m, want) in cases {
            let d = delivery(&wrap(m.clone()), "PN");
            let got = d.events.first().map(|e| {
                let action = match &e.body {
                    EventBody::Action { action, .. } => Some(action.as_str()),
                    _ => None,
                };
                (
                    e.text().unwrap_or_default().to_string(),
                    action.map(str::to_string),
                    e.attachments.len(),
                    e.reply_to.clone(),
                )
            });
            let want = want.map(|(t, a, n, r)| (t.to_string(), a.map(str::to_string), n, r.map(str::to_string)));
            assert_eq!(got, want, "{m}");
        }
        let d = delivery(&wrap(with(json!({"type": "text", "text": {"body": "hi"}}))), "PN");
        let e = &d.events[0];
        assert_eq!(
            (e.id.0.as_str(), e.conversation.to_string()),
            ("whatsapp:msg:wamid.A", "whatsapp:16505551234".into())
        );
        assert_eq!((e.actor.name(), e.at_ms, e.addressed), ("Kerry", 1_700_000_000_000, true));
        assert!(delivery(&wrap(base.clone()), "OTHER").events.is_empty(), "another number's change");
        let voice = delivery(
            &wrap(with(json!({"type": "audio", "audio": {"id": "M2", "mime_type": "audio/ogg; codecs=opus"}}))),
            "PN",
        );
        assert_eq!(
            (voice.events[0].attachments[0].kind, voice.events[0].attachments[0].mime.as_deref()),
            (MediaKind::Voice, Some("audio/ogg"))
        );
    }

    #[test]
    fn statuses_are_not_events() {
        let body = json!({"object": "whatsapp_business_account", "entry": [{"id": "W", "changes": [{"field": "messages",
            "value": {"messaging_product": "whatsapp", "metadata": {"phone_number_id": "PN"},
                "statuses": [{"id": "wamid.S", "status": "failed", "timestamp": "1", "recipient_id": "165",
                    "errors": [{"code": 131047, "title": "Re-engagement message"}]}]}}]}]});
        let d = delivery(&body, "PN");
        assert!(d.events.is_empty());
        assert_eq!(
            d.statuses,
            vec![Status {
                id: "wamid.S".into(),
                status: "failed".into(),
                recipient: "165".into(),
                errors: vec![131047]
            }]
        );
    }
}
