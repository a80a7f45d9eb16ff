//! JSON-RPC 2.0 calls to signal-cli's daemon (`POST {url}/api/v1/rpc`), every call naming the
//! bot's account (multi-account daemons need it; single-account ones ignore it), and its errors
//! as `ChannelError`s: signal-cli's own codes (-1 user error, -3 I/O, -4 untrusted key,
//! -5 rate limit, -6 captcha) and the JSON-RPC ones.
//!
//! It must never log a message's text or a file's bytes.

use butler_channel::ChannelError;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How long signal-cli asks a sender to wait after a rate-limit error, when it does not say.
const RATE_LIMIT_WAIT: Duration = Duration::from_secs(60);

/// A client of one daemon, for one account.
pub(crate) struct Rpc {
    endpoint: String,
    account: String,
    http: reqwest::Client,
    next: AtomicU64,
}

impl Rpc {
    pub(crate) fn new(url: &str, account: &str, http: reqwest::Client) -> Self {
        let endpoint = format!("{}/api/v1/rpc", url.trim_end_matches('/'));
        Self { endpoint, account: account.to_string(), http, next: AtomicU64::new(1) }
    }

    /// Calls `method` with `params` (an object); its `result`.
    pub(crate) async fn call(&self, method: &str, mut params: Value) -> Result<Value, ChannelError> {
        params["account"] = json!(self.account);
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let request = json!({"jsonrpc": "2.0", "method": method, "params": params, "id": id});
        let resp = self.http.post(&self.endpoint).json(&request).send().await.map_err(|e| transport(method, &e))?;
        let status = resp.status();
        if status.is_server_error() {
            return Err(ChannelError::Transient(format!("signal-cli answered {status} to {method}")));
        }
        let body: Value = resp.json().await.map_err(|_| {
            ChannelError::Transient(format!("signal-cli's answer to {method} is not JSON-RPC ({status})"))
        })?;
        if let Some(error) = body.get("error").filter(|e| !e.is_null()) {
            return Err(rpc_error(method, error));
        }
        if !status.is_success() {
            return Err(ChannelError::Rejected(format!("signal-cli answered {status} to {method}")));
        }
        Ok(body.get("result").cloned().unwrap_or(Value::Null))
    }
}

/// A failed request (no answer) as a retryable error, without the URL's details.
pub(crate) fn transport(what: &str, e: &reqwest::Error) -> ChannelError {
    let why = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "cannot connect to the daemon"
    } else {
        "the connection failed"
    };
    ChannelError::Transient(format!("signal-cli {what}: {why}"))
}

/// A JSON-RPC error object as the error the caller acts on.
pub(crate) fn rpc_error(method: &str, error: &Value) -> ChannelError {
    let code = error["code"].as_i64().unwrap_or(0);
    let message = error["message"].as_str().unwrap_or("no message");
    let what = format!("signal-cli {method} ({code}): {message}");
    match code {
        -5 => {
            let secs = error["data"]["response"]["results"][0]["retryAfterSeconds"]
                .as_u64()
                .or_else(|| error["data"]["retryAfterSeconds"].as_u64());
            ChannelError::RateLimited { retry_after: secs.map(Duration::from_secs).unwrap_or(RATE_LIMIT_WAIT) }
        }
        -3 | -32603 => ChannelError::Transient(what),
        -32602 if message.contains("account") => ChannelError::Unauthorized(what),
        _ => ChannelError::Rejected(what),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_tell_the_caller_what_to_do() {
        let cases = [
            (json!({"code": -5, "message": "rate limit"}), "rate"),
            (json!({"code": -5, "message": "rl", "data": {"retryAfterSeconds": 7}}), "rate7"),
            (json!({"code": -3, "message": "network"}), "transient"),
            (json!({"code": -32603, "message": "internal"}), "transient"),
            (json!({"code": -32602, "message": "Specified account does not exist"}), "unauthorized"),
            (json!({"code": -1, "message": "Invalid group id"}), "rejected"),
            (json!({"code": -4, "message": "untrusted"}), "rejected"),
            (json!({"code": -32601, "message": "Method not implemented"}), "rejected"),
        ];
        for (error, want) in cases {
            let got = match rpc_error("send", &error) {
                ChannelError::RateLimited { retry_after } if retry_after == Duration::from_secs(7) => "rate7",
                ChannelError::RateLimited { retry_after } if retry_after == RATE_LIMIT_WAIT => "rate",
                ChannelError::Transient(_) => "transient",
                ChannelError::Unauthorized(_) => "unauthorized",
                ChannelError::Rejected(_) => "rejected",
                other => panic!("{other:?}"),
            };
            assert_eq!(got, want, "{error}");
        }
    }
}
