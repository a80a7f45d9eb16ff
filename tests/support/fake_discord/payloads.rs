//! Discord payloads for the fake, built from the documented examples in
//! tests/fixtures/discord (copies of ../shared/fixtures/discord): the Example Message object
//! for every message, the documented Ready/Identify shapes, and the button-click interaction
//! body from discord-interactions-js, each completed with the fields a real dispatch carries.
//! Data only: nothing here talks to a socket.

use super::{APP_ID, BOT_ID, BOT_NAME, GUILD_ID};
use serde_json::{json, Value};

pub const GATEWAY_DOCS: &str = include_str!("../../fixtures/discord/gateway_docs.json");
pub const INTERACTIONS_JS: &str = include_str!("../../fixtures/discord/interactions_discord_interactions_js.json");
pub const RFC8032: &str = include_str!("../../fixtures/discord/ed25519_rfc8032_vectors.json");

pub fn fixture(text: &str) -> Value {
    serde_json::from_str(text).expect("fixture JSON")
}

pub fn bot_user() -> Value {
    json!({"id": BOT_ID, "username": BOT_NAME, "discriminator": "0", "global_name": null, "avatar": null, "bot": true})
}

/// A person (or with `bot`, another bot).
pub fn user(id: &str, name: &str) -> Value {
    json!({"id": id, "username": name, "discriminator": "0", "global_name": name, "avatar": null})
}

pub fn ready(session: &str, resume_url: &str) -> Value {
    json!({
        "v": 10, "user": bot_user(), "guilds": [{"id": GUILD_ID, "unavailable": true}],
        "session_id": session, "resume_gateway_url": resume_url, "shard": [0, 1],
        "application": {"id": APP_ID, "flags": 0}
    })
}

/// The documented Example Message with its id, channel, author and content replaced.
pub fn message(id: &str, channel: &str, author: &Value, content: &str) -> Value {
    let mut m = fixture(GATEWAY_DOCS)["example_message_object"]["payload"].clone();
    m["id"] = json!(id);
    m["channel_id"] = json!(channel);
    m["author"] = author.clone();
    m["content"] = json!(content);
    m["reactions"] = json!([]);
    m["components"] = json!([]);
    m
}

/// A MESSAGE_CREATE body: in a guild when `guild` (with the author's member object), else a DM.
pub struct UserMessage {
    pub d: Value,
}

impl UserMessage {
    pub fn new(id: &str, channel: &str, author: &Value, content: &str) -> Self {
        Self { d: message(id, channel, author, content) }
    }

    pub fn in_guild(mut self) -> Self {
        self.d["guild_id"] = json!(GUILD_ID);
        self.d["member"] = json!({"roles": [], "joined_at": "2024-01-01T00:00:00.000000+00:00", "deaf": false, "mute": false, "flags": 0});
        self
    }

    /// `<@bot>` at the start, and the bot in `mentions`.
    pub fn mentioning_bot(mut self) -> Self {
        let content = format!("<@{BOT_ID}> {}", self.d["content"].as_str().unwrap_or(""));
        self.d["content"] = json!(content);
        self.d["mentions"] = json!([bot_user()]);
        self
    }

    /// A reply (type 19) to `to` (a full message object).
    pub fn replying_to(mut self, to: &Value) -> Self {
        self.d["type"] = json!(19);
        self.d["message_reference"] =
            json!({"type": 0, "message_id": to["id"], "channel_id": to["channel_id"], "guild_id": GUILD_ID});
        self.d["referenced_message"] = to.clone();
        self
    }

    /// Files attached (attachment objects, e.g. from `FakeDiscord::add_attachment`).
    pub fn with_attachments(mut self, attachments: Vec<Value>) -> Self {
        self.d["attachments"] = json!(attachments);
        self
    }

    /// A voice message: the IS_VOICE_MESSAGE flag (1 << 13), its one audio file's duration
    /// and waveform.
    pub fn voice_message(mut self, duration_secs: f64) -> Self {
        self.d["flags"] = json!(1 << 13);
        if let Some(a) = self.d["attachments"].get_mut(0) {
            a["duration_secs"] = json!(duration_secs);
            a["waveform"] = json!("AAAAAAAAAAAA");
        }
        self
    }

    /// The extra MESSAGE_CREATE field naming the channel's type (11: a public thread).
    pub fn channel_type(mut self, t: u64) -> Self {
        self.d["channel_type"] = json!(t);
        self
    }
}

/// A THREAD_CREATE body for a public thread `id` under `parent`.
pub fn thread(id: &str, parent: &str) -> Value {
    json!({
        "id": id, "guild_id": GUILD_ID, "parent_id": parent, "type": 11, "name": "a thread",
        "owner_id": "1", "message_count": 0, "member_count": 1,
        "thread_metadata": {"archived": false, "auto_archive_duration": 1440, "archive_timestamp": "2024-01-01T00:00:00.000000+00:00", "locked": false},
        "newly_created": true
    })
}

/// An INTERACTION_CREATE body: `who` clicked `custom_id` on `message` (a full message object),
/// in a guild channel. Starts from discord-interactions-js's messageComponentRequestBody.
pub fn click(id: &str, token: &str, who: &Value, message: &Value, custom_id: &str) -> Value {
    let mut d = fixture(INTERACTIONS_JS)["bodies"]["messageComponentRequestBody"]["json"].clone();
    d["id"] = json!(id);
    d["token"] = json!(token);
    d["application_id"] = json!(APP_ID);
    d["channel_id"] = message["channel_id"].clone();
    d["channel"] = json!({"id": message["channel_id"], "type": 0});
    d["guild_id"] = json!(GUILD_ID);
    d["member"] = json!({"user": who, "roles": [], "permissions": "274877975552", "nick": null,
        "joined_at": "2024-01-01T00:00:00.000000+00:00", "deaf": false, "mute": false, "flags": 0});
    d["message"] = message.clone();
    d["data"] = json!({"custom_id": custom_id, "component_type": 2});
    d["app_permissions"] = json!("274877975552");
    d["locale"] = json!("en-US");
    d
}
