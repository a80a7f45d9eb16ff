//! signal-cli envelopes (the `data` of a `receive` Server-Sent Event: `{"envelope": {...},
//! "account": "+1555…"}`) as Butler's `InboundEvent`s.
//!
//! - People are `signal:<number>` (their uuid when they hide their number). A direct message is
//!   the conversation `signal:<number>`; a group message `signal:group:<id>`, the group id in
//!   URL-safe base64 (standard base64 has `/`, which would read as a thread).
//! - Message ids are `<timestamp>:<author>` (Signal names a message by its author and sent
//!   timestamp); the event id `signal:msg:<author>:<timestamp>`, so a redelivered envelope is
//!   the same event.
//! - A group message is addressed to Butler when it mentions the bot, quotes one of the bot's
//!   messages, or is a command. Mentions (U+FFFC in the text) become `@name`; the bot's own
//!   mention is removed.
//! - A 👍 or 👎 reaction becomes an `Action` (`#yes` / `#no`) on the reacted message; other
//!   reactions, removals, receipts, typing, sync messages, the bot's own messages and messages
//!   for another account are not events.
//! - Attachments carry the attachment id and, in `url`, whose they are (`recipient:<number>` or
//!   `group:<id>`), which signal-cli's `getAttachment` needs.
//!
//! This module is pure: it must never call signal-cli or the ingress.

use base64::Engine;
use butler_channel::{
    reaction_answer, Actor, Attachment, ConversationKind, ConversationRef, EventBody, EventId, Identity, InboundEvent,
    MediaKind,
};
use serde_json::Value;

/// The channel name in identities and conversations.
pub const CHANNEL: &str = "signal";
/// The prefix of a group conversation's id.
pub const GROUP: &str = "group:";

/// Who the bot is: its number (the configured account) and, once known, its uuid.
#[derive(Clone, Debug, Default)]
pub struct Me {
    pub number: String,
    pub uuid: Option<String>,
}

impl Me {
    fn is(&self, number: Option<&str>, uuid: Option<&str>) -> bool {
        number.is_some_and(|n| n == self.number) || (uuid.is_some() && uuid == self.uuid.as_deref())
    }

    /// The author part of a message id: the bot is always its number.
    fn author(&self, number: Option<&str>, uuid: Option<&str>) -> Option<String> {
        if self.is(number, uuid) {
            return Some(self.number.clone());
        }
        number.or(uuid).map(str::to_string)
    }
}

/// A standard base64 group id as a conversation id, and back.
pub fn group_conversation(group_id: &str) -> String {
    format!("{GROUP}{}", group_id.replace('+', "-").replace('/', "_"))
}

/// The group id signal-cli takes, from a conversation id (`None` for a direct conversation).
pub fn group_id(conversation_id: &str) -> Option<String> {
    conversation_id.strip_prefix(GROUP).map(|g| g.replace('-', "+").replace('_', "/"))
}

/// Whether `id` is a well-formed Signal conversation id: a number, a uuid or a group.
pub fn valid_conversation(id: &str) -> bool {
    if let Some(g) = group_id(id) {
        return base64::engine::general_purpose::STANDARD.decode(g).is_ok_and(|b| !b.is_empty());
    }
    let number =
        id.strip_prefix('+').is_some_and(|d| (6..=15).contains(&d.len()) && d.bytes().all(|b| b.is_ascii_digit()));
    let uuid = id.len() == 36 && id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-');
    number || uuid
}

fn text_of(v: &Value) -> Option<&str> {
    v.as_str().filter(|s| !s.is_empty())
}

/// The event an SSE `receive` item stands for, or why it is none (for the log).
pub fn event(item: &Value, me: &Me) -> Result<InboundEvent, &'static str> {
    if text_of(&item["account"]).is_some_and(|a| a != me.number) {
        return Err("for another account");
    }
    let env = if item["envelope"].is_object() { &item["envelope"] } else { item };
    let number = text_of(&env["sourceNumber"]).or_else(|| text_of(&env["source"]).filter(|s| s.starts_with('+')));
    let uuid = text_of(&env["sourceUuid"]);
    // The sender names a direct conversation: one with the thread separator `/` would read back
    // from the inbox as another (fuzz/regressions/signal_envelope/).
    let Some(source) = number.or(uuid).filter(|s| !s.contains('/')) else { return Err("no sender") };
    if me.is(number, uuid) {
        return Err("the bot's own message");
    }
    let dm = &env["dataMessage"];
    if !dm.is_object() {
        return Err(match () {
            _ if env["receiptMessage"].is_object() => "receipt",
            _ if env["typingMessage"].is_object() => "typing",
            _ if env["syncMessage"].is_object() => "sync",
            _ => "not a message",
        });
    }
    let ts = dm["timestamp"].as_i64().or_else(|| env["timestamp"].as_i64()).ok_or("no timestamp")?;
    let (conversation, kind) = match text_of(&dm["groupInfo"]["groupId"]) {
        Some(g) => (group_conversation(g), ConversationKind::Group),
        None => (source.to_string(), ConversationKind::Direct),
    };
    let actor = Actor {
        identity: Identity::new(CHANNEL, source),
        display_name: text_of(&env["sourceName"]).map(str::to_string),
        is_bot: false,
    };
    let mut ev = InboundEvent {
        id: EventId(format!("{CHANNEL}:msg:{source}:{ts}")),
        actor,
        conversation: ConversationRef::new(CHANNEL, conversation),
        kind,
        addressed: kind == ConversationKind::Direct,
        reply_to: None,
        message_id: Some(format!("{ts}:{source}")),
        body: EventBody::Message { text: String::new() },
        at_ms: ts,
        attachments: Vec::new(),
    };
    let reaction = &dm["reaction"];
    if reaction.is_object() {
        if reaction["isRemove"].as_bool() == Some(true) {
            return Err("a reaction removed");
        }
        let answer = text_of(&reaction["emoji"]).and_then(reaction_answer).ok_or("a reaction")?;
        let target_author = me
            .author(text_of(&reaction["targetAuthorNumber"]), text_of(&reaction["targetAuthorUuid"]))
            .or_else(|| text_of(&reaction["targetAuthor"]).map(str::to_string))
            .ok_or("a reaction to nobody")?;
        let target = reaction["targetSentTimestamp"].as_i64().ok_or("a reaction to nothing")?;
        ev.id = EventId(format!("{CHANNEL}:react:{source}:{ts}"));
        ev.addressed = true;
        ev.body = EventBody::Action {
            action: answer.to_string(),
            message: Some(format!("{target}:{target_author}")),
            interaction: None,
        };
        return Ok(ev);
    }
    let (text, mentioned) = mentions(text_of(&dm["message"]).unwrap_or_default(), &dm["mentions"], me);
    let quote = &dm["quote"];
    let mut quotes_bot = false;
    if let Some(id) = quote["id"].as_i64() {
        let (n, u) = (text_of(&quote["authorNumber"]), text_of(&quote["authorUuid"]));
        quotes_bot = me.is(n, u);
        if let Some(author) = me.author(n, u).or_else(|| text_of(&quote["author"]).map(str::to_string)) {
            ev.reply_to = Some(format!("{id}:{author}"));
        }
    }
    let whose = match kind {
        ConversationKind::Group => ev.conversation.id.clone(),
        ConversationKind::Direct => format!("recipient:{source}"),
    };
    for a in dm["attachments"].as_array().into_iter().flatten() {
        let Some(id) = text_of(&a["id"]) else { continue };
        let mime = text_of(&a["contentType"]).map(str::to_string);
        let kind = match mime.as_deref().unwrap_or_default() {
            m if m.starts_with("image/") => MediaKind::Image,
            m if m.starts_with("audio/") => MediaKind::Voice,
            m if m.starts_with("video/") => MediaKind::Video,
            _ => MediaKind::Document,
        };
        let mut file = Attachment::new(kind, id);
        file.mime = mime;
        file.size = a["size"].as_u64();
        file.name = text_of(&a["filename"]).map(str::to_string);
        file.url = Some(whose.clone());
        ev.attachments.push(file);
    }
    if text.trim().is_empty() && ev.attachments.is_empty() {
        return Err("no text and no file");
    }
    ev.addressed = ev.addressed || mentioned || quotes_bot || text.trim_start().starts_with('/');
    ev.body = EventBody::Message { text };
    Ok(ev)
}

/// The text with each mention (U+FFFC at `start`, `length` UTF-16 units) as `@name`, and the
/// bot's own mentions removed; whether the bot was mentioned.
fn mentions(text: &str, list: &Value, me: &Me) -> (String, bool) {
    let mut found: Vec<(usize, usize, Option<String>)> = Vec::new();
    let mut mentioned = false;
    for m in list.as_array().into_iter().flatten() {
        let (Some(start), Some(len)) = (m["start"].as_u64(), m["length"].as_u64()) else { continue };
        let (n, u) = (text_of(&m["number"]), text_of(&m["uuid"]));
        let bot = me.is(n, u);
        mentioned |= bot;
        let name = (!bot).then(|| text_of(&m["name"]).or(n).or(u).unwrap_or("someone").to_string());
        found.push((start as usize, len as usize, name));
    }
    if found.is_empty() {
        return (text.to_string(), mentioned);
    }
    found.sort_by_key(|f| std::cmp::Reverse(f.0));
    let units: Vec<u16> = text.encode_utf16().collect();
    let mut out = units.clone();
    for (start, len, name) in found {
        if start + len > out.len() || start + len > units.len() {
            continue;
        }
        let with: Vec<u16> = name.map(|n| format!("@{n}")).unwrap_or_default().encode_utf16().collect();
        out.splice(start..start + len, with);
    }
    let text = String::from_utf16_lossy(&out);
    (text.trim().replace("  ", " "), mentioned)
}

#[cfg(test)]
#[path = "normalize_tests.rs"]
mod tests;
