//! Web chat authentication: each configured token belongs to one web identity. With no token
//! configured the API is local-only and trusts the `user` field. Tokens are compared in
//! constant time and never logged.

use crate::config::WebConfig;
use crate::http::ApiError;
use axum::http::{header, HeaderMap, StatusCode};
use butler_channel::signature::ct_eq;

/// The identity a tokenless local page speaks as.
pub(crate) const LOCAL_USER: &str = "local";

#[derive(Clone, Default)]
pub(crate) struct WebAuth {
    /// (token, web user name). Empty: local mode.
    tokens: Vec<(String, String)>,
}

impl WebAuth {
    pub(crate) fn from_config(cfg: &WebConfig) -> Self {
        let mut tokens: Vec<(String, String)> =
            cfg.tokens.iter().map(|(user, t)| (t.expose().to_string(), user.clone())).collect();
        if let Some(t) = &cfg.token {
            tokens.push((t.expose().to_string(), "owner".to_string()));
        }
        Self { tokens }
    }

    /// True when no token is configured (local mode).
    pub(crate) fn is_local(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The web user the request is for. In token mode the bearer token decides and a `user`
    /// that disagrees is refused; in local mode `claimed` is trusted (default `local`).
    pub(crate) fn user(&self, headers: &HeaderMap, claimed: Option<&str>) -> Result<String, ApiError> {
        let claimed = claimed.map(|u| u.strip_prefix("web:").unwrap_or(u));
        if self.is_local() {
            return Ok(claimed.unwrap_or(LOCAL_USER).to_string());
        }
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .ok_or_else(|| {
                ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", "send Authorization: Bearer <your web token>")
            })?;
        let mut found = None;
        for (token, user) in &self.tokens {
            if ct_eq(token.as_bytes(), presented.trim().as_bytes()) {
                found = Some(user.clone());
            }
        }
        let user =
            found.ok_or_else(|| ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", "the token is not valid"))?;
        match claimed {
            Some(c) if c != user => Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "forbidden",
                "`user` does not match the identity of the token",
            )),
            _ => Ok(user),
        }
    }
}
