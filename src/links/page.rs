//! The page an answer link opens: `GET /approve/{token}` shows what the request is and one
//! button for the link's choice; `POST` (that button) hands the press to the ingress as the
//! person the link was made for, once. A link that is not valid, has expired, was used, or
//! whose request was already answered gets a 4xx JSON error naming it.
//!
//! It must never settle a request itself, show a token in a log, or serve a page a third-party
//! site could frame.

use super::maker::Links;
use super::token::{self, Claim, TokenError};
use crate::http::{ApiError, ApiPath};
use crate::store::ApprovalStatus;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use butler_channel::{
    escape_html, Accepted, Actor, ConversationKind, ConversationRef, EventBody, EventId, Identity, InboundEvent,
    Ingress,
};
use sha2::{Digest, Sha256};
use std::sync::Arc;

#[derive(Clone)]
struct Page {
    links: Arc<Links>,
    ingress: Arc<dyn Ingress>,
}

/// The page's routes (`GET` and `POST /approve/{token}`), pressing buttons through `ingress`.
pub fn routes(links: Arc<Links>, ingress: Arc<dyn Ingress>) -> Router {
    Router::new().route("/approve/{token}", get(show).post(press)).with_state(Page { links, ingress })
}

async fn show(State(p): State<Page>, ApiPath(token): ApiPath<String>) -> Result<Response, ApiError> {
    let (claim, summary) = waiting(&p, &token).await?;
    let body = format!(
        "<p>{}</p><form method=\"post\"><button type=\"submit\">{}</button></form>\
         <p class=\"small\">This link answers once, as {}. Or answer by replying to the mail.</p>",
        escape_html(&summary),
        escape_html(&claim.label),
        escape_html(&claim.person),
    );
    Ok(page("A request waits for your answer", &body))
}

async fn press(State(p): State<Page>, ApiPath(token): ApiPath<String>) -> Result<Response, ApiError> {
    let (claim, _) = waiting(&p, &token).await?;
    let digest = hex::encode(Sha256::digest(token.as_bytes()));
    let event = InboundEvent {
        id: EventId(format!("{}:link:{}", claim.channel, &digest[..32])),
        actor: Actor::new(Identity::new(&claim.channel, &claim.person)),
        conversation: ConversationRef {
            channel: claim.channel.clone(),
            id: claim.conversation.clone(),
            thread: claim.thread.clone(),
        },
        kind: if claim.person == claim.conversation { ConversationKind::Direct } else { ConversationKind::Group },
        addressed: true,
        reply_to: None,
        message_id: None,
        body: EventBody::Action { action: claim.action.clone(), message: None, interaction: None },
        at_ms: butler_channel::now_ms(),
        attachments: Vec::new(),
    };
    match p.ingress.accept(event).await {
        Ok(Accepted::New) => {
            tracing::info!(channel = %claim.channel, "a request answered by link");
            let body =
                format!("<p>Your answer ({}) was taken. Butler goes on in your mail.</p>", escape_html(&claim.label));
            Ok(page("Thank you", &body))
        }
        Ok(Accepted::Duplicate) => Err(used()),
        Err(e) => Err(ApiError::unavailable(e)),
    }
}

/// The link's claim and its request's summary, if the link holds and the request still waits.
async fn waiting(p: &Page, token: &str) -> Result<(Claim, String), ApiError> {
    let claim = token::open(&p.links.key, token, butler_channel::now_ms()).map_err(|e| match e {
        TokenError::Invalid => ApiError::new(StatusCode::BAD_REQUEST, "invalid_link", e.to_string()),
        TokenError::Expired => ApiError::new(
            StatusCode::GONE,
            "link_expired",
            "the link has expired; answer by replying to the mail instead",
        ),
    })?;
    let id = claim.action.strip_prefix("ap:").and_then(|r| r.split(':').next()).unwrap_or_default();
    let row = p.links.approvals.approval_get(id).await.map_err(ApiError::unavailable)?;
    match row {
        Some(row) if row.status == ApprovalStatus::Pending => Ok((claim, row.summary)),
        Some(_) => Err(ApiError::new(StatusCode::CONFLICT, "already_answered", "this request was already answered")),
        None => Err(ApiError::new(StatusCode::NOT_FOUND, "unknown_request", "there is no such request any more")),
    }
}

fn used() -> ApiError {
    ApiError::new(StatusCode::CONFLICT, "link_used", "this link was already used")
}

/// A small page that no other site may frame, kept out of caches, indexes and referrers.
fn page(title: &str, body: &str) -> Response {
    let html = format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><meta name=\"viewport\" \
         content=\"width=device-width, initial-scale=1\"><title>{title}</title><style>body{{font-family:\
         system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem}}button{{font-size:1.1rem;\
         padding:.6rem 1.2rem}}.small{{color:#666;font-size:.9rem}}</style></head><body><h1>{title}</h1>{body}\
         </body></html>"
    );
    (
        [
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
            ),
            (header::CACHE_CONTROL, "no-store"),
            (header::REFERRER_POLICY, "no-referrer"),
            (header::HeaderName::from_static("x-robots-tag"), "noindex"),
        ],
        Html(html),
    )
        .into_response()
}
