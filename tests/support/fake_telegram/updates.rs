//! Builders for the Update objects the fake hands out, in the exact shape Telegram sends
//! (compare tests/fixtures/telegram/updates_teloxide.jsonl): private and group messages,
//! mentions, commands, forum topics, media, callback queries, edits.

use serde_json::{json, Value};

/// A person on Telegram.
pub fn user(id: i64, name: &str) -> Value {
    json!({"id": id, "is_bot": false, "first_name": name, "username": name.to_lowercase(), "language_code": "en"})
}

/// The chat object for an id: positive ids are private chats, `-100...` supergroups (forums
/// when `forum`), other negative ids basic groups.
pub fn chat(id: i64, forum: bool) -> Value {
    if id > 0 {
        json!({"id": id, "type": "private", "first_name": "User", "username": format!("user{id}")})
    } else if id < -1_000_000_000_000 {
        json!({"id": id, "type": "supergroup", "title": "Team", "is_forum": forum})
    } else {
        json!({"id": id, "type": "group", "title": "Group"})
    }
}

fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64
}

/// A text message from `from` (a `user(...)`) in `chat_id`, with `entities` (Bot API
/// MessageEntity objects; offsets in UTF-16 units).
pub fn message(chat_id: i64, message_id: i64, from: Value, text: &str, entities: Value) -> Value {
    let mut m =
        json!({"message_id": message_id, "from": from, "chat": chat(chat_id, false), "date": now(), "text": text});
    if entities.as_array().is_some_and(|e| !e.is_empty()) {
        m["entities"] = entities;
    }
    m
}

/// `{"message": m}`: a new-message update (the fake assigns the update_id).
pub fn new_message(m: Value) -> Value {
    json!({ "message": m })
}

/// A DM: the chat id is the user's id.
pub fn dm(user_id: i64, message_id: i64, text: &str) -> Value {
    new_message(message(user_id, message_id, user(user_id, &format!("U{user_id}")), text, json!([])))
}

/// A group message mentioning `@username` at the start when `mention` is set.
pub fn group(chat_id: i64, message_id: i64, from: Value, text: &str, mention: Option<&str>) -> Value {
    match mention {
        Some(bot) => {
            let full = format!("@{bot} {text}");
            let len = bot.encode_utf16().count() + 1;
            new_message(message(
                chat_id,
                message_id,
                from,
                &full,
                json!([{"type": "mention", "offset": 0, "length": len}]),
            ))
        }
        None => new_message(message(chat_id, message_id, from, text, json!([]))),
    }
}

/// A message in forum topic `thread` of supergroup `chat_id`.
pub fn topic(chat_id: i64, thread: i64, message_id: i64, from: Value, text: &str) -> Value {
    let mut m = message(chat_id, message_id, from, text, json!([]));
    m["chat"] = chat(chat_id, true);
    m["message_thread_id"] = json!(thread);
    m["is_topic_message"] = json!(true);
    new_message(m)
}

/// A click on a button with `data`, on message `message` (as the fake returned it).
pub fn callback(query_id: &str, from: Value, message: &Value, data: &str) -> Value {
    json!({"callback_query": {"id": query_id, "from": from, "message": message, "chat_instance": "-4242", "data": data}})
}

/// An edit of an earlier message to `text`.
pub fn edited(chat_id: i64, message_id: i64, from: Value, text: &str) -> Value {
    let mut m = message(chat_id, message_id, from, text, json!([]));
    m["edit_date"] = json!(now());
    json!({ "edited_message": m })
}
