//! The fake REST API under /api/v10: the bot token is checked (`Bot <token>`), every call is
//! recorded with its time and status, queued 429s are served with `retry_after` in the body and
//! a `Retry-After` header, messages honour `enforce_nonce`, Butler's own messages are echoed as
//! MESSAGE_CREATE on the gateway, and follow-ups are refused until their click is acknowledged.
//! Messages may come as `multipart/form-data` (`payload_json` and `files[n]`): the files become
//! attachments on the fake's CDN (413 above Discord's 10 MiB upload limit).

use super::files;
use super::payloads::{bot_user, message};
use super::{dispatch, next_snowflake, Call, Msg, State, TOKEN};
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State as AxState};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, patch, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

type Shared = Arc<Mutex<State>>;

pub(super) async fn serve(state: Shared) -> u16 {
    let app = Router::new()
        .route("/api/v10/gateway", get(gateway))
        .route("/api/v10/gateway/bot", get(gateway_bot))
        .route("/api/v10/users/@me", get(me))
        .route("/api/v10/channels/{channel}/messages", post(create).layer(DefaultBodyLimit::max(64 * 1024 * 1024)))
        .route("/api/v10/channels/{channel}/messages/{id}", patch(edit))
        .route("/api/v10/channels/{channel}/typing", post(typing))
        .route("/api/v10/interactions/{id}/{token}/callback", post(callback))
        .route("/api/v10/webhooks/{app}/{token}", post(followup))
        .route("/api/v10/webhooks/{app}/{token}/messages/{id}", patch(edit_followup))
        .route("/attachments/{channel}/{id}/{name}", get(super::files::download))
        .with_state(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    port
}

fn lock(state: &Shared) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|p| p.into_inner())
}

/// Records the call and builds its answer.
fn answer(s: &mut State, method: &Method, uri: &Uri, body: &Bytes, status: u16, json: Value) -> Response {
    s.calls.push(Call {
        at: Instant::now(),
        method: method.to_string(),
        path: uri.path().to_string(),
        body: serde_json::from_slice(body).unwrap_or(Value::Null),
        status,
    });
    let code = StatusCode::from_u16(status).unwrap();
    if status == 204 {
        return code.into_response();
    }
    (code, Json(json)).into_response()
}

/// The answer to an unauthenticated or rate-limited request, if this one is.
fn refuse(s: &mut State, method: &Method, uri: &Uri, headers: &HeaderMap, body: &Bytes) -> Option<Response> {
    let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("");
    if auth != format!("Bot {TOKEN}") {
        return Some(answer(s, method, uri, body, 401, json!({"message": "401: Unauthorized", "code": 0})));
    }
    let at = s.limits.iter().position(|(m, f, _, _)| m == method.as_str() && uri.path().contains(f.as_str()))?;
    if s.limits[at].2 > 0 {
        s.limits[at].2 -= 1;
        return None;
    }
    let (_, _, _, secs) = s.limits.remove(at).unwrap();
    let mut r = answer(
        s,
        method,
        uri,
        body,
        429,
        json!({"message": "You are being rate limited.", "retry_after": secs, "global": false}),
    );
    let h = r.headers_mut();
    h.insert("retry-after", secs.ceil().to_string().parse().unwrap());
    h.insert("x-ratelimit-scope", "user".parse().unwrap());
    Some(r)
}

async fn gateway(AxState(st): AxState<Shared>, method: Method, uri: Uri) -> Response {
    let mut s = lock(&st);
    let url = format!("ws://127.0.0.1:{}", s.gw.port);
    answer(&mut s, &method, &uri, &Bytes::new(), 200, json!({"url": url}))
}

async fn gateway_bot(AxState(st): AxState<Shared>, method: Method, uri: Uri, headers: HeaderMap) -> Response {
    let mut s = lock(&st);
    if let Some(r) = refuse(&mut s, &method, &uri, &headers, &Bytes::new()) {
        return r;
    }
    let url = format!("ws://127.0.0.1:{}", s.gw.port);
    let limit = json!({"total": 1000, "remaining": 997, "reset_after": 14_400_000, "max_concurrency": 1});
    answer(&mut s, &method, &uri, &Bytes::new(), 200, json!({"url": url, "shards": 1, "session_start_limit": limit}))
}

async fn me(AxState(st): AxState<Shared>, method: Method, uri: Uri, headers: HeaderMap) -> Response {
    let mut s = lock(&st);
    if let Some(r) = refuse(&mut s, &method, &uri, &headers, &Bytes::new()) {
        return r;
    }
    let mut user = bot_user();
    user["verified"] = json!(true);
    user["mfa_enabled"] = json!(false);
    user["flags"] = json!(0);
    answer(&mut s, &method, &uri, &Bytes::new(), 200, user)
}

async fn create(
    AxState(st): AxState<Shared>,
    Path(channel): Path<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let ctype = headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    let parts = files::parse(&ctype, &body);
    // The JSON of the message: the body, or the `payload_json` part of a multipart body.
    let payload = match &parts {
        Some(parts) => parts.iter().find(|p| p.name == "payload_json").map(|p| p.data.clone()).unwrap_or_default(),
        None => body.clone(),
    };
    let mut s = lock(&st);
    if let Some(r) = refuse(&mut s, &method, &uri, &headers, &payload) {
        return r;
    }
    if ctype.starts_with("multipart/") && parts.is_none() {
        let bad = json!({"message": "Invalid Form Body", "code": 50035});
        return answer(&mut s, &method, &uri, &payload, 400, bad);
    }
    let uploads: Vec<files::Part> =
        parts.unwrap_or_default().into_iter().filter(|p| p.name.starts_with("files[")).collect();
    if uploads.iter().any(|p| p.data.len() > files::UPLOAD_LIMIT) {
        let big = json!({"message": "Request entity too large", "code": 40005});
        return answer(&mut s, &method, &uri, &payload, 413, big);
    }
    let req: Value = serde_json::from_slice(&payload).unwrap_or_default();
    let nonce = req["nonce"].as_str().map(str::to_string);
    if req["enforce_nonce"] == true {
        let same = s.messages.iter().find(|m| m.channel_id == channel && m.nonce.is_some() && m.nonce == nonce);
        if let Some(m) = same.map(|m| m.json.clone()) {
            return answer(&mut s, &method, &uri, &payload, 200, m);
        }
    }
    if uploads.is_empty() && req["content"].as_str().unwrap_or("").is_empty() {
        let empty = json!({"message": "Cannot send an empty message", "code": 50006});
        return answer(&mut s, &method, &uri, &payload, 400, empty);
    }
    let id = next_snowflake(&mut s);
    let content = req["content"].as_str().unwrap_or("").to_string();
    let mut json = message(&id, &channel, &bot_user(), &content);
    let base = format!("http://{}", headers.get("host").and_then(|v| v.to_str().ok()).unwrap_or("127.0.0.1"));
    let mut sent = Vec::new();
    for p in uploads {
        // The attachment metadata names the file by its placeholder id: files[<id>].
        let n = p.name.trim_start_matches("files[").trim_end_matches(']').to_string();
        let meta =
            req["attachments"].as_array().into_iter().flatten().find(|a| a["id"].to_string().trim_matches('"') == n);
        let name = meta.and_then(|a| a["filename"].as_str()).or(p.filename.as_deref()).unwrap_or("unknown").to_string();
        let object = files::store(&mut s, &base, &channel, &name, p.content_type.as_deref(), p.data.clone());
        sent.push(files::StoredFile {
            id: object["id"].as_str().unwrap().to_string(),
            channel: channel.clone(),
            filename: name,
            content_type: p.content_type.clone(),
            bytes: p.data,
        });
        json["attachments"].as_array_mut().unwrap().push(object);
    }
    json["components"] = req.get("components").cloned().unwrap_or(json!([]));
    json["nonce"] = req["nonce"].clone();
    let reply_to = req["message_reference"]["message_id"].as_str().map(str::to_string);
    if let Some(to) = &reply_to {
        json["type"] = json!(19);
        json["message_reference"] = req["message_reference"].clone();
        json["referenced_message"] =
            s.messages.iter().find(|m| &m.id == to).map(|m| m.json.clone()).unwrap_or(Value::Null);
    }
    s.messages.push(Msg {
        id,
        channel_id: channel,
        author_id: super::BOT_ID.into(),
        content,
        components: json["components"].clone(),
        nonce,
        flags: 0,
        interaction: None,
        reply_to,
        writes: vec![Instant::now()],
        json: json.clone(),
        files: sent,
    });
    // Discord echoes the bot's own messages on the gateway.
    dispatch(&mut s, "MESSAGE_CREATE", json.clone());
    answer(&mut s, &method, &uri, &payload, 200, json)
}

async fn edit(
    AxState(st): AxState<Shared>,
    Path((_channel, id)): Path<(String, String)>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mut s = lock(&st);
    if let Some(r) = refuse(&mut s, &method, &uri, &headers, &body) {
        return r;
    }
    let req: Value = serde_json::from_slice(&body).unwrap_or_default();
    let Some(m) = s.messages.iter_mut().find(|m| m.id == id) else {
        return answer(&mut s, &method, &uri, &body, 404, json!({"message": "Unknown Message", "code": 10008}));
    };
    if let Some(c) = req["content"].as_str() {
        m.content = c.to_string();
        m.json["content"] = json!(c);
    }
    if let Some(c) = req.get("components") {
        m.components = c.clone();
        m.json["components"] = c.clone();
    }
    m.json["edited_timestamp"] = json!("2024-01-01T00:00:01.000000+00:00");
    m.writes.push(Instant::now());
    let json = m.json.clone();
    answer(&mut s, &method, &uri, &body, 200, json)
}

async fn typing(AxState(st): AxState<Shared>, method: Method, uri: Uri, headers: HeaderMap) -> Response {
    let mut s = lock(&st);
    if let Some(r) = refuse(&mut s, &method, &uri, &headers, &Bytes::new()) {
        return r;
    }
    answer(&mut s, &method, &uri, &Bytes::new(), 204, Value::Null)
}

async fn callback(
    AxState(st): AxState<Shared>,
    Path((id, token)): Path<(String, String)>,
    method: Method,
    uri: Uri,
    body: Bytes,
) -> Response {
    let mut s = lock(&st);
    let req: Value = serde_json::from_slice(&body).unwrap_or_default();
    if s.tokens.get(&token).map(|(i, _)| i) != Some(&id) {
        return answer(&mut s, &method, &uri, &body, 404, json!({"message": "Unknown interaction", "code": 10062}));
    }
    if !s.acked.insert(id.clone()) {
        let refused = json!({"message": "Interaction has already been acknowledged.", "code": 40060});
        return answer(&mut s, &method, &uri, &body, 400, refused);
    }
    s.callbacks.push((Instant::now(), id, req["type"].as_u64().unwrap_or(0)));
    answer(&mut s, &method, &uri, &body, 204, Value::Null)
}

async fn followup(
    AxState(st): AxState<Shared>,
    Path((_app, token)): Path<(String, String)>,
    method: Method,
    uri: Uri,
    body: Bytes,
) -> Response {
    let mut s = lock(&st);
    let req: Value = serde_json::from_slice(&body).unwrap_or_default();
    let known = s.tokens.get(&token).cloned().filter(|(i, _)| s.acked.contains(i));
    let Some((interaction, channel)) = known else {
        return answer(&mut s, &method, &uri, &body, 404, json!({"message": "Unknown Webhook", "code": 10015}));
    };
    let id = next_snowflake(&mut s);
    let content = req["content"].as_str().unwrap_or("").to_string();
    let mut json = message(&id, &channel, &bot_user(), &content);
    let flags = req["flags"].as_u64().unwrap_or(0);
    json["flags"] = json!(flags);
    json["components"] = json!([]);
    s.messages.push(Msg {
        id,
        channel_id: channel,
        author_id: super::BOT_ID.into(),
        content,
        components: json!([]),
        nonce: None,
        flags,
        interaction: Some(interaction),
        reply_to: None,
        writes: vec![Instant::now()],
        json: json.clone(),
        files: Vec::new(),
    });
    answer(&mut s, &method, &uri, &body, 200, json)
}

async fn edit_followup(
    AxState(st): AxState<Shared>,
    Path((_app, _token, id)): Path<(String, String, String)>,
    method: Method,
    uri: Uri,
    body: Bytes,
) -> Response {
    let mut s = lock(&st);
    let req: Value = serde_json::from_slice(&body).unwrap_or_default();
    let Some(m) = s.messages.iter_mut().find(|m| m.id == id) else {
        return answer(&mut s, &method, &uri, &body, 404, json!({"message": "Unknown Message", "code": 10008}));
    };
    if let Some(c) = req["content"].as_str() {
        m.content = c.to_string();
        m.json["content"] = json!(c);
    }
    m.writes.push(Instant::now());
    let json = m.json.clone();
    answer(&mut s, &method, &uri, &body, 200, json)
}
