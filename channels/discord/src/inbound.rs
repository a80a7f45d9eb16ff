//! Discord traffic to [`InboundEvent`]s: MESSAGE_CREATE (decoded with serenity's `Message`)
//! and button clicks (INTERACTION_CREATE or the HTTP interactions endpoint, decoded leniently
//! here since both carry the same JSON). Ids are stable and platform-derived, so a replayed
//! dispatch or a redelivered interaction is dropped by the inbox:
//! `discord:message:<message id>`, `discord:interaction:<interaction id>`.
//!
//! Conversations are `discord:<channel id>`; a thread is a channel on Discord, so a thread is a
//! conversation (and a session) of its own. DMs are `Direct` and always addressed; in a guild a
//! message is addressed when it mentions Butler, replies to Butler, or is in a thread Butler is
//! part of. A message's files are the event's attachments ([`crate::attach`]); its text stays
//! its content (and may be empty when it carries files). Nothing here talks to Discord or the
//! store.

use crate::state::{Me, Memory};
use crate::CHANNEL;
use butler_channel::{Actor, ConversationKind, ConversationRef, EventBody, EventId, Identity, InboundEvent};
use serde::Deserialize;
use serenity::model::channel::{Message, MessageType};

/// Discord's epoch (2015-01-01) in Unix milliseconds.
const DISCORD_EPOCH_MS: i64 = 1_420_070_400_000;

/// Channel types that are threads (announcement, public and private threads).
pub const THREAD_TYPES: [u64; 3] = [10, 11, 12];

/// What a gateway dispatch teaches about threads: `GUILD_CREATE` and `THREAD_LIST_SYNC` list
/// them, `THREAD_CREATE` and `THREAD_UPDATE` name one; other events teach nothing.
pub fn learn_threads(memory: &mut Memory, event: &str, d: &serde_json::Value) {
    match event {
        "GUILD_CREATE" | "THREAD_LIST_SYNC" => {
            for t in d["threads"].as_array().into_iter().flatten() {
                if let Some(id) = t["id"].as_str().and_then(|s| s.parse().ok()) {
                    memory.thread(id);
                }
            }
        }
        "THREAD_CREATE" | "THREAD_UPDATE" => {
            let id = d["id"].as_str().and_then(|s| s.parse().ok());
            if let (Some(id), true) = (id, d["type"].as_u64().is_some_and(|t| THREAD_TYPES.contains(&t))) {
                memory.thread(id);
            }
        }
        _ => {}
    }
}

/// Unix milliseconds at which a snowflake was made.
pub(crate) fn snowflake_ms(id: u64) -> i64 {
    (id >> 22) as i64 + DISCORD_EPOCH_MS
}

/// A MESSAGE_CREATE as Butler's event, or `None` for what Butler never handles (its own
/// messages, system messages, messages with nothing to read).
pub fn message(msg: &Message, me: &Me, memory: &Memory) -> Option<InboundEvent> {
    if msg.author.id.get() == me.user_id || !matches!(msg.kind, MessageType::Regular | MessageType::InlineReply) {
        return None;
    }
    let channel = msg.channel_id.get();
    let direct = msg.guild_id.is_none();
    let mentioned = msg.mentions.iter().any(|u| u.id.get() == me.user_id);
    let replied = msg.referenced_message.as_ref().is_some_and(|r| r.author.id.get() == me.user_id);
    let addressed = direct || mentioned || replied || memory.in_thread(channel);
    let text = text_of(msg, me);
    let attachments = crate::attach::attachments(msg);
    if text.trim().is_empty() && attachments.is_empty() {
        return None;
    }
    let display = msg
        .member
        .as_ref()
        .and_then(|m| m.nick.clone())
        .or_else(|| msg.author.global_name.clone())
        .unwrap_or_else(|| msg.author.name.clone());
    Some(InboundEvent {
        id: EventId(format!("{CHANNEL}:message:{}", msg.id)),
        actor: Actor {
            identity: Identity::new(CHANNEL, msg.author.id.to_string()),
            display_name: Some(display),
            is_bot: msg.author.bot || msg.webhook_id.is_some(),
        },
        conversation: ConversationRef::new(CHANNEL, channel.to_string()),
        kind: if direct { ConversationKind::Direct } else { ConversationKind::Group },
        addressed,
        reply_to: msg.message_reference.as_ref().and_then(|r| r.message_id).map(|id| id.to_string()),
        message_id: Some(msg.id.to_string()),
        body: EventBody::Message { text },
        at_ms: snowflake_ms(msg.id.get()),
        attachments,
    })
}

/// The message's words: Butler's own mention taken out, other mentions as `@name`, stickers
/// named (attachments are the event's attachments, not text).
fn text_of(msg: &Message, me: &Me) -> String {
    let mut text = msg.content.clone();
    for user in &msg.mentions {
        let id = user.id.get();
        let name = if id == me.user_id {
            String::new()
        } else {
            format!("@{}", user.global_name.as_ref().unwrap_or(&user.name))
        };
        text = text.replace(&format!("<@{id}>"), &name).replace(&format!("<@!{id}>"), &name);
    }
    let mut text = text.trim().to_string();
    if text.is_empty() && !msg.content.trim().is_empty() {
        text = format!("@{}", me.name);
    }
    for s in &msg.sticker_items {
        text.push_str(&format!("\n[sticker: {}]", s.name));
    }
    text.trim().to_string()
}

/// The fields of an interaction Butler reads (the same JSON from the gateway and the HTTP
/// endpoint). Lenient on purpose: a PING has almost nothing.
#[derive(Debug, Deserialize)]
pub struct Interaction {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: u8,
    #[serde(default)]
    pub token: String,
    pub application_id: Option<String>,
    pub channel_id: Option<String>,
    pub guild_id: Option<String>,
    pub member: Option<Member>,
    pub user: Option<User>,
    pub message: Option<IdOnly>,
    pub data: Option<Data>,
}

#[derive(Debug, Deserialize)]
pub struct Member {
    pub user: Option<User>,
    pub nick: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct User {
    pub id: String,
    #[serde(default)]
    pub username: String,
    pub global_name: Option<String>,
    #[serde(default)]
    pub bot: bool,
}

#[derive(Debug, Deserialize)]
pub struct IdOnly {
    pub id: String,
}

#[derive(Debug, Deserialize)]
pub struct Data {
    pub custom_id: Option<String>,
}

/// Interaction types (Discord's table).
pub const PING: u8 = 1;
pub const APPLICATION_COMMAND: u8 = 2;
pub const MESSAGE_COMPONENT: u8 = 3;
pub const AUTOCOMPLETE: u8 = 4;
pub const MODAL_SUBMIT: u8 = 5;

/// The handle kept in `EventBody::Action::interaction`: what a private answer to the click
/// needs (`<application id>:<token>`).
pub(crate) fn handle(application_id: &str, token: &str) -> String {
    format!("{application_id}:{token}")
}

/// Splits a handle back into (application id, token).
pub(crate) fn split_handle(handle: &str) -> Option<(&str, &str)> {
    handle.split_once(':').filter(|(app, token)| !app.is_empty() && !token.is_empty())
}

/// A button click as Butler's event; `Err` says what is missing.
pub fn click(i: &Interaction) -> Result<InboundEvent, String> {
    let custom_id = i.data.as_ref().and_then(|d| d.custom_id.clone()).ok_or("the click has no custom_id")?;
    let app = i.application_id.as_deref().ok_or("the interaction has no application_id")?;
    // Snowflakes only: the ids name the conversation and the sender, and anything else (empty,
    // or with the thread separator `/`) would not read back from the inbox as itself
    // (fuzz/regressions/discord_interaction/).
    let snowflake = |id: &&str| id.parse::<u64>().is_ok();
    let channel = i.channel_id.as_deref().filter(snowflake).ok_or("the interaction has no channel_id")?;
    let (user, nick) = match (&i.member, &i.user) {
        (Some(Member { user: Some(u), nick }), _) => (u, nick.clone()),
        (_, Some(u)) => (u, None),
        _ => return Err("the interaction names no user".into()),
    };
    if !snowflake(&user.id.as_str()) {
        return Err(format!("`{}` is not a user id", user.id));
    }
    if i.token.is_empty() {
        return Err("the interaction has no token".into());
    }
    let id: u64 = i.id.parse().map_err(|_| format!("`{}` is not an interaction id", i.id))?;
    let display = nick.or_else(|| user.global_name.clone()).unwrap_or_else(|| user.username.clone());
    Ok(InboundEvent {
        id: EventId(format!("{CHANNEL}:interaction:{}", i.id)),
        actor: Actor {
            identity: Identity::new(CHANNEL, user.id.clone()),
            display_name: Some(if display.is_empty() { user.id.clone() } else { display }),
            is_bot: user.bot,
        },
        conversation: ConversationRef::new(CHANNEL, channel),
        kind: if i.guild_id.is_some() { ConversationKind::Group } else { ConversationKind::Direct },
        addressed: true,
        reply_to: None,
        message_id: None,
        body: EventBody::Action {
            action: custom_id,
            message: i.message.as_ref().map(|m| m.id.clone()),
            interaction: Some(handle(app, &i.token)),
        },
        at_ms: snowflake_ms(id),
        attachments: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn me() -> Me {
        Me { user_id: 900, name: "Butler".into() }
    }

    /// The documented example message (tests/fixtures/discord/gateway_docs.json), varied.
    fn msg(patch: serde_json::Value) -> Message {
        let mut m = json!({
            "reactions": [], "attachments": [], "tts": false, "embeds": [],
            "timestamp": "2017-07-11T17:27:07.299000+00:00", "mention_everyone": false,
            "id": "334385199974967042", "pinned": false, "edited_timestamp": null,
            "author": {"username": "Mason", "discriminator": "9999", "id": "53908099506183680", "avatar": null},
            "mention_roles": [], "content": "Supa Hot", "channel_id": "290926798999357250", "mentions": [], "type": 0
        });
        for (k, v) in patch.as_object().unwrap() {
            m[k] = v.clone();
        }
        serde_json::from_value(m).unwrap()
    }

    #[test]
    fn who_is_addressed() {
        let bot = json!({"id": "900", "username": "Butler", "bot": true});
        let none = Memory::default();
        let mut threads = Memory::default();
        threads.thread(290926798999357250);
        threads.spoke(290926798999357250);
        type Case<'a> = (&'a str, Message, &'a Memory, Option<(bool, ConversationKind, &'a str)>);
        let cases: Vec<Case> = vec![
            ("a DM", msg(json!({})), &none, Some((true, ConversationKind::Direct, "Supa Hot"))),
            (
                "a guild message",
                msg(json!({"guild_id": "1"})),
                &none,
                Some((false, ConversationKind::Group, "Supa Hot")),
            ),
            (
                "a mention",
                msg(
                    json!({"guild_id": "1", "content": "<@900> hi <@!53908099506183680>", "mentions": [bot, {"id": "53908099506183680", "username": "Mason"}]}),
                ),
                &none,
                Some((true, ConversationKind::Group, "hi @Mason")),
            ),
            (
                "only a mention",
                msg(json!({"guild_id": "1", "content": "<@900>", "mentions": [bot]})),
                &none,
                Some((true, ConversationKind::Group, "@Butler")),
            ),
            (
                "a reply to Butler",
                msg(
                    json!({"guild_id": "1", "type": 19, "message_reference": {"message_id": "5", "channel_id": "290926798999357250"},
                    "referenced_message": msg(json!({"id": "5", "author": bot, "content": "earlier"}))}),
                ),
                &none,
                Some((true, ConversationKind::Group, "Supa Hot")),
            ),
            (
                "in a thread Butler is part of",
                msg(json!({"guild_id": "1"})),
                &threads,
                Some((true, ConversationKind::Group, "Supa Hot")),
            ),
            ("Butler's own message", msg(json!({"author": bot})), &none, None),
            ("a system message", msg(json!({"type": 7})), &none, None),
            ("nothing to read", msg(json!({"content": ""})), &none, None),
        ];
        for (what, m, memory, want) in cases {
            let got = message(&m, &me(), memory).map(|e| (e.addressed, e.kind, e.text().unwrap().to_string()));
            assert_eq!(got, want.map(|(a, k, t)| (a, k, t.to_string())), "{what}");
        }
        let e = message(&msg(json!({"attachments": [{"id": "1", "filename": "a.png", "size": 3, "url": "https://cdn/a.png", "proxy_url": "https://p/a.png"}]})), &me(), &none).unwrap();
        assert_eq!(e.attachments.len(), 1);
        assert_eq!(e.id.0, "discord:message:334385199974967042");
        assert_eq!(e.actor.identity.to_string(), "discord:53908099506183680");
        assert_eq!(e.conversation.to_string(), "discord:290926798999357250");
        assert_eq!(e.text(), Some("Supa Hot"), "the text stays the content");
        assert_eq!(e.at_ms, 1_499_794_044_250, "the time inside the snowflake");
        let other_bot = message(&msg(json!({"author": {"id": "77", "username": "other", "bot": true}})), &me(), &none);
        assert!(other_bot.unwrap().actor.is_bot);
    }

    #[test]
    fn clicks_carry_the_action_the_message_and_the_handle() {
        let i: Interaction = serde_json::from_value(json!({
            "id": "787053080478613555", "type": 3, "token": "tok", "application_id": "42", "channel_id": "7",
            "guild_id": "1", "member": {"user": {"id": "5", "username": "alice"}, "nick": "Al"},
            "message": {"id": "99"}, "data": {"custom_id": "ap:abc:once", "component_type": 2}
        }))
        .unwrap();
        let e = click(&i).unwrap();
        assert_eq!(e.id.0, "discord:interaction:787053080478613555");
        assert_eq!((e.actor.identity.to_string(), e.actor.name()), ("discord:5".into(), "Al"));
        assert_eq!(e.kind, ConversationKind::Group);
        assert_eq!(
            e.body,
            EventBody::Action {
                action: "ap:abc:once".into(),
                message: Some("99".into()),
                interaction: Some("42:tok".into())
            }
        );
        assert_eq!(split_handle("42:tok.with:colon"), Some(("42", "tok.with:colon")));
        // The fixture's bare component body names no channel or user: not an event.
        let bare: Interaction = serde_json::from_str(r#"{"id":"787053080478613555","token":"ThisIsATokenFromDiscordThatIsVeryLong","type":3,"version":1,"data":{"custom_id":"test","component_type":2}}"#).unwrap();
        assert!(click(&bare).is_err());
    }

    #[test]
    fn attachments_table() {
        use butler_channel::MediaKind;
        let cdn = |id: &str, name: &str| {
            format!("https://cdn.discordapp.com/attachments/290926798999357250/{id}/{name}?ex=67a1&is=67a0&hm=ab12")
        };
        let photo = json!({"id": "1100000000000000001", "filename": "IMG_0042.png", "size": 2048, "url": cdn("1100000000000000001", "IMG_0042.png"),
            "proxy_url": "https://media.discordapp.net/attachments/x/IMG_0042.png", "content_type": "image/png", "width": 64, "height": 48});
        let voice = json!({"id": "1100000000000000002", "filename": "voice-message.ogg", "size": 9000, "url": cdn("1100000000000000002", "voice-message.ogg"),
            "proxy_url": "https://media.discordapp.net/attachments/x/voice-message.ogg", "content_type": "audio/ogg",
            "duration_secs": 3.52, "waveform": "AAAA"});
        let pdf = json!({"id": "1100000000000000003", "filename": "report.pdf", "size": 123456, "url": cdn("1100000000000000003", "report.pdf"),
            "proxy_url": "https://media.discordapp.net/attachments/x/report.pdf", "content_type": "application/pdf"});
        let song = json!({"id": "1100000000000000004", "filename": "song.mp3", "size": 4000000, "url": cdn("1100000000000000004", "song.mp3"),
            "proxy_url": "https://media.discordapp.net/attachments/x/song.mp3", "content_type": "audio/mpeg"});
        let video = json!({"id": "1100000000000000005", "filename": "clip.mp4", "size": 9000000, "url": cdn("1100000000000000005", "clip.mp4"),
            "proxy_url": "https://media.discordapp.net/attachments/x/clip.mp4", "content_type": "video/mp4"});
        type Want<'a> = Vec<(&'a str, MediaKind, &'a str, u64, Option<u32>)>;
        let cases: Vec<(&str, serde_json::Value, &str, Want)> = vec![
            (
                "a photo with a caption",
                json!({"content": "look", "attachments": [photo]}),
                "look",
                vec![("1100000000000000001", MediaKind::Image, "image/png", 2048, None)],
            ),
            (
                "a voice message",
                json!({"content": "", "flags": 8192, "attachments": [voice.clone()]}),
                "",
                vec![("1100000000000000002", MediaKind::Voice, "audio/ogg", 9000, Some(4))],
            ),
            (
                "the same file without the voice flag",
                json!({"content": "", "attachments": [voice]}),
                "",
                vec![("1100000000000000002", MediaKind::Audio, "audio/ogg", 9000, Some(4))],
            ),
            (
                "several files",
                json!({"content": "three", "attachments": [pdf, song, video]}),
                "three",
                vec![
                    ("1100000000000000003", MediaKind::Document, "application/pdf", 123456, None),
                    ("1100000000000000004", MediaKind::Audio, "audio/mpeg", 4000000, None),
                    ("1100000000000000005", MediaKind::Video, "video/mp4", 9000000, None),
                ],
            ),
        ];
        for (what, patch, text, want) in cases {
            let e = message(&msg(patch), &me(), &Memory::default()).unwrap_or_else(|| panic!("{what}: no event"));
            assert_eq!(e.text(), Some(text), "{what}");
            let got: Want = e
                .attachments
                .iter()
                .map(|a| (a.file_id.as_str(), a.kind, a.mime.as_deref().unwrap(), a.size.unwrap(), a.duration_secs))
                .collect();
            assert_eq!(got, want, "{what}");
            for a in &e.attachments {
                let url = a.url.as_deref().unwrap();
                assert!(
                    url.starts_with("https://cdn.discordapp.com/attachments/") && url.contains(&a.file_id),
                    "{what}: {url}"
                );
                assert!(url.contains(a.name.as_deref().unwrap()), "{what}");
            }
        }
    }
}
