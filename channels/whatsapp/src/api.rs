//! The Graph API as the adapter uses it: one JSON POST with the bearer token, Meta's error
//! object mapped to what the caller should do next ([`graph_error`]), and the start-up /
//! `butler doctor` check of the token and the phone number id ([`check`]). Messages to one
//! person are paced in the gate before they are sent ([`PAIR_RATE`] under `whatsapp:to:<wa_id>`,
//! shared by the replicas), and rate-limit refusals hold the recipient (the pair rate) or the
//! number (`whatsapp:number:<id>`) there too.
//!
//! Error codes (Meta's "Error codes" page for the Cloud API): 130429 (throughput), 131056 (pair
//! rate limit), 80007 and 4 (rate limits) wait and retry; 131047 (the 24-hour window closed) is
//! `OutsideWindow`, never retried blindly; 190 and 10 refuse the token; 131000, 131016 and 5xx
//! are temporary; anything else is a rejection of this request.
//!
//! Nothing here may log or return the access token.

use crate::{ConnectError, Settings, WhatsAppChannel};
use butler_channel::limit::Rate;
use butler_channel::ChannelError;
use serde_json::Value;
use std::time::Duration;

/// WhatsApp's pair rate: one message every 6 seconds to one person, with bursts of up to 45 that
/// must then be paid back at that pace.
pub const PAIR_RATE: Rate = Rate { every: Duration::from_secs(6), burst: 45 };

/// How long to wait after each rate-limit code (Meta sends no Retry-After).
fn rate_wait(code: i64) -> Option<Duration> {
    match code {
        // One message per 6 seconds to one person is the pair rate.
        131056 => Some(Duration::from_secs(6)),
        130429 | 80007 | 4 | 613 => Some(Duration::from_secs(2)),
        _ => None,
    }
}

/// An unsuccessful Graph API answer (`status`, its JSON body) as a [`ChannelError`].
pub fn graph_error(what: &str, status: u16, body: &Value) -> ChannelError {
    let err = &body["error"];
    let code = err["code"].as_i64().unwrap_or(0);
    let message = err["message"].as_str().unwrap_or("no error message");
    let details = err["error_data"]["details"].as_str().map(|d| format!(" ({d})")).unwrap_or_default();
    let text = format!("{what}: HTTP {status}, Graph API error {code}: {message}{details}");
    if let Some(retry_after) = rate_wait(code) {
        return ChannelError::RateLimited { retry_after };
    }
    match (code, status) {
        (131047, _) => ChannelError::OutsideWindow(text),
        (190 | 10 | 200..=299, _) | (_, 401) => ChannelError::Unauthorized(text),
        (131000 | 131016 | 1 | 2, _) | (_, 500..=599) => ChannelError::Transient(text),
        (_, 429) => ChannelError::RateLimited { retry_after: Duration::from_secs(2) },
        (131030 | 131026, _) => ChannelError::NotFound(text),
        _ => ChannelError::Rejected(text),
    }
}

pub(crate) fn transport(what: &str, e: reqwest::Error) -> ChannelError {
    ChannelError::Transient(format!("{what}: {}", e.without_url()))
}

/// Reads a Graph API answer: its JSON on success, else the mapped error.
pub(crate) async fn answer(what: &str, resp: reqwest::Response) -> Result<Value, ChannelError> {
    let status = resp.status().as_u16();
    let bytes = resp.bytes().await.map_err(|e| transport(what, e))?;
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    if (200..300).contains(&status) {
        Ok(body)
    } else {
        Err(graph_error(what, status, &body))
    }
}

impl WhatsAppChannel {
    /// POSTs `body` as JSON to `{api_url}/{tail}` with the token.
    pub(crate) async fn post(&self, what: &str, tail: &str, body: &Value) -> Result<Value, ChannelError> {
        let resp = self
            .http
            .post(self.settings.url(tail))
            .bearer_auth(&self.settings.access_token)
            .json(body)
            .send()
            .await
            .map_err(|e| transport(what, e))?;
        answer(what, resp).await
    }

    /// POSTs one message object to `{phone_number_id}/messages`; the new message's id. A
    /// recipient (131056) or the number (130429, 80007) WhatsApp said is over its rate is held
    /// in the gate, so no replica sends there before the wait is over.
    pub(crate) async fn post_message(&self, body: &Value) -> Result<String, ChannelError> {
        let to = body["to"].as_str().unwrap_or_default();
        let (recipient, number) =
            (format!("whatsapp:to:{to}"), format!("whatsapp:number:{}", self.settings.phone_number_id));
        if let Some(retry_after) = self.settings.gate.held(&number).await {
            return Err(ChannelError::RateLimited { retry_after });
        }
        // Paced before sending, so the pair rate is kept rather than refused (read receipts
        // and typing indicators name no recipient and are not paced).
        if !to.is_empty() {
            if let Err(retry_after) = self.settings.gate.take(&recipient, PAIR_RATE).await {
                return Err(ChannelError::RateLimited { retry_after });
            }
        }
        let tail = format!("{}/messages", self.settings.phone_number_id);
        let what = "sending a WhatsApp message";
        let resp = self
            .http
            .post(self.settings.url(&tail))
            .bearer_auth(&self.settings.access_token)
            .json(body)
            .send()
            .await
            .map_err(|e| transport(what, e))?;
        let status = resp.status().as_u16();
        let bytes = resp.bytes().await.map_err(|e| transport(what, e))?;
        let answer: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        if !(200..300).contains(&status) {
            let e = graph_error(what, status, &answer);
            if let ChannelError::RateLimited { retry_after } = &e {
                let key = if answer["error"]["code"].as_i64() == Some(131056) { &recipient } else { &number };
                self.settings.gate.hold(key, *retry_after).await;
            }
            return Err(e);
        }
        answer["messages"][0]["id"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| ChannelError::Transient("the Graph API answered without a message id".into()))
    }
}

/// The business phone number as the Graph API describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PhoneNumber {
    pub display_phone_number: String,
    pub verified_name: String,
}

/// Asks the Graph API about the configured phone number id with the token: the number, or
/// what is wrong (for `butler doctor`).
pub async fn check(settings: &Settings) -> Result<PhoneNumber, ConnectError> {
    reqwest::Url::parse(&settings.api_url).map_err(|_| ConnectError::BadUrl(settings.api_url.clone()))?;
    let http = crate::client(Duration::from_secs(10))?;
    let url = settings.url(&format!("{}?fields=display_phone_number,verified_name", settings.phone_number_id));
    let resp =
        http.get(url).bearer_auth(&settings.access_token).send().await.map_err(|e| ConnectError::Unreachable {
            url: settings.api_url.clone(),
            error: e.without_url().to_string(),
        })?;
    match answer("checking the phone number id", resp).await {
        Ok(v) => Ok(PhoneNumber {
            display_phone_number: v["display_phone_number"].as_str().unwrap_or("?").to_string(),
            verified_name: v["verified_name"].as_str().unwrap_or("?").to_string(),
        }),
        Err(ChannelError::Unauthorized(why)) => Err(ConnectError::BadToken(why)),
        Err(ChannelError::Rejected(why) | ChannelError::NotFound(why)) => {
            Err(ConnectError::BadPhoneNumber { id: settings.phone_number_id.clone(), why })
        }
        Err(e) => Err(ConnectError::Other(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn graph_errors_tell_the_caller_what_to_do() {
        let body = |code: i64| {
            json!({"error": {"message": "m", "type": "OAuthException", "code": code,
            "error_data": {"messaging_product": "whatsapp", "details": "d"}, "fbtrace_id": "x"}})
        };
        let cases: &[(u16, i64, &str)] = &[
            (400, 130429, "rate"),
            (400, 131056, "rate"),
            (400, 80007, "rate"),
            (400, 131047, "window"),
            (401, 190, "auth"),
            (400, 100, "rejected"),
            (500, 131000, "transient"),
            (503, 0, "transient"),
            (400, 131026, "not_found"),
        ];
        for (status, code, want) in cases {
            let got = match graph_error("t", *status, &body(*code)) {
                ChannelError::RateLimited { .. } => "rate",
                ChannelError::OutsideWindow(_) => "window",
                ChannelError::Unauthorized(_) => "auth",
                ChannelError::Rejected(_) => "rejected",
                ChannelError::Transient(_) => "transient",
                ChannelError::NotFound(_) => "not_found",
                ChannelError::NotModified => "not_modified",
            };
            assert_eq!(got, *want, "{status} {code}");
        }
        let e = graph_error("sending", 400, &body(131047));
        assert!(!e.is_retryable() && e.to_string().contains("131047"), "{e}");
    }
}
