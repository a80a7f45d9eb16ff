//! The fake Web API: `/api/<method>` with Slack's token checks, limits, response shapes and
//! errors (`{"ok": false, "error": "..."}`), and injected 429s with `Retry-After`.

use super::{Call, Ephemeral, Posted, Shared, APP_TOKEN, BOT_ID, BOT_TOKEN, BOT_USER, TEAM};
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::{Json, Router};
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::Instant;

pub fn router(shared: Arc<Shared>) -> Router {
    Router::new().route("/api/{method}", any(handle)).with_state(shared)
}

fn str_param<'a>(p: &'a Value, k: &str) -> &'a str {
    p.get(k).and_then(Value::as_str).unwrap_or("")
}

fn is_id(s: &str) -> bool {
    s.len() > 1 && s.starts_with(['C', 'D', 'G']) && s.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
}

/// The blocks of a request: parsed (a JSON array, or a JSON string as form clients send it).
fn blocks_of(p: &Value) -> Value {
    match p.get("blocks") {
        Some(Value::String(s)) => serde_json::from_str(s).unwrap_or(Value::Null),
        Some(v) => v.clone(),
        None => Value::Array(vec![]),
    }
}

/// Sections and buttons of `blocks`, or Slack's error for blocks it would refuse.
/// Section texts and (label, value) of each button.
type Read = (Vec<String>, Vec<(String, String)>);

fn read_blocks(blocks: &Value) -> Result<Read, &'static str> {
    let list = blocks.as_array().ok_or("invalid_blocks_format")?;
    if list.len() > 50 {
        return Err("invalid_blocks");
    }
    let (mut sections, mut buttons) = (vec![], vec![]);
    for b in list {
        match b["type"].as_str() {
            Some("section") => {
                let text = b["text"]["text"].as_str().ok_or("invalid_blocks")?;
                if text.is_empty() || text.chars().count() > 3000 {
                    return Err("invalid_blocks");
                }
                sections.push(text.to_string());
            }
            Some("actions") => {
                for e in b["elements"].as_array().ok_or("invalid_blocks")? {
                    let label = e["text"]["text"].as_str().ok_or("invalid_blocks")?;
                    if e["text"]["type"] != "plain_text" || label.chars().count() > 75 {
                        return Err("invalid_blocks");
                    }
                    buttons.push((label.to_string(), e["value"].as_str().unwrap_or("").to_string()));
                }
            }
            _ => return Err("invalid_blocks"),
        }
    }
    Ok((sections, buttons))
}

fn check_text(p: &Value, blocks: &[String]) -> Result<String, &'static str> {
    let text = str_param(p, "text").to_string();
    if text.chars().count() > 40_000 {
        return Err("msg_too_long");
    }
    if text.is_empty() && blocks.is_empty() {
        return Err("no_text");
    }
    Ok(text)
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    Path(method): Path<String>,
    Query(query): Query<Vec<(String, String)>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mut params = Map::new();
    for (k, v) in query {
        params.insert(k, Value::String(v));
    }
    if let Ok(Value::Object(m)) = serde_json::from_slice::<Value>(&body) {
        params.extend(m);
    }
    let params = Value::Object(params);
    let token = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_string);
    let mut call = Call {
        method: method.clone(),
        params: params.clone(),
        token: token.clone(),
        at: Instant::now(),
        status: 200,
        error: None,
    };
    let limited = shared.lock().limits.get_mut(&method).and_then(|q| q.pop_front());
    if let Some(secs) = limited {
        call.status = 429;
        call.error = Some("ratelimited".into());
        shared.lock().calls.push(call);
        shared.changed.notify_waiters();
        let mut resp =
            (StatusCode::TOO_MANY_REQUESTS, Json(json!({"ok": false, "error": "ratelimited"}))).into_response();
        resp.headers_mut().insert("retry-after", HeaderValue::from(secs));
        return resp;
    }
    let result = answer(&shared, &method, &params, token.as_deref());
    call.error = result.as_ref().err().map(|e| e.to_string());
    shared.lock().calls.push(call);
    shared.changed.notify_waiters();
    match result {
        Ok(Value::Object(mut m)) => {
            m.insert("ok".into(), Value::Bool(true));
            Json(Value::Object(m)).into_response()
        }
        Ok(_) => Json(json!({"ok": true})).into_response(),
        Err(e) => Json(json!({"ok": false, "error": e})).into_response(),
    }
}

fn answer(shared: &Shared, method: &str, p: &Value, token: Option<&str>) -> Result<Value, &'static str> {
    match (method, token) {
        (_, None) => return Err("not_authed"),
        ("apps.connections.open", Some(t)) if t == BOT_TOKEN => return Err("not_allowed_token_type"),
        ("apps.connections.open", Some(t)) if t != APP_TOKEN => return Err("invalid_auth"),
        ("apps.connections.open", _) => {}
        (_, Some(t)) if t != BOT_TOKEN => return Err("invalid_auth"),
        _ => {}
    }
    let mut s = shared.lock();
    if let Some(files) = super::files::answer(&mut s, method, p) {
        return files;
    }
    match method {
        "auth.test" => Ok(json!({"url": "https://fake.slack.com/", "team": "Fake Team", "user": "butler",
                                 "team_id": TEAM, "user_id": BOT_USER, "bot_id": BOT_ID})),
        "chat.postMessage" => {
            let channel = str_param(p, "channel").to_string();
            if !is_id(&channel) {
                return Err("channel_not_found");
            }
            let blocks = blocks_of(p);
            let (sections, buttons) = read_blocks(&blocks)?;
            let text = check_text(p, &sections)?;
            s.ts_counter += 1;
            let ts = format!("1700000000.{:06}", s.ts_counter);
            let thread_ts = p.get("thread_ts").and_then(Value::as_str).map(str::to_string);
            s.messages.push(Posted {
                channel: channel.clone(),
                ts: ts.clone(),
                thread_ts: thread_ts.clone(),
                text: text.clone(),
                sections,
                buttons,
                blocks,
                writes: vec![Instant::now()],
            });
            let mut message = json!({"type": "message", "text": text, "user": BOT_USER, "bot_id": BOT_ID, "ts": ts});
            if let Some(t) = thread_ts {
                message["thread_ts"] = json!(t);
            }
            Ok(json!({"channel": channel, "ts": ts, "message": message}))
        }
        "chat.update" => {
            let (channel, ts) = (str_param(p, "channel"), str_param(p, "ts"));
            if !is_id(channel) {
                return Err("channel_not_found");
            }
            let blocks = blocks_of(p);
            let (sections, buttons) = read_blocks(&blocks)?;
            let text = check_text(p, &sections)?;
            let m = s.messages.iter_mut().find(|m| m.channel == channel && m.ts == ts).ok_or("message_not_found")?;
            m.text.clone_from(&text);
            m.sections = sections;
            m.buttons = buttons;
            m.blocks = blocks;
            m.writes.push(Instant::now());
            Ok(json!({"channel": channel, "ts": ts, "text": text,
                      "message": {"text": text, "user": BOT_USER, "bot_id": BOT_ID}}))
        }
        "chat.postEphemeral" => {
            let (channel, user) = (str_param(p, "channel"), str_param(p, "user"));
            if !is_id(channel) {
                return Err("channel_not_found");
            }
            if user.is_empty() {
                return Err("user_not_in_channel");
            }
            let blocks = blocks_of(p);
            let (sections, _) = read_blocks(&blocks)?;
            let text = check_text(p, &sections)?;
            let shown = if sections.is_empty() { text } else { sections.join("\n") };
            let thread_ts = p.get("thread_ts").and_then(Value::as_str).map(str::to_string);
            s.ephemerals.push(Ephemeral { channel: channel.into(), user: user.into(), thread_ts, text: shown });
            s.ts_counter += 1;
            Ok(json!({"message_ts": format!("1700000000.{:06}", s.ts_counter)}))
        }
        "reactions.add" | "reactions.remove" => {
            let key = (
                str_param(p, "channel").to_string(),
                str_param(p, "timestamp").to_string(),
                str_param(p, "name").to_string(),
            );
            let at = s.reactions.iter().position(|r| *r == key);
            match (method, at) {
                ("reactions.add", Some(_)) => Err("already_reacted"),
                ("reactions.add", None) => {
                    s.reactions.push(key);
                    Ok(json!({}))
                }
                (_, Some(i)) => {
                    s.reactions.remove(i);
                    Ok(json!({}))
                }
                (_, None) => Err("no_reaction"),
            }
        }
        "users.info" => {
            let id = str_param(p, "user");
            let (name, display) = s.users.get(id).cloned().ok_or("user_not_found")?;
            Ok(json!({"user": {"id": id, "team_id": TEAM, "name": name, "real_name": display,
                               "profile": {"display_name": display, "real_name": display}}}))
        }
        "conversations.info" => {
            let id = str_param(p, "channel");
            if id.starts_with('D') && is_id(id) {
                return Ok(json!({"channel": {"id": id, "created": 1600000000, "is_im": true}}));
            }
            let name = s.channels.get(id).ok_or("channel_not_found")?;
            Ok(json!({"channel": {"id": id, "name": name, "created": 1600000000, "is_channel": true}}))
        }
        "conversations.list" => {
            let limit: usize = str_param(p, "limit").parse().unwrap_or(100).clamp(1, 1000);
            let start: usize = str_param(p, "cursor").parse().unwrap_or(0);
            let all: Vec<(String, String)> = s.channels.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            let page: Vec<Value> = all
                .iter()
                .skip(start)
                .take(limit)
                .map(|(id, name)| json!({"id": id, "name": name, "created": 1600000000, "is_channel": true}))
                .collect();
            let next = if start + limit < all.len() { (start + limit).to_string() } else { String::new() };
            Ok(json!({"channels": page, "response_metadata": {"next_cursor": next}}))
        }
        "apps.connections.open" => {
            let addr = s.handed_out.or(*shared.ws_addr.lock().unwrap()).expect("socket server started");
            s.ts_counter += 1;
            Ok(json!({"url": format!("ws://{addr}/link/?ticket=fake-{}", s.ts_counter)}))
        }
        _ => Err("unknown_method"),
    }
}
