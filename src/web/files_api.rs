//! Files over the web chat API: `POST /api/v1/files` takes one file as the raw request body
//! (its name in `?name=`, its type in `Content-Type`) and streams it to the upload store under
//! `[media] max_bytes`; `GET /api/v1/files/{id}` gives a file back to whoever may see it (the
//! uploader, or the owner of the conversation Butler sent it in).
//!
//! The upload route is served outside the server's body limit (it has its own, larger, cap and
//! never buffers). A file is never served in a way the browser could run: everything but
//! common images is an attachment, with `nosniff` and a sandboxing CSP.

use super::api::{web_caller, WebState};
use super::uploads::{valid_id, FileMeta, UploadError, MIN_BYTES_PER_WINDOW};
use crate::http::{ApiError, ApiPath, ApiQuery};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;

/// Types a browser may show inline; every other file is served as a download.
const INLINE: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UploadQuery {
    name: Option<String>,
    user: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileQuery {
    user: Option<String>,
}

/// `POST /api/v1/files`: to be served outside the body limit.
pub(crate) fn upload_routes(state: WebState) -> Router {
    Router::new().route("/api/v1/files", post(upload)).with_state(state)
}

/// `GET /api/v1/files/{id}`.
pub(crate) fn download_routes(state: WebState) -> Router {
    Router::new().route("/api/v1/files/{id}", get(download)).with_state(state)
}

/// The JSON the API gives for a file.
pub(crate) fn file_json(meta: &FileMeta) -> serde_json::Value {
    json!({"id": meta.id, "name": meta.name, "mime": meta.mime, "size": meta.size, "url": format!("/api/v1/files/{}", meta.id)})
}

fn upload_error(e: UploadError) -> ApiError {
    match e {
        UploadError::TooLarge { max } => ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "file_too_large",
            format!("the file is larger than the {} limit ([media] max_bytes)", crate::media::human_size(max)),
        ),
        UploadError::Broken => ApiError::bad_request("the upload broke off before its end; send it again"),
        UploadError::Stalled => ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "request_timeout",
            format!(
                "the upload came too slowly (less than {} in [server] body_timeout_secs); send it again",
                crate::media::human_size(MIN_BYTES_PER_WINDOW)
            ),
        ),
        UploadError::Disk(e) => ApiError::unavailable(e),
    }
}

async fn upload(
    State(s): State<WebState>,
    ApiQuery(q): ApiQuery<UploadQuery>,
    req: Request,
) -> Result<Response, ApiError> {
    let headers = req.headers().clone();
    let owner = web_caller(&s, &headers, q.user.as_deref())?;
    let name = q.name.as_deref().unwrap_or("file");
    if name.chars().count() > 255 {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_fields",
            "`name` is longer than 255 characters",
        ));
    }
    let mime = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let declared =
        headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse().ok());
    let body = req.into_body().into_data_stream();
    match s.uploads.save(&owner, name, mime, declared, body).await {
        Ok(meta) => {
            tracing::info!(file = %meta.id, size = meta.size, "web upload stored");
            Ok((StatusCode::CREATED, Json(file_json(&meta))).into_response())
        }
        Err(e) => {
            let mut resp = upload_error(e).into_response();
            // The rest of a refused body is not wanted.
            resp.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
            Ok(resp)
        }
    }
}

async fn download(
    State(s): State<WebState>,
    headers: HeaderMap,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<FileQuery>,
) -> Result<Response, ApiError> {
    let missing = || ApiError::new(StatusCode::NOT_FOUND, "unknown_file", "no such file");
    if !valid_id(&id) {
        return Err(missing());
    }
    let meta = s.uploads.get(&id).await.ok_or_else(missing)?;
    let caller = web_caller(&s, &headers, q.user.as_deref())?;
    // Locally the machine reads everything (as with conversations); with tokens only the
    // uploader, or the owner of the conversation a sent file is in.
    if !s.auth.is_local() {
        let allowed = match (&meta.owner, &meta.conversation) {
            (Some(owner), _) => *owner == caller,
            (None, Some(conv)) => {
                let row = s.store.users.conversation_get(conv).await.map_err(ApiError::unavailable)?;
                match row {
                    Some(r) => super::conversations::is_theirs(&s.store, &r.owner, &caller).await?,
                    None => false,
                }
            }
            (None, None) => false,
        };
        if !allowed {
            return Err(missing());
        }
    }
    let file = s
        .uploads
        .open_file(&meta)
        .await
        .map_err(|_| ApiError::new(StatusCode::GONE, "file_gone", "the file is no longer kept"))?;
    let body = Body::from_stream(tokio_util::io::ReaderStream::new(file));
    let inline = INLINE.contains(&meta.mime.as_str());
    let kind = if inline { meta.mime.as_str() } else { "application/octet-stream" };
    let disposition =
        format!("{}; filename=\"{}\"", if inline { "inline" } else { "attachment" }, header_name(&meta.name));
    let mut resp = Response::new(body);
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_str(kind).unwrap_or(HeaderValue::from_static("application/octet-stream")),
    );
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(meta.size));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static("sandbox; default-src 'none'"));
    if let Ok(v) = HeaderValue::from_str(&disposition) {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    Ok(resp)
}

/// A file name fit for a quoted `Content-Disposition` value: printable ASCII without quotes or
/// backslashes (others become `_`).
fn header_name(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' { c } else { '_' }).collect()
}

#[cfg(test)]
mod tests {
    use super::header_name;

    #[test]
    fn names_in_headers_are_plain_ascii() {
        let cases =
            [("report.pdf", "report.pdf"), ("a \"b\".txt", "a _b_.txt"), ("café.png", "caf_.png"), ("x\r\ny", "x__y")];
        for (name, want) in cases {
            assert_eq!(header_name(name), want, "{name:?}");
        }
    }
}
