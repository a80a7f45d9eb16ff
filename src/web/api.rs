//! The web chat HTTP API and page. Every request is validated before anything is stored; a bad
//! one gets a 4xx JSON error and changes nothing.

use super::channel::message_json;
use super::conversations;
use super::stores::WebStores;
use super::{WebAuth, WebHub};
use crate::http::{ApiError, ApiJson, ApiPath, ApiQuery};
use crate::ids::WEB_CHANNEL as CHANNEL;
use crate::store::{now_ms, ConversationRow, NewWebMessage};
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, patch, post};
use axum::{Json, Router};
use butler_channel::{
    Accepted, Actor, Attachment, ConversationKind, ConversationRef, EventBody, EventId, Identity, InboundEvent,
    Ingress, IngressError, MediaKind,
};
use futures::Stream;
use futures::StreamExt;
use serde::Deserialize;
use serde_json::json;
use std::convert::Infallible;
use std::sync::Arc;
use tokio_stream::wrappers::errors::BroadcastStreamRecvError;
use tokio_util::sync::CancellationToken;

const MAX_TEXT_CHARS: usize = 32_000;
/// Most files one message may carry.
const MAX_FILES: usize = 10;

/// What the page shows about the model.
#[derive(Clone, Debug)]
pub(crate) struct PageInfo {
    pub llm_configured: bool,
    pub provider: String,
    pub model: String,
}

/// Owners of conversations seen recently (an owner never changes), so a busy conversation does
/// not cost a database read per message.
#[derive(Default)]
pub(crate) struct OwnerCache(std::sync::Mutex<std::collections::HashMap<String, String>>);

/// Enough for every conversation busy at once; small enough that an idle process does not keep
/// a burst's worth of owners (10,000 were about 2 MB).
const OWNER_CACHE_MAX: usize = 1_024;

impl OwnerCache {
    fn get(&self, conv: &str) -> Option<String> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).get(conv).cloned()
    }

    fn put(&self, conv: &str, owner: &str) {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= OWNER_CACHE_MAX {
            map.clear();
        }
        map.insert(conv.to_string(), owner.to_string());
    }
}

#[derive(Clone)]
pub(crate) struct WebState {
    pub(super) store: Arc<WebStores>,
    ingress: Arc<dyn Ingress>,
    pub(super) hub: Arc<WebHub>,
    pub(super) auth: WebAuth,
    info: PageInfo,
    /// Ends open event streams on shutdown.
    pub(super) shutdown: CancellationToken,
    owners: Arc<OwnerCache>,
    /// Files people upload and files Butler sends here.
    pub(super) uploads: Arc<super::Uploads>,
}

impl WebState {
    /// The state the web routes share; `shutdown` ends open event streams.
    pub(crate) fn new(
        store: Arc<WebStores>,
        ingress: Arc<dyn Ingress>,
        hub: Arc<WebHub>,
        auth: WebAuth,
        info: PageInfo,
        shutdown: CancellationToken,
        uploads: Arc<super::Uploads>,
    ) -> Self {
        Self { store, ingress, hub, auth, info, shutdown, owners: Default::default(), uploads }
    }
}

pub(crate) fn routes(state: WebState) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/assets/app.js", get(app_js))
        .route("/assets/markdown.js", get(markdown_js))
        .route("/assets/files.js", get(files_js))
        .route("/assets/panels.js", get(panels_js))
        .route("/assets/style.css", get(style_css))
        .route("/api/v1/info", get(info))
        .route("/api/v1/messages", post(post_message))
        .route("/api/v1/actions", post(post_action))
        .route("/api/v1/conversations", get(conversations_list))
        .route("/api/v1/conversations/{id}", patch(conversation_rename).delete(conversation_remove))
        .route("/api/v1/conversations/{id}/messages", get(list_messages))
        .route("/api/v1/conversations/{id}/stream", get(stream))
        .with_state(state)
}

async fn page() -> impl IntoResponse {
    (
        [(
            header::CONTENT_SECURITY_POLICY,
            "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'",
        )],
        Html(include_str!("assets/index.html")),
    )
}

async fn app_js() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8")], include_str!("assets/app.js"))
}

async fn markdown_js() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8")], include_str!("assets/markdown.js"))
}

async fn files_js() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8")], include_str!("assets/files.js"))
}

async fn panels_js() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8")], include_str!("assets/panels.js"))
}

async fn style_css() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], include_str!("assets/style.css"))
}

async fn info(State(s): State<WebState>) -> impl IntoResponse {
    // The page already says "no model configured": the hint says only what to do.
    let hint = (!s.info.llm_configured).then_some(
        "Set OPENAI_API_KEY (with BUTLER_MODEL; OPENAI_BASE_URL for other servers), or ANTHROPIC_API_KEY, or \
         [llm] in the config file (`butler init` writes one), then restart Butler.",
    );
    Json(json!({
        "llm": {"configured": s.info.llm_configured, "provider": s.info.provider, "model": s.info.model, "hint": hint},
        "auth": if s.auth.is_local() { "local" } else { "token" },
        "user": if s.auth.is_local() { Some(super::auth::LOCAL_USER) } else { None },
        "files": {"max_bytes": s.uploads.max_bytes(), "max_per_message": MAX_FILES},
    }))
}

/// A name safe to use as a conversation, user or client message id.
pub(super) fn check_name(field: &str, value: &str, max: usize) -> Result<(), ApiError> {
    let ok = !value.is_empty()
        && value.len() <= max
        && value.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '@'));
    if ok {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_fields",
            format!("`{field}` must be 1 to {max} characters of letters, digits, - _ . @"),
        ))
    }
}

pub(super) fn conversation_id(raw: &str) -> Result<String, ApiError> {
    let id = raw.strip_prefix("web:").unwrap_or(raw);
    check_name("conversation", id, 64)?;
    Ok(id.to_string())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PostMessage {
    conversation: String,
    user: Option<String>,
    /// Required (may be empty when `files` is not).
    text: String,
    /// Client-chosen id: a retried POST with the same id is stored once.
    id: Option<String>,
    /// Ids of files uploaded with POST /api/v1/files, attached to the message.
    #[serde(default)]
    files: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PostAction {
    conversation: String,
    user: Option<String>,
    action: String,
    /// Client-chosen id: a retried click with the same id counts once.
    id: Option<String>,
}

/// Resolves who is asking and checks they may use conversation `conv`. Returns the user and
/// whether the conversation exists.
async fn authorize(
    s: &WebState,
    headers: &HeaderMap,
    claimed: Option<&str>,
    conv: &str,
) -> Result<(String, bool), ApiError> {
    if let Some(u) = claimed {
        check_name("user", u.strip_prefix("web:").unwrap_or(u), 64)?;
    }
    let user = s.auth.user(headers, claimed)?;
    let id = format!("{CHANNEL}:{conv}");
    let owner = match s.owners.get(&id) {
        Some(owner) => Some(owner),
        None => {
            let row = s.store.users.conversation_get(&id).await.map_err(ApiError::unavailable)?;
            if let Some(r) = &row {
                s.owners.put(&id, &r.owner);
            }
            row.map(|r| r.owner)
        }
    };
    match owner {
        Some(o) if !conversations::is_theirs(&s.store, &o, &format!("{CHANNEL}:{user}")).await? => {
            Err(ApiError::new(StatusCode::FORBIDDEN, "forbidden", "this conversation belongs to someone else"))
        }
        Some(_) => Ok((user, true)),
        None => Ok((user, false)),
    }
}

fn event(conv: &str, user: &str, id: String, body: EventBody, attachments: Vec<Attachment>) -> InboundEvent {
    InboundEvent {
        id: EventId(id),
        actor: Actor::new(Identity::new(CHANNEL, user)),
        conversation: ConversationRef::new(CHANNEL, conv),
        kind: ConversationKind::Direct,
        addressed: true,
        reply_to: None,
        message_id: None,
        body,
        at_ms: now_ms(),
        attachments,
    }
}

fn accepted(id: &str, outcome: Accepted) -> Response {
    let duplicate = outcome == Accepted::Duplicate;
    (StatusCode::ACCEPTED, Json(json!({"event_id": id, "duplicate": duplicate}))).into_response()
}

fn ingress_error(e: IngressError) -> ApiError {
    match e {
        IngressError::Invalid(m) => ApiError::bad_request(m),
        IngressError::Unavailable(m) => ApiError::unavailable(m),
    }
}

async fn post_message(
    State(s): State<WebState>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<PostMessage>,
) -> Result<Response, ApiError> {
    let conv = conversation_id(&body.conversation)?;
    let (event_id, outcome) =
        submit_message(&s, &headers, &conv, body.user.as_deref(), &body.text, body.id.as_deref(), &body.files).await?;
    Ok(accepted(&event_id, outcome))
}

/// Checks and stores a user's message in web conversation `conv` (creating it for them) and
/// hands it to the ingress: POST /api/v1/messages and the OpenAI API's chat completions.
/// `files`: ids of the user's own uploads, attached to the message. Returns the event id and
/// whether it was new.
pub(super) async fn submit_message(
    s: &WebState,
    headers: &HeaderMap,
    conv: &str,
    claimed: Option<&str>,
    text: &str,
    client_id: Option<&str>,
    files: &[String],
) -> Result<(String, Accepted), ApiError> {
    let text = checked_text(text, client_id, files)?;
    let text = text.as_str();
    let (user, exists) = authorize(s, headers, claimed, conv).await?;
    let identity = format!("{CHANNEL}:{user}");
    let attachments = attachments(s, &identity, files).await?;
    if !exists {
        super::names::may_create(conv, &user)?;
        let row = ConversationRow {
            id: format!("{CHANNEL}:{conv}"),
            kind: ConversationKind::Direct,
            owner: identity.clone(),
            created_ms: now_ms(),
        };
        let stored = s.store.users.conversation_ensure(&row).await.map_err(ApiError::unavailable)?;
        s.owners.put(&stored.id, &stored.owner);
        if stored.owner != identity {
            return Err(ApiError::new(StatusCode::FORBIDDEN, "forbidden", "this conversation belongs to someone else"));
        }
    }
    let event_id = match client_id {
        Some(id) => format!("{CHANNEL}:{conv}:{id}"),
        None => format!("{CHANNEL}:{}", uuid::Uuid::new_v4()),
    };
    // The user's own message goes into the page's log first, so it always sorts before the
    // reply (idempotent on the event id, so a retried POST shows it once).
    let shown = NewWebMessage {
        conversation: format!("{CHANNEL}:{conv}"),
        key: event_id.clone(),
        role: "user".into(),
        author: user.clone(),
        text: shown_text(text, &attachments),
        buttons: vec![],
    };
    let row = s.store.messages.web_insert(&shown).await.map_err(ApiError::unavailable)?;
    let ev = event(conv, &user, event_id.clone(), EventBody::Message { text: text.to_string() }, attachments);
    let outcome = s.ingress.accept(ev).await.map_err(ingress_error)?;
    if outcome == Accepted::New {
        s.hub.publish(&shown.conversation, "created", message_json(&row));
    }
    Ok((event_id, outcome))
}

/// A message's own checks, before anything is looked up: its text is made storable before any
/// check or write, exactly as ingress does (so the page's log and the inbox hold the same text on
/// every backend), and comes back trimmed.
fn checked_text(text: &str, client_id: Option<&str>, files: &[String]) -> Result<String, ApiError> {
    let text = butler_channel::storable_text(text);
    let text = text.trim();
    if text.is_empty() && files.is_empty() {
        return Err(ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "empty_text", "`text` is empty"));
    }
    if files.len() > MAX_FILES {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "too_many_files",
            format!("a message carries at most {MAX_FILES} files"),
        ));
    }
    if text.chars().count() > MAX_TEXT_CHARS {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "text_too_long",
            format!("`text` is longer than {MAX_TEXT_CHARS} characters"),
        ));
    }
    if let Some(id) = client_id {
        check_name("id", id, 100)?;
    }
    Ok(text.to_string())
}

/// The attachments for upload ids `files`: each must be an upload of `identity`.
async fn attachments(s: &WebState, identity: &str, files: &[String]) -> Result<Vec<Attachment>, ApiError> {
    let mut out = Vec::with_capacity(files.len());
    for id in files {
        let meta = s.uploads.get(id).await.filter(|m| m.owner.as_deref() == Some(identity)).ok_or_else(|| {
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "unknown_file",
                "`files` names a file that is not one of your uploads (upload it with POST /api/v1/files first)",
            )
        })?;
        let mut a = Attachment::new(kind_of(&meta.mime), meta.id.clone());
        a.mime = Some(meta.mime.clone());
        a.size = Some(meta.size);
        a.name = Some(meta.name.clone());
        out.push(a);
    }
    Ok(out)
}

/// The kind of an upload, from the type the browser gave (the media component sniffs again).
fn kind_of(mime: &str) -> MediaKind {
    match mime.split('/').next().unwrap_or("") {
        "image" => MediaKind::Image,
        "audio" => MediaKind::Audio,
        "video" => MediaKind::Video,
        _ => MediaKind::Document,
    }
}

/// The user's message as the page shows it: the text, then a `📎` line per file.
fn shown_text(text: &str, files: &[Attachment]) -> String {
    let mut out = text.to_string();
    for a in files {
        if !out.is_empty() {
            out.push('\n');
        }
        let size = crate::media::human_size(a.size.unwrap_or(0));
        out.push_str(&format!("📎 {} ({size})", a.name.as_deref().unwrap_or("file")));
    }
    out
}

async fn post_action(
    State(s): State<WebState>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<PostAction>,
) -> Result<Response, ApiError> {
    let conv = conversation_id(&body.conversation)?;
    checked_action(&body.action, body.id.as_deref())?;
    let (user, exists) = authorize(&s, &headers, body.user.as_deref(), &conv).await?;
    if !exists {
        return Err(ApiError::new(StatusCode::NOT_FOUND, "unknown_conversation", "no such conversation"));
    }
    super::conversations::check_live_action(&s.store, &format!("{CHANNEL}:{conv}"), &body.action).await?;
    let event_id = match &body.id {
        Some(id) => format!("{CHANNEL}:{conv}:action:{id}"),
        None => format!("{CHANNEL}:action:{}", uuid::Uuid::new_v4()),
    };
    let ev = event(
        &conv,
        &user,
        event_id.clone(),
        EventBody::Action { action: body.action, message: None, interaction: None },
        Vec::new(),
    );
    let outcome = s.ingress.accept(ev).await.map_err(ingress_error)?;
    Ok(accepted(&event_id, outcome))
}

/// A click's own checks, before anything is looked up.
fn checked_action(action: &str, client_id: Option<&str>) -> Result<(), ApiError> {
    if action.is_empty() || action.len() > 200 {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_fields",
            "`action` must be 1 to 200 characters",
        ));
    }
    client_id.map_or(Ok(()), |id| check_name("id", id, 100))
}

/// For the fuzz targets (`fuzz/`): reads `req` as route `route` (`messages`, `actions`,
/// `conversations`: the JSON bodies of POST and PATCH) reads its body, with the checks that route
/// makes before it looks at the store or the caller. `Err`: the API error's status and code.
#[doc(hidden)]
pub async fn check_body(route: &str, req: axum::extract::Request) -> Result<(), (u16, &'static str)> {
    use axum::extract::FromRequest;
    let code = |e: ApiError| (e.status.as_u16(), e.code);
    let user = |u: &Option<String>| {
        u.as_deref().map_or(Ok(()), |u| check_name("user", u.strip_prefix("web:").unwrap_or(u), 64))
    };
    match route {
        "messages" => {
            let ApiJson(b) = ApiJson::<PostMessage>::from_request(req, &()).await.map_err(code)?;
            conversation_id(&b.conversation).map_err(code)?;
            checked_text(&b.text, b.id.as_deref(), &b.files).map_err(code)?;
            user(&b.user).map_err(code)
        }
        "actions" => {
            let ApiJson(b) = ApiJson::<PostAction>::from_request(req, &()).await.map_err(code)?;
            conversation_id(&b.conversation).map_err(code)?;
            checked_action(&b.action, b.id.as_deref()).map_err(code)?;
            user(&b.user).map_err(code)
        }
        "conversations" => {
            let ApiJson(b) = ApiJson::<conversations::Rename>::from_request(req, &()).await.map_err(code)?;
            conversations::clean_title(b.title.as_deref()).map_err(code)?;
            user(&b.user).map_err(code)
        }
        _ => Err((404, "not_found")),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListQuery {
    after: Option<i64>,
    limit: Option<usize>,
}

/// The stored id of conversation `raw` if the caller may read it. In local mode reading is open
/// to the local machine; in token mode only to the conversation's owner.
async fn existing_conversation(s: &WebState, headers: &HeaderMap, raw: &str) -> Result<String, ApiError> {
    let conv = conversation_id(raw)?;
    let user = s.auth.user(headers, None)?;
    let row = s
        .store
        .users
        .conversation_get(&format!("{CHANNEL}:{conv}"))
        .await
        .map_err(ApiError::unavailable)?
        .ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, "unknown_conversation", "no such conversation"))?;
    if !s.auth.is_local() && !conversations::is_theirs(&s.store, &row.owner, &format!("{CHANNEL}:{user}")).await? {
        return Err(ApiError::new(StatusCode::FORBIDDEN, "forbidden", "this conversation belongs to someone else"));
    }
    Ok(row.id)
}

async fn list_messages(
    State(s): State<WebState>,
    headers: HeaderMap,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> Result<Response, ApiError> {
    let conv = existing_conversation(&s, &headers, &id).await?;
    let limit = q.limit.unwrap_or(200);
    if !(1..=1000).contains(&limit) {
        return Err(ApiError::bad_request("`limit` must be between 1 and 1000"));
    }
    // A deleted conversation shows only what came after the delete.
    let hidden =
        s.store.conversations.web_conversation(&conv).await.map_err(ApiError::unavailable)?.and_then(|c| c.hidden_upto);
    let after = q.after.unwrap_or(0).max(hidden.unwrap_or(0));
    let rows = s.store.messages.web_list(&conv, after, limit).await.map_err(ApiError::unavailable)?;
    let messages: Vec<_> = rows.iter().map(message_json).collect();
    Ok(Json(json!({"conversation": conv, "messages": messages})).into_response())
}

async fn stream(
    State(s): State<WebState>,
    headers: HeaderMap,
    ApiPath(id): ApiPath<String>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let conv = existing_conversation(&s, &headers, &id).await?;
    let shutdown = s.shutdown.clone();
    let events = s
        .hub
        .subscribe(&conv)
        // That an event settled is for the APIs that wait on one; the page follows messages.
        .filter(|item| std::future::ready(!matches!(item, Ok(ev) if ev.kind == super::hub::SETTLED)))
        .map(|item| match item {
            Ok(ev) => Event::default().event(ev.kind).data(ev.data.to_string()),
            // Too slow: tell the page to reload the list.
            Err(BroadcastStreamRecvError::Lagged(n)) => Event::default().event("lagged").data(n.to_string()),
        })
        .map(Ok)
        .take_until(async move { shutdown.cancelled().await });
    Ok(Sse::new(events).keep_alive(KeepAlive::default()))
}

/// The caller's web identity (`web:<user>`): the token's, or locally `claimed` (default `local`).
pub(super) fn web_caller(s: &WebState, headers: &HeaderMap, claimed: Option<&str>) -> Result<String, ApiError> {
    if let Some(u) = claimed {
        check_name("user", u.strip_prefix("web:").unwrap_or(u), 64)?;
    }
    Ok(format!("{CHANNEL}:{}", s.auth.user(headers, claimed)?))
}

async fn conversations_list(
    State(s): State<WebState>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<conversations::ListQuery>,
) -> Result<Response, ApiError> {
    let owner = web_caller(&s, &headers, q.user.as_deref())?;
    conversations::list(&s.store, &owner, q.limit).await
}

async fn conversation_rename(
    State(s): State<WebState>,
    headers: HeaderMap,
    ApiPath(raw): ApiPath<String>,
    ApiQuery(q): ApiQuery<conversations::UserQuery>,
    ApiJson(body): ApiJson<conversations::Rename>,
) -> Result<Response, ApiError> {
    let title = conversations::clean_title(body.title.as_deref())?;
    let conv = conversation_id(&raw)?;
    let owner = web_caller(&s, &headers, body.user.as_deref().or(q.user.as_deref()))?;
    conversations::rename(&s.store, &owner, &conv, title).await
}

async fn conversation_remove(
    State(s): State<WebState>,
    headers: HeaderMap,
    ApiPath(raw): ApiPath<String>,
    ApiQuery(q): ApiQuery<conversations::UserQuery>,
) -> Result<Response, ApiError> {
    let conv = conversation_id(&raw)?;
    let owner = web_caller(&s, &headers, q.user.as_deref())?;
    conversations::remove(&s.store, &owner, &conv).await
}
