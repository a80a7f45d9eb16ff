//! `[secrets.<name>]`: credentials the tools use by name without the model ever seeing them.
//! Plain data; `crate::secrets` resolves, checks and uses them.

use super::Secret;
use serde::{Deserialize, Serialize};

/// One named credential.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct SecretConfig {
    /// The value, usually `${ENV_VAR}`; exactly one of `value` and `file`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<Secret>,
    /// A file holding the value (a trailing newline is dropped), read when Butler starts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Hosts (`api.github.com`, `*.example.com`) `http_get` / `http_request` may send it to
    /// with `auth = "<name>"`; none: it is for MCP servers and hooks only.
    pub hosts: Vec<String>,
    /// The request header it travels in.
    pub header: String,
    /// Written before the value in that header (`Bearer`); empty: the value alone.
    pub scheme: String,
}

impl Default for SecretConfig {
    fn default() -> Self {
        Self { value: None, file: None, hosts: Vec::new(), header: "Authorization".into(), scheme: "Bearer".into() }
    }
}
