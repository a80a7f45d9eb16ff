//! The web chat's conversation list: `GET /api/v1/conversations` (the caller's conversations,
//! latest activity first, each with a title and a mark when Butler wrote there on its own),
//! `PATCH /api/v1/conversations/{id}` (rename) and `DELETE /api/v1/conversations/{id}` (hide
//! it and its messages from the page), and the check that a click presses a live button.
//!
//! Same identity rules as the rest of the API: the bearer token decides, or on loopback without
//! tokens `?user=NAME` (default `local`). It must never show or change another owner's
//! conversation: those answer 404 exactly like unknown ids.

use super::stores::WebStores;
use crate::http::ApiError;
use crate::ids::WEB_CHANNEL as CHANNEL;
use crate::store::{ApprovalStatus, WebConversation};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

/// Longest automatic title, in characters (an ellipsis is added when cut).
const TITLE_CHARS: usize = 60;
/// Longest title a user may give.
const MAX_TITLE_CHARS: usize = 100;
const DEFAULT_LIMIT: usize = 100;
const MAX_LIMIT: usize = 500;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ListQuery {
    pub(super) user: Option<String>,
    pub(super) limit: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct UserQuery {
    pub(super) user: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Rename {
    /// The new title; `null` goes back to the automatic one.
    pub(super) title: Option<String>,
    pub(super) user: Option<String>,
}

fn not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "unknown_conversation", "no such conversation")
}

/// The automatic title: the first line of `text`, spaces collapsed, cut at a word near
/// [`TITLE_CHARS`].
pub(crate) fn auto_title(text: &str) -> String {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= TITLE_CHARS {
        return line;
    }
    let cut: String = line.chars().take(TITLE_CHARS).collect();
    let cut = match cut.rfind(' ') {
        Some(space) if space >= TITLE_CHARS / 2 => cut[..space].to_string(),
        _ => cut,
    };
    format!("{}…", cut.trim_end_matches(|c: char| c.is_whitespace() || ",.;:-".contains(c)))
}

fn entry_json(c: &WebConversation) -> Value {
    let auto = c.first_text.as_deref().map(auto_title).filter(|t| !t.is_empty());
    let title = c.title.clone().or(auto).unwrap_or_else(|| "New conversation".into());
    json!({
        "id": c.id.strip_prefix("web:").unwrap_or(&c.id),
        "title": title,
        "renamed": c.title.is_some(),
        "created_ms": c.created_ms,
        "last_ms": c.last_ms,
        "butler": c.butler_ms.is_some(),
        "butler_ms": c.butler_ms,
    })
}

/// `GET /api/v1/conversations` for `owner` (`web:<user>`).
pub(super) async fn list(store: &WebStores, owner: &str, limit: Option<usize>) -> Result<Response, ApiError> {
    let limit = limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ApiError::bad_request(format!("`limit` must be between 1 and {MAX_LIMIT}")));
    }
    let rows = store.conversations.web_conversations(owner, limit).await.map_err(ApiError::unavailable)?;
    let list: Vec<Value> = rows.iter().map(entry_json).collect();
    Ok(Json(json!({"user": owner.strip_prefix("web:").unwrap_or(owner), "conversations": list})).into_response())
}

/// The stored id of conversation `conv` if `owner` owns it; 404 otherwise (also for someone else's).
async fn owned(store: &WebStores, owner: &str, conv: &str) -> Result<String, ApiError> {
    let id = format!("{CHANNEL}:{conv}");
    match store.users.conversation_get(&id).await.map_err(ApiError::unavailable)? {
        Some(row) if is_theirs(store, &row.owner, owner).await? => Ok(id),
        _ => Err(not_found()),
    }
}

/// Whether a conversation owned by identity `owner` is `caller`'s: the same identity, or another
/// identity of the same person (the owner's terminal made a briefing's conversation; the owner
/// reads and answers it on the web page).
pub(super) async fn is_theirs(store: &WebStores, owner: &str, caller: &str) -> Result<bool, ApiError> {
    if owner == caller {
        return Ok(true);
    }
    let (Ok(owner), Ok(caller)) =
        (owner.parse::<butler_channel::Identity>(), caller.parse::<butler_channel::Identity>())
    else {
        return Ok(false);
    };
    let person = |id| async move { store.users.identity_user(&id).await.map_err(ApiError::unavailable) };
    Ok(match (person(owner).await?, person(caller).await?) {
        (Some(a), Some(b)) => a.id == b.id,
        _ => false,
    })
}

/// A title as given (`None`: back to automatic), made storable, control characters as spaces.
pub(super) fn clean_title(title: Option<&str>) -> Result<Option<String>, ApiError> {
    let Some(t) = title else { return Ok(None) };
    let t = butler_channel::storable_text(t);
    let t: String = t.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    let t = t.trim().to_string();
    if t.is_empty() || t.chars().count() > MAX_TITLE_CHARS {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_fields",
            format!("`title` must be 1 to {MAX_TITLE_CHARS} characters, or null for the automatic title"),
        ));
    }
    Ok(Some(t))
}

/// `PATCH /api/v1/conversations/{conv}`: `title` already cleaned.
pub(super) async fn rename(
    store: &WebStores,
    owner: &str,
    conv: &str,
    title: Option<String>,
) -> Result<Response, ApiError> {
    let id = owned(store, owner, conv).await?;
    if !store.conversations.web_rename(&id, title.as_deref()).await.map_err(ApiError::unavailable)? {
        return Err(not_found());
    }
    let row = store.conversations.web_conversation(&id).await.map_err(ApiError::unavailable)?.ok_or_else(not_found)?;
    Ok(Json(entry_json(&row)).into_response())
}

/// `DELETE /api/v1/conversations/{conv}`.
pub(super) async fn remove(store: &WebStores, owner: &str, conv: &str) -> Result<Response, ApiError> {
    let id = owned(store, owner, conv).await?;
    if !store.conversations.web_hide(&id).await.map_err(ApiError::unavailable)? {
        return Err(not_found());
    }
    tracing::info!(conversation = %id, "web conversation deleted from the page");
    Ok(Json(json!({"id": conv, "deleted": true})).into_response())
}

/// Refuses a click whose action is on no button the conversation shows now (a finished
/// reply's Stop, an answered request, another conversation's button, a made-up id): 409, so
/// the page can say so at once instead of waiting for an answer that never comes.
pub(super) async fn check_live_action(store: &WebStores, conversation: &str, action: &str) -> Result<(), ApiError> {
    let live = store.conversations.web_live_buttons(conversation).await.map_err(ApiError::unavailable)?;
    if live.iter().any(|b| b.action == action) {
        return Ok(());
    }
    let mut message = "no button of this conversation has that action (any more)".to_string();
    if action.starts_with("stop:") {
        message = "that reply has already finished".into();
    } else if let Some(id) = action.strip_prefix("ap:").and_then(|rest| rest.split(':').next()) {
        let row = store.approvals.approval_get(id).await.map_err(ApiError::unavailable)?;
        if let Some(row) = row.filter(|r| r.status != ApprovalStatus::Pending) {
            message = format!("that request was already answered ({})", row.status.as_str());
        }
    }
    Err(ApiError::new(StatusCode::CONFLICT, "stale_action", message))
}

#[cfg(test)]
mod tests {
    use super::auto_title;

    #[test]
    fn automatic_titles_are_one_short_line() {
        let long = "Please summarise the quarterly report and list every open risk that the board asked about";
        let cases: &[(&str, &str)] = &[
            ("Hello Butler", "Hello Butler"),
            ("\n\n  first   line  \nsecond", "first line"),
            (long, "Please summarise the quarterly report and list every open…"),
            (&"x".repeat(80), &format!("{}…", "x".repeat(60))),
            ("   ", ""),
        ];
        for (text, want) in cases {
            assert_eq!(auto_title(text), *want, "{text:?}");
        }
    }
}
