//! API errors as JSON (`{"error": {"code", "message"}}`) and a JSON extractor whose rejections
//! become such errors. Messages describe the caller's mistake; internal details (SQL, paths,
//! secrets) are logged, never returned.

use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::de::DeserializeOwned;
use serde_json::json;

#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self { status, code, message: message.into() }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request", message)
    }

    /// A failure on our side: logged with its cause, reported without it.
    pub fn unavailable(cause: impl std::fmt::Display) -> Self {
        tracing::warn!(error = %cause, "request failed on the server side");
        Self::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", "Butler cannot store this right now; try again")
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(json!({"error": {"code": self.code, "message": self.message}}))).into_response()
    }
}

/// `Json<T>` whose rejections are [`ApiError`]s.
pub struct ApiJson<T>(pub T);

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
    let status = r.status();
    let (code, message) = match &r {
        JsonRejection::MissingJsonContentType(_) => {
            ("unsupported_media_type", "send the body as JSON with Content-Type: application/json".to_string())
        }
        JsonRejection::JsonSyntaxError(e) => {
            ("malformed_json", format!("the body is not valid JSON: {}", e.body_text()))
        }
        JsonRejection::JsonDataError(e) => {
            ("invalid_fields", format!("the JSON has wrong or missing fields: {}", e.body_text()))
        }
        _ if status == StatusCode::PAYLOAD_TOO_LARGE => {
            ("body_too_large", "the body is larger than [server] max_body_bytes allows".to_string())
        }
        _ => ("invalid_request", r.body_text()),
    };
    ApiError::new(status, code, message)
}
