//! Envelope builders for the fake signal-cli daemon: what signal-cli prints for a received
//! message (direct, group with mentions, reaction, quote, attachment, typing, receipt, a sync
//! of the bot's own message), and the fixtures in tests/fixtures/signal/ (same shapes).
//!
//! Plain JSON values: it must never depend on Butler's types or on the server half.

use serde_json::{json, Value};

/// The bot's own number and its account uuid (mentions of the bot carry this uuid).
pub const ACCOUNT: &str = "+15550000001";
pub const BOT_UUID: &str = "0b07b07b-0000-4000-8000-000000000001";

/// A stable made-up uuid for a number (the bot's number gives BOT_UUID).
pub fn uuid_for(number: &str) -> String {
    if number == ACCOUNT {
        return BOT_UUID.into();
    }
    let digits: String = number.chars().filter(char::is_ascii_digit).collect();
    format!("00000000-0000-4000-8000-{:0>12}", &digits[digits.len().saturating_sub(12)..])
}

/// A fixture from tests/fixtures/signal/.
pub fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/signal/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).expect("fixture")).expect("fixture JSON")
}

/// The envelope head every received item has; the profile name is made up from the number.
fn envelope(number: &str, uuid: &str, ts: i64) -> Value {
    let tail: String = number.chars().rev().take(4).collect::<Vec<_>>().into_iter().rev().collect();
    json!({"source": number, "sourceNumber": number, "sourceUuid": uuid, "sourceName": format!("Person {tail}"),
        "sourceDevice": 1, "timestamp": ts, "serverReceivedTimestamp": ts + 120, "serverDeliveredTimestamp": ts + 180})
}

fn data(ts: i64, text: Option<&str>) -> Value {
    json!({"timestamp": ts, "message": text, "expiresInSeconds": 0, "isExpirationUpdate": false, "viewOnce": false})
}

fn group_info(group_id: &str) -> Value {
    json!({"groupId": group_id, "groupName": "Test Group", "revision": 3, "type": "DELIVER"})
}

/// A direct text message.
pub fn direct(number: &str, uuid: &str, ts: i64, text: &str) -> Value {
    let mut e = envelope(number, uuid, ts);
    e["dataMessage"] = data(ts, Some(text));
    e
}

/// A group message; `mentions` are (start, length, uuid) in UTF-16 units (the text holds U+FFFC
/// where a mention is; BOT_UUID mentions the bot).
pub fn group(
    number: &str,
    uuid: &str,
    ts: i64,
    group_id: &str,
    text: &str,
    mentions: &[(usize, usize, &str)],
) -> Value {
    let mut e = direct(number, uuid, ts, text);
    if !mentions.is_empty() {
        let list: Vec<Value> = mentions
            .iter()
            .map(|(start, length, u)| {
                let n = if *u == BOT_UUID { Value::from(ACCOUNT) } else { Value::Null };
                let name = n.as_str().unwrap_or(u).to_string();
                json!({"name": name, "number": n, "uuid": u, "start": start, "length": length})
            })
            .collect();
        e["dataMessage"]["mentions"] = Value::Array(list);
    }
    e["dataMessage"]["groupInfo"] = group_info(group_id);
    e
}

/// A reaction (or its removal) to the message `target_ts` by `target_author_number`.
#[allow(clippy::too_many_arguments)]
pub fn reaction(
    number: &str,
    uuid: &str,
    ts: i64,
    emoji: &str,
    target_author_number: &str,
    target_ts: i64,
    remove: bool,
    group: Option<&str>,
) -> Value {
    let mut e = envelope(number, uuid, ts);
    let mut d = data(ts, None);
    d["reaction"] = json!({"emoji": emoji, "targetAuthor": target_author_number,
        "targetAuthorNumber": target_author_number, "targetAuthorUuid": uuid_for(target_author_number),
        "targetSentTimestamp": target_ts, "isRemove": remove});
    if let Some(g) = group {
        d["groupInfo"] = group_info(g);
    }
    e["dataMessage"] = d;
    e
}

/// A reply quoting the message `quoted_ts` by `quoted_author_number`.
pub fn quote_reply(number: &str, uuid: &str, ts: i64, text: &str, quoted_ts: i64, quoted_author_number: &str) -> Value {
    let mut e = direct(number, uuid, ts, text);
    e["dataMessage"]["quote"] = json!({"id": quoted_ts, "author": quoted_author_number,
        "authorNumber": quoted_author_number, "authorUuid": uuid_for(quoted_author_number),
        "text": "the quoted message", "attachments": []});
    e
}

/// Adds a received attachment to the envelope's dataMessage.
pub fn with_attachment(mut envelope: Value, id: &str, content_type: &str, filename: &str, size: u64) -> Value {
    let ts = envelope["timestamp"].as_i64().unwrap_or_default();
    let a = json!({"contentType": content_type, "filename": filename, "id": id, "size": size,
        "width": null, "height": null, "caption": null, "uploadTimestamp": ts - 900});
    let d = &mut envelope["dataMessage"];
    match d["attachments"].as_array_mut() {
        Some(list) => list.push(a),
        None => d["attachments"] = json!([a]),
    }
    envelope
}

/// A typing indicator; `action` is `STARTED` or `STOPPED`.
pub fn typing(number: &str, uuid: &str, ts: i64, action: &str) -> Value {
    let mut e = envelope(number, uuid, ts);
    e["typingMessage"] = json!({"action": action, "timestamp": ts});
    e
}

/// A delivery receipt for the bot's messages `timestamps`.
pub fn receipt(number: &str, uuid: &str, ts: i64, timestamps: &[i64]) -> Value {
    let mut e = envelope(number, uuid, ts);
    e["receiptMessage"] =
        json!({"when": ts, "isDelivery": true, "isRead": false, "isViewed": false, "timestamps": timestamps});
    e
}

/// What the bot's own other device (device 2) sent to `destination`: a sync transcript.
pub fn sync_sent(destination: &str, ts: i64, text: &str) -> Value {
    let mut e = envelope(ACCOUNT, BOT_UUID, ts);
    e["sourceDevice"] = json!(2);
    let mut sent = json!({"destination": destination, "destinationNumber": destination,
        "destinationUuid": uuid_for(destination)});
    for (k, v) in data(ts, Some(text)).as_object().unwrap() {
        sent[k] = v.clone();
    }
    e["syncMessage"] = json!({"sentMessage": sent});
    e
}
