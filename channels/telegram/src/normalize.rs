//! Telegram updates as Butler's `InboundEvent`s: who, where (chat, forum topic), whether it is
//! meant for Butler, the files it carries (photos, voice notes, audio, documents, videos, video
//! notes: `attachments`, see `media.rs`; the text is then the caption alone) and the text the
//! agent reads (plain descriptions of stickers, locations, polls and other content that is not
//! a file folded in).
//!
//! Policy for what is not a new message, documented in the README:
//! - `edited_message`: not answered again. The original was already answered; a second reply
//!   to an edit would double the conversation. The update is acknowledged and nothing is stored.
//! - service messages (joins, pins, topic changes, migrations), channel posts, reactions and
//!   other update kinds: acknowledged, nothing stored.
//!
//! This module is pure: it must never call Telegram or the ingress.

use butler_channel::{Actor, ConversationKind, ConversationRef, EventBody, EventId, Identity, InboundEvent};
mod media;

pub use media::attachment;
pub(crate) use media::known_size;

use teloxide::types::{
    CallbackQuery, Chat, MaybeInaccessibleMessage, MediaKind, Message, MessageEntity, MessageEntityKind, MessageKind,
    Update, UpdateKind, User,
};

/// The channel name in identities and conversations.
pub const CHANNEL: &str = "telegram";

/// Who the bot is (from getMe): decides mentions, replies to Butler and `/command@name`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BotIdentity {
    pub id: u64,
    pub username: String,
}

/// The stable event id of an update: a redelivery carries the same id and the inbox drops it.
pub fn event_id(update_id: u32) -> EventId {
    EventId(format!("{CHANNEL}:update:{update_id}"))
}

/// The event an update stands for, or `None` for updates Butler does not act on.
pub fn event(update: &Update, me: &BotIdentity) -> Option<InboundEvent> {
    match &update.kind {
        UpdateKind::Message(m) => message(update.id.0, m, me),
        UpdateKind::CallbackQuery(q) => click(update.id.0, q),
        _ => None,
    }
}

/// An update teloxide could not read (`UpdateKind::Error`, holding the update as Telegram sent
/// it), read again after repairing what is known to differ between Telegram's own documented
/// examples and the SDK's types: a user object without `is_bot` (it is a person, so `false`).
/// `None` when it still cannot be read; the caller logs and counts it.
pub fn repair(raw: &serde_json::Value) -> Option<Update> {
    fn fill(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(map) => {
                // A User has `id` and `first_name`; a Chat with `first_name` also has `type`.
                let user = map.contains_key("id") && map.contains_key("first_name") && !map.contains_key("type");
                if user && !map.contains_key("is_bot") {
                    map.insert("is_bot".into(), serde_json::Value::Bool(false));
                }
                map.values_mut().for_each(fill);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(fill),
            _ => {}
        }
    }
    let mut fixed = raw.clone();
    fill(&mut fixed);
    // From text, as from the wire: teloxide's Update does not deserialize from a `Value`.
    let update: Update = serde_json::from_str(&fixed.to_string()).ok()?;
    (!matches!(update.kind, UpdateKind::Error(_))).then_some(update)
}

/// Logs (at warn, with its id) and counts an update that could not be read even after
/// [`repair`]; it is acknowledged, since a redelivery would fail the same way.
pub fn unreadable(update_id: u32) {
    tracing::warn!(update = update_id, "a Telegram update could not be read; acknowledged and skipped");
    butler_channel::count_unreadable(CHANNEL);
}

/// The conversation of a chat: `telegram:<chat id>`, plus `/<thread>` inside a forum topic.
pub fn conversation(chat: &Chat, m: Option<&Message>) -> ConversationRef {
    let thread = m.filter(|m| m.is_topic_message).and_then(|m| m.thread_id).map(|t| t.0 .0.to_string());
    ConversationRef::new(CHANNEL, chat.id.0.to_string()).with_thread(thread)
}

fn kind(chat: &Chat) -> Option<ConversationKind> {
    if chat.is_private() {
        Some(ConversationKind::Direct)
    } else if chat.is_group() || chat.is_supergroup() {
        Some(ConversationKind::Group)
    } else {
        None
    }
}

fn actor(user: &User) -> Actor {
    let name = user.full_name();
    Actor {
        identity: Identity::new(CHANNEL, user.id.0.to_string()),
        display_name: Some(if name.trim().is_empty() { user.username.clone().unwrap_or_default() } else { name }),
        is_bot: user.is_bot,
    }
}

fn message(update_id: u32, m: &Message, me: &BotIdentity) -> Option<InboundEvent> {
    let from = m.from.as_ref()?;
    let kind = kind(&m.chat)?;
    let mut text = body(m)?;
    let command_for_me = command(&mut text, me);
    let replies_to_me = m.reply_to_message().and_then(|r| r.from.as_ref()).is_some_and(|u| u.id.0 == me.id);
    let addressed = kind == ConversationKind::Direct || command_for_me || replies_to_me || mentions(m, me);
    Some(InboundEvent {
        id: event_id(update_id),
        actor: actor(from),
        conversation: conversation(&m.chat, Some(m)),
        kind,
        addressed,
        reply_to: m.reply_to_message().map(|r| r.id.0.to_string()),
        message_id: Some(m.id.0.to_string()),
        body: EventBody::Message { text },
        at_ms: m.date.timestamp_millis(),
        attachments: attachments(m),
    })
}

/// The files of a message (at most one on Telegram: an album arrives as one message per item).
pub fn attachments(m: &Message) -> Vec<butler_channel::Attachment> {
    match &m.kind {
        MessageKind::Common(common) => attachment(&common.media_kind).into_iter().collect(),
        _ => Vec::new(),
    }
}

fn click(update_id: u32, q: &CallbackQuery) -> Option<InboundEvent> {
    let action = q.data.clone()?;
    let on = q.message.as_ref()?;
    let chat = on.chat();
    let regular = match on {
        MaybeInaccessibleMessage::Regular(m) => Some(&**m),
        MaybeInaccessibleMessage::Inaccessible(_) => None,
    };
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    Some(InboundEvent {
        id: event_id(update_id),
        actor: actor(&q.from),
        conversation: conversation(chat, regular),
        kind: kind(chat)?,
        addressed: true,
        reply_to: None,
        message_id: None,
        body: EventBody::Action { action, message: Some(on.id().0.to_string()), interaction: Some(q.id.0.clone()) },
        at_ms: now_ms,
        attachments: Vec::new(),
    })
}

/// `/cmd@me args` becomes `/cmd args`; true when the text is a command for Butler (`/cmd` or
/// `/cmd@me`, not `/cmd@otherbot`).
fn command(text: &mut String, me: &BotIdentity) -> bool {
    let Some(rest) = text.strip_prefix('/') else { return false };
    let word_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let word = &rest[..word_end];
    let (name, target) = match word.split_once('@') {
        Some((name, target)) => (name, Some(target)),
        None => (word, None),
    };
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return false;
    }
    match target {
        None => true,
        Some(t) if t.eq_ignore_ascii_case(&me.username) => {
            *text = format!("/{name}{}", &rest[word_end..]);
            true
        }
        Some(_) => false,
    }
}

/// An `@username` mention of the bot (or a text mention of its user) in the text or caption.
fn mentions(m: &Message, me: &BotIdentity) -> bool {
    let Some((text, entities)) = m.text().zip(m.entities()).or_else(|| m.caption().zip(m.caption_entities())) else {
        return false;
    };
    entities.iter().any(|e| match &e.kind {
        MessageEntityKind::Mention => {
            entity_text(text, e).is_some_and(|t| t.trim_start_matches('@').eq_ignore_ascii_case(&me.username))
        }
        MessageEntityKind::TextMention { user } => user.id.0 == me.id,
        _ => false,
    })
}

/// The part of `text` entity `e` covers (its offset and length count UTF-16 units), or `None`
/// when they do not fall on characters of the text. Not teloxide's `MessageEntityRef`: it
/// panics on such an entity (found by fuzzing, fuzz/regressions/telegram_update/).
fn entity_text<'t>(text: &'t str, e: &MessageEntity) -> Option<&'t str> {
    let end = e.offset.checked_add(e.length)?;
    let (mut from, mut units) = (None, 0usize);
    for (at, c) in text.char_indices().chain([(text.len(), '\0')]) {
        if units == e.offset {
            from = Some(at);
        }
        if units == end {
            return text.get(from?..at);
        }
        units += c.len_utf16();
    }
    None
}

/// The text the agent reads: the message text; for a file (see [`attachments`]) its caption
/// alone (empty without one); for other content a description followed by the caption. `None`
/// for service messages and anything else without content.
pub fn body(m: &Message) -> Option<String> {
    let MessageKind::Common(common) = &m.kind else {
        return match &m.kind {
            MessageKind::Dice(d) => Some(format!("[dice {} rolled {}]", emoji(&d.dice.emoji), d.dice.value)),
            // Content teloxide could not parse (a newer Bot API feature): say so, do not drop it.
            MessageKind::Empty {} => Some("[a message Butler cannot read]".into()),
            _ => None,
        };
    };
    let caption = m.caption().filter(|c| !c.trim().is_empty());
    if attachment(&common.media_kind).is_some() {
        return Some(caption.unwrap_or_default().to_string());
    }
    let described = match &common.media_kind {
        MediaKind::Text(t) => return Some(t.text.clone()),
        MediaKind::Sticker(s) => {
            let st = &s.sticker;
            let what = if st.is_animated() {
                "animated sticker"
            } else if st.is_video() {
                "video sticker"
            } else {
                "sticker"
            };
            let emoji = st.emoji.as_deref().map(|e| format!(" {e}")).unwrap_or_default();
            let set = st.set_name.as_deref().map(|n| format!(" from the set \"{n}\"")).unwrap_or_default();
            format!("[{what}{emoji}{set}]")
        }
        MediaKind::Location(l) => {
            format!("[location {:.5}, {:.5}]", l.location.latitude, l.location.longitude)
        }
        MediaKind::Venue(v) => format!("[venue \"{}\", {}]", v.venue.title, v.venue.address),
        MediaKind::Contact(c) => {
            let c = &c.contact;
            let name = [Some(c.first_name.as_str()), c.last_name.as_deref()].into_iter().flatten();
            format!("[contact {}, {}]", name.collect::<Vec<_>>().join(" "), c.phone_number)
        }
        MediaKind::Poll(p) => {
            let options: Vec<&str> = p.poll.options.iter().map(|o| o.text.as_str()).collect();
            format!("[poll \"{}\": {}]", p.poll.question, options.join(" / "))
        }
        MediaKind::Story(_) => "[a forwarded story]".into(),
        MediaKind::Migration(_) => return None,
        _ => "[a message Butler cannot read]".into(),
    };
    Some(match caption {
        Some(caption) => format!("{described}\n{caption}"),
        None => described,
    })
}

fn emoji(e: &teloxide::types::DiceEmoji) -> String {
    serde_json::to_value(e).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_else(|| "🎲".into())
}

#[cfg(test)]
mod tests;
