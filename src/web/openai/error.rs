//! Errors of the OpenAI-compatible API in OpenAI's shape:
//! `{"error": {"message", "type", "code", "param"}}` with a 4xx status for anything the caller
//! got wrong. Like the rest of Butler's HTTP errors, a message describes the caller's mistake and
//! never carries internals (SQL, paths, secrets, tokens).

use crate::http::ApiError;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

#[derive(Debug, Clone)]
pub struct OpenAiError {
    pub status: StatusCode,
    /// OpenAI's `type`: `invalid_request_error`, `authentication_error`, ...
    pub kind: &'static str,
    pub code: &'static str,
    pub message: String,
}

impl OpenAiError {
    /// A request Butler cannot take (400, `invalid_request_error`).
    pub(super) fn invalid(code: &'static str, message: impl Into<String>) -> Self {
        Self { status: StatusCode::BAD_REQUEST, kind: "invalid_request_error", code, message: message.into() }
    }

    /// A body that is not declared JSON (415): a form or `text/plain` post could come from any
    /// web page without a preflight.
    pub(super) fn not_json() -> Self {
        Self {
            status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
            kind: "invalid_request_error",
            code: "unsupported_media_type",
            message: "send the request as JSON with Content-Type: application/json".into(),
        }
    }

    pub(super) fn not_found(code: &'static str, message: impl Into<String>) -> Self {
        Self { status: StatusCode::NOT_FOUND, kind: "not_found_error", code, message: message.into() }
    }
}

/// OpenAI's error type for a status.
fn kind_of(status: StatusCode) -> &'static str {
    match status.as_u16() {
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        429 => "rate_limit_error",
        500.. => "server_error",
        _ => "invalid_request_error",
    }
}

/// The web API's errors (auth, ownership, names, storage) in this API's shape. A 422 of the web
/// API (a field it refused) is a 400 here, as OpenAI answers a bad field.
impl From<ApiError> for OpenAiError {
    fn from(e: ApiError) -> Self {
        let status = if e.status == StatusCode::UNPROCESSABLE_ENTITY { StatusCode::BAD_REQUEST } else { e.status };
        let code = if status == StatusCode::UNAUTHORIZED { "invalid_api_key" } else { e.code };
        Self { status, kind: kind_of(status), code, message: e.message }
    }
}

impl IntoResponse for OpenAiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {"message": self.message, "type": self.kind, "code": self.code, "param": null}});
        (self.status, Json(body)).into_response()
    }
}

/// A `/v1` route called with a method it does not take.
pub(super) async fn wrong_method() -> OpenAiError {
    OpenAiError {
        status: StatusCode::METHOD_NOT_ALLOWED,
        kind: "invalid_request_error",
        code: "method_not_allowed",
        message: "this endpoint does not take that method".into(),
    }
}

/// Any other path under `/v1`.
pub(super) async fn unknown_endpoint() -> OpenAiError {
    OpenAiError::not_found(
        "unknown_url",
        "no such endpoint: Butler's OpenAI API has GET /v1/models and POST /v1/chat/completions",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn web_errors_map_to_openai_types() {
        // (web status, web code, status, type, code)
        let cases = [
            (401, "unauthorized", 401, "authentication_error", "invalid_api_key"),
            (403, "forbidden", 403, "permission_error", "forbidden"),
            (422, "text_too_long", 400, "invalid_request_error", "text_too_long"),
            (400, "invalid_request", 400, "invalid_request_error", "invalid_request"),
            (503, "unavailable", 503, "server_error", "unavailable"),
        ];
        for (from, code, status, kind, want_code) in cases {
            let e = OpenAiError::from(ApiError::new(StatusCode::from_u16(from).unwrap(), code, "m"));
            assert_eq!((e.status.as_u16(), e.kind, e.code), (status, kind, want_code), "{from} {code}");
        }
    }
}
