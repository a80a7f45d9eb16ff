//! Matrix room events (as JSON, after the SDK decrypted them) as Butler's `InboundEvent`s.
//!
//! - People are `matrix:<user id>` (`matrix:@alice:example.org`); a room is the conversation
//!   `matrix:<room id>` (`matrix:!abc:example.org`), a thread in it `…/<thread root event id>`.
//!   The event id `matrix:<event id>` is the server's own, so a redelivered event is one event.
//! - A room of two (Butler and one person) is direct; a message in a bigger room is addressed to
//!   Butler when it mentions Butler (`m.mentions`, which clients also fill when replying to
//!   Butler, or Butler's user id or display name in the text), quotes Butler's message (an
//!   older client's reply fallback) or is a command.
//! - ✅ 👍 (yes), 🔁 (always), ❌ 👎 (no) reactions become an `Action` on the reacted event;
//!   other reactions, edits, notices (bots), Butler's own events and state events are not events.
//! - Images, files, audio, voice notes and videos carry their media source (plain `url` or the
//!   encrypted `file`) as JSON in `file_id`, which [`crate::MatrixFiles`] fetches.
//!
//! This module is pure: it must never call the homeserver or the ingress.

use butler_channel::{
    reaction_answer, Actor, Attachment, ConversationKind, ConversationRef, EventBody, EventId, Identity, InboundEvent,
    MediaKind,
};
use serde_json::{json, Value};

/// The channel name in identities and conversations.
pub const CHANNEL: &str = "matrix";

/// Who Butler is in the room.
#[derive(Clone, Debug, Default)]
pub struct Me {
    pub user_id: String,
    pub display_name: Option<String>,
}

/// The room an event arrived in.
#[derive(Clone, Debug)]
pub struct RoomInfo {
    pub id: String,
    /// Butler and one person.
    pub direct: bool,
}

/// Whether `id` is a Matrix room id (`!opaque:server`).
pub fn valid_room(id: &str) -> bool {
    id.strip_prefix('!')
        .and_then(|rest| rest.split_once(':'))
        .is_some_and(|(local, server)| !local.is_empty() && valid_server(server) && !id.contains('/'))
}

/// Whether `id` is a Matrix user id (`@local:server`).
pub fn valid_user(id: &str) -> bool {
    id.strip_prefix('@').and_then(|rest| rest.split_once(':')).is_some_and(|(local, server)| {
        !local.is_empty()
            && local.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._=-/+".contains(c))
            && valid_server(server)
    })
}

fn valid_server(server: &str) -> bool {
    !server.is_empty() && server.chars().all(|c| c.is_ascii_alphanumeric() || ".-:[]".contains(c))
}

/// A reply's text without the quote clients put before it (`> <@bob:x> …` lines, then a blank
/// line).
pub fn strip_reply_fallback(body: &str) -> &str {
    if !body.starts_with("> ") {
        return body;
    }
    let mut rest = body;
    while let Some(line_end) = rest.find('\n') {
        let line = &rest[..line_end];
        if !line.starts_with('>') {
            break;
        }
        rest = &rest[line_end + 1..];
    }
    if rest.starts_with('>') {
        return body;
    }
    rest.strip_prefix('\n').unwrap_or(rest)
}

fn media_kind(content: &Value, msgtype: &str) -> Option<MediaKind> {
    Some(match msgtype {
        "m.image" => MediaKind::Image,
        "m.video" => MediaKind::Video,
        "m.file" => MediaKind::Document,
        "m.audio" if content.get("org.matrix.msc3245.voice").is_some() || content.get("m.voice").is_some() => {
            MediaKind::Voice
        }
        "m.audio" => MediaKind::Audio,
        _ => return None,
    })
}

/// The attachment of a media message, and its caption (the body when a file name is given too).
fn attachment(content: &Value, kind: MediaKind) -> Option<(Attachment, Option<String>)> {
    let source = match (content.get("file"), content["url"].as_str()) {
        (Some(file), _) if file.is_object() => json!({ "file": file }),
        (_, Some(url)) if url.starts_with("mxc://") => json!({ "url": url }),
        _ => return None,
    };
    let body = content["body"].as_str().unwrap_or_default();
    let filename = content["filename"].as_str().filter(|f| !f.is_empty());
    let caption = filename.filter(|f| *f != body && !body.is_empty()).map(|_| body.to_string());
    let info = &content["info"];
    let mut a = Attachment::new(kind, source.to_string());
    a.mime = info["mimetype"].as_str().map(str::to_string);
    a.size = info["size"].as_u64();
    a.name = filename.or(Some(body).filter(|b| !b.is_empty())).map(str::to_string);
    a.duration_secs = info["duration"].as_u64().map(|ms| ms.div_ceil(1000) as u32);
    Some((a, caption))
}

/// Whether the message names Butler: `m.mentions`, or its id or display name in the text.
fn mentions_me(content: &Value, text: &str, me: &Me) -> bool {
    let listed = content["m.mentions"]["user_ids"]
        .as_array()
        .is_some_and(|ids| ids.iter().any(|id| id.as_str() == Some(me.user_id.as_str())));
    let named = me.display_name.as_deref().filter(|n| n.chars().count() >= 2).is_some_and(|n| {
        let lower = text.to_lowercase();
        lower.contains(&n.to_lowercase())
    });
    listed || text.contains(&me.user_id) || named
}

/// One room event as an `InboundEvent`, or why it is not one.
pub fn event(raw: &Value, room: &RoomInfo, me: &Me) -> Result<InboundEvent, &'static str> {
    let sender = raw["sender"].as_str().ok_or("no sender")?;
    if sender == me.user_id {
        return Err("Butler's own event");
    }
    if raw.get("state_key").is_some() {
        return Err("a state event");
    }
    let event_id = raw["event_id"].as_str().filter(|e| !e.is_empty()).ok_or("no event id")?;
    let content = &raw["content"];
    let relates = &content["m.relates_to"];
    let thread = (relates["rel_type"] == "m.thread").then(|| relates["event_id"].as_str()).flatten();
    let conversation = ConversationRef::new(CHANNEL, room.id.clone()).with_thread(thread.map(str::to_string));
    let kind = if room.direct { ConversationKind::Direct } else { ConversationKind::Group };
    let mut actor = Actor::new(Identity::new(CHANNEL, sender));
    let at_ms = raw["origin_server_ts"].as_i64().unwrap_or_else(butler_channel::now_ms);
    let base = |body: EventBody, actor: Actor| InboundEvent {
        id: EventId(format!("{CHANNEL}:{event_id}")),
        actor,
        conversation: conversation.clone(),
        kind,
        addressed: true,
        reply_to: None,
        message_id: Some(event_id.to_string()),
        body,
        at_ms,
        attachments: Vec::new(),
    };
    match raw["type"].as_str() {
        Some("m.reaction") => {
            if relates["rel_type"] != "m.annotation" {
                return Err("a reaction without its target");
            }
            let target = relates["event_id"].as_str().ok_or("a reaction without its target")?;
            let action = reaction_answer(relates["key"].as_str().unwrap_or_default()).ok_or("another reaction")?;
            let body = EventBody::Action { action: action.into(), message: Some(target.into()), interaction: None };
            let mut event = base(body, actor);
            event.message_id = None;
            Ok(event)
        }
        Some("m.room.message") => {
            if relates["rel_type"] == "m.replace" {
                return Err("an edit");
            }
            let msgtype = content["msgtype"].as_str().ok_or("no msgtype")?;
            if msgtype == "m.notice" {
                actor.is_bot = true;
            }
            let body = content["body"].as_str().unwrap_or_default();
            let (text, attachments) = match msgtype {
                "m.text" | "m.notice" => (strip_reply_fallback(body).to_string(), Vec::new()),
                "m.emote" => (format!("* {}", strip_reply_fallback(body)), Vec::new()),
                "m.location" => {
                    let geo = content["geo_uri"].as_str().unwrap_or_default();
                    (format!("[location: {body} {geo}]").replace("  ", " "), Vec::new())
                }
                other => {
                    let kind = media_kind(content, other).ok_or("an unknown msgtype")?;
                    let (a, caption) = attachment(content, kind).ok_or("media without a source")?;
                    (caption.unwrap_or_default(), vec![a])
                }
            };
            if text.trim().is_empty() && attachments.is_empty() {
                return Err("an empty message");
            }
            actor.display_name = None;
            // A reply to Butler: clients name the replied-to sender in `m.mentions`; older ones
            // only in the quoted fallback (`> <@butler:…> …`).
            let quotes_me = body.starts_with(&format!("> <{}>", me.user_id));
            let addressed =
                room.direct || quotes_me || text.trim_start().starts_with('/') || mentions_me(content, &text, me);
            let mut event = base(EventBody::Message { text }, actor);
            event.addressed = addressed;
            event.attachments = attachments;
            let in_reply = relates["m.in_reply_to"]["event_id"].as_str();
            // In a thread, the client's reply fallback points at the latest thread event: only a
            // real reply (`is_falling_back` not true) names a message.
            let falling_back = relates["is_falling_back"].as_bool() == Some(true);
            event.reply_to = in_reply.filter(|_| !falling_back).map(str::to_string);
            Ok(event)
        }
        Some("m.room.encrypted") => Err("a message Butler could not decrypt"),
        _ => Err("not a message"),
    }
}

#[cfg(test)]
#[path = "normalize_tests.rs"]
mod tests;
