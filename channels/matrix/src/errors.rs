//! The SDK's errors as `ChannelError`s: a rate limit with its wait, refused credentials, a room
//! or event that is gone, a request the homeserver will never take, and everything else as
//! transient (network trouble, 5xx).
//!
//! It must never put a token or a message's text in the error it returns.

use butler_channel::ChannelError;
use matrix_sdk::ruma::api::error::{ErrorKind, RetryAfter};
use std::time::{Duration, SystemTime};

/// What a failed request means for the caller.
pub(crate) fn sdk(e: matrix_sdk::Error) -> ChannelError {
    match &e {
        matrix_sdk::Error::Http(http) => http_error(http),
        _ => ChannelError::Transient(e.to_string()),
    }
}

fn http_error(e: &matrix_sdk::HttpError) -> ChannelError {
    let Some(api) = e.as_client_api_error() else {
        return ChannelError::Transient(e.to_string());
    };
    let why =
        format!("{} ({})", api.status_code, api.error_kind().map(|k| k.errcode().to_string()).unwrap_or_default());
    match api.error_kind() {
        Some(ErrorKind::LimitExceeded(data)) => {
            let retry_after = match data.retry_after {
                Some(RetryAfter::Delay(d)) => d,
                Some(RetryAfter::DateTime(at)) => at.duration_since(SystemTime::now()).unwrap_or_default(),
                None => Duration::from_secs(5),
            };
            ChannelError::RateLimited { retry_after: retry_after.max(Duration::from_millis(100)) }
        }
        Some(ErrorKind::UnknownToken(_) | ErrorKind::MissingToken) => ChannelError::Unauthorized(why),
        Some(ErrorKind::Forbidden) if api.status_code.as_u16() == 403 => ChannelError::NotFound(why),
        Some(ErrorKind::NotFound) => ChannelError::NotFound(why),
        _ if api.status_code.is_server_error() => ChannelError::Transient(why),
        _ if api.status_code.as_u16() == 401 => ChannelError::Unauthorized(why),
        _ => ChannelError::Rejected(why),
    }
}
