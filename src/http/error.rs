//! API errors as JSON (`{"error": {"code", "message", "type"}}`, the body of
//! [`butler_channel::error_body`]) and the extractors (`ApiJson`,
//! `ApiPath`, `ApiQuery`) whose rejections become such errors through one mapping,
//! [`rejection`], which the server's error-shape layer also uses for any other non-JSON error.
//! Messages describe the caller's mistake; internal details (SQL, paths, secrets) are logged,
//! never returned.

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::de::DeserializeOwned;

#[derive(Debug, Clone)]
pub(crate) struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
}

impl ApiError {
    pub(crate) fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self { status, code, message: message.into() }
    }

    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request", message)
    }

    /// A failure on our side: logged with its cause, reported without it.
    pub(crate) fn unavailable(cause: impl std::fmt::Display) -> Self {
        tracing::warn!(error = %cause, "request failed on the server side");
        Self::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", "Butler cannot store this right now; try again")
    }
}

impl ApiError {
    /// The JSON body every error response carries: `{"error": {"code", "message", "type"}}`,
    /// `type` in OpenAI's words, so OpenAI clients of `/v1` read every error the same way.
    pub(crate) fn body(&self) -> serde_json::Value {
        butler_channel::error_body(self.status.as_u16(), self.code, &self.message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(self.body())).into_response()
    }
}

/// Which part of a request could not be read (it picks the error code for a 400).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Part {
    Path,
    Query,
    Json,
    /// The body, the headers or anything else.
    Other,
}

/// The one mapping from a refused request (status and the refusal's text) to an [`ApiError`].
/// Used by the extractors below, the body limits and the layer that gives every other error
/// response of the server this shape.
pub(crate) fn rejection(status: StatusCode, part: Part, text: &str) -> ApiError {
    let text = text.trim();
    let detail = |what: &str| if text.is_empty() { what.to_string() } else { format!("{what}: {text}") };
    let (code, message) = match status {
        StatusCode::PAYLOAD_TOO_LARGE => {
            ("body_too_large", "the body is larger than [server] max_body_bytes allows".to_string())
        }
        StatusCode::UNSUPPORTED_MEDIA_TYPE => {
            ("unsupported_media_type", "send the body as JSON with Content-Type: application/json".to_string())
        }
        StatusCode::UNPROCESSABLE_ENTITY => ("invalid_fields", detail("the JSON has wrong or missing fields")),
        StatusCode::REQUEST_TIMEOUT => {
            ("request_timeout", "the request did not arrive in time ([server] body_timeout_secs)".to_string())
        }
        StatusCode::NOT_FOUND => ("not_found", "no such endpoint".to_string()),
        StatusCode::METHOD_NOT_ALLOWED => ("method_not_allowed", "this endpoint does not take that method".to_string()),
        StatusCode::BAD_REQUEST => match part {
            Part::Path => ("invalid_path", detail("the URL path is not valid")),
            Part::Query => ("invalid_query", detail("the query string is not valid")),
            Part::Json => ("malformed_json", detail("the body is not valid JSON")),
            Part::Other => ("invalid_request", detail("the request is not valid")),
        },
        s if s.is_server_error() => {
            tracing::warn!(status = s.as_u16(), error = text, "a request was refused by the server itself");
            return ApiError::new(s, "internal", "Butler could not handle this request");
        }
        _ => ("invalid_request", detail("the request is not valid")),
    };
    ApiError::new(status, code, message)
}

/// `Path<T>` whose rejections are [`ApiError`]s (e.g. `%ff` in a path segment).
pub(crate) struct ApiPath<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(v)) => Ok(Self(v)),
            Err(r) => Err(path_rejection(r)),
        }
    }
}

fn path_rejection(r: PathRejection) -> ApiError {
    // Path errors are the caller's (400), except a route that names no parameter (500).
    rejection(r.status(), Part::Path, &r.body_text())
}

/// `Query<T>` whose rejections are [`ApiError`]s.
pub(crate) struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        match Query::<T>::from_request_parts(parts, state).await {
            Ok(Query(v)) => Ok(Self(v)),
            Err(r) => Err(query_rejection(r)),
        }
    }
}

fn query_rejection(r: QueryRejection) -> ApiError {
    rejection(r.status(), Part::Query, &r.body_text())
}

/// `Json<T>` whose rejections are [`ApiError`]s.
pub(crate) struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        match Json::<T>::from_request(req, state).await {
            Ok(Json(v)) => Ok(Self(v)),
            Err(rejection) => Err(from_rejection(rejection)),
        }
    }
}

fn from_rejection(r: JsonRejection) -> ApiError {
    let part = match &r {
        JsonRejection::JsonSyntaxError(_) | JsonRejection::JsonDataError(_) => Part::Json,
        _ => Part::Other,
    };
    rejection(r.status(), part, &r.body_text())
}
