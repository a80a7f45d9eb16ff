//! The JSON body of every error response Butler's HTTP endpoints give, whichever crate serves
//! them (the web API, the webhooks, the platforms' callbacks):
//! `{"error": {"code", "message", "type"}}`, `type` in OpenAI's words so one client reads all of
//! them alike. This must never put anything but the caller's mistake in `message`.

/// OpenAI's error type for an HTTP status.
pub fn error_type(status: u16) -> &'static str {
    match status {
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        429 => "rate_limit_error",
        400..=499 => "invalid_request_error",
        _ => "api_error",
    }
}

/// `{"error": {"code", "message", "type"}}` for `status`.
pub fn error_body(status: u16, code: &str, message: &str) -> serde_json::Value {
    serde_json::json!({"error": {"code": code, "message": message, "type": error_type(status)}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_has_its_type() {
        let cases = [
            (400, "invalid_request_error"),
            (401, "authentication_error"),
            (403, "permission_error"),
            (404, "not_found_error"),
            (405, "invalid_request_error"),
            (413, "invalid_request_error"),
            (429, "rate_limit_error"),
            (500, "api_error"),
            (503, "api_error"),
        ];
        for (status, want) in cases {
            assert_eq!(error_type(status), want, "{status}");
            assert_eq!(error_body(status, "c", "m")["error"]["type"], want);
        }
        assert_eq!(error_body(401, "bad_signature", "no")["error"]["code"], "bad_signature");
    }
}
