//! Discord's REST API through serenity: `HttpBuilder` holds the token, the base URL (with
//! `proxy` pointing at a stand-in for https://discord.com such as a test fake) and the rate
//! limiter; serenity's `Route`s name the endpoints and its models decode the answers.
//!
//! The response is read here rather than by `Http::request`, because serenity's error type
//! keeps neither the `Retry-After` header nor the body's `retry_after`, and a 429 must become
//! [`ChannelError::RateLimited`] with Discord's own wait. Against the real Discord serenity's
//! rate limiter stays on (it waits for buckets and retries 429s itself); against another base
//! URL it is off, because serenity's limiter does not apply the proxy.
//!
//! Across replicas, what Discord says about its buckets is kept in the channel's [`Gate`]: a
//! 429 holds its route's bucket (or every route, for a global limit) for the wait Discord
//! named, and with a shared gate a bucket Discord reports as spent (`X-RateLimit-Remaining: 0`)
//! is held until its reset, so another replica does not spend a request on it. A call to a held
//! bucket is not sent: it comes back as [`ChannelError::RateLimited`] with the time left.
//!
//! This module must never log the token or a request body.

use butler_channel::limit::Gate;
use butler_channel::ChannelError;
use serde::de::DeserializeOwned;
use serenity::http::{Http, HttpBuilder, LightMethod, Multipart, Request, Route};
use std::num::NonZeroU64;
use std::time::Duration;

/// The public Discord that `api_url` stands in for.
pub const DISCORD: &str = "https://discord.com";

/// How long one request may take before it counts as a transient failure.
const TIMEOUT: Duration = Duration::from_secs(30);

pub(crate) struct Rest {
    http: Http,
    client: reqwest::Client,
    gate: Gate,
}

/// The gate key of Discord's global limit.
const GLOBAL: &str = "discord:global";

/// The gate key of a route's rate-limit bucket (the route and its major parameter, as serenity
/// groups them).
fn bucket_key(route: &Route<'_>) -> String {
    format!("discord:bucket:{:?}", route.ratelimiting_bucket())
}

/// A Discord id (snowflake) from its decimal form.
pub(crate) fn snowflake<T: From<NonZeroU64>>(s: &str) -> Result<T, ChannelError> {
    s.parse::<NonZeroU64>().map(T::from).map_err(|_| ChannelError::Rejected(format!("`{s}` is not a Discord id")))
}

impl Rest {
    pub fn new(token: &str, api_url: &str, gate: Gate) -> Result<Self, ChannelError> {
        let client = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .build()
            .map_err(|e| ChannelError::Rejected(format!("cannot build the HTTP client: {e}")))?;
        let base = api_url.trim_end_matches('/');
        let mut builder = HttpBuilder::new(token).client(client.clone());
        if base != DISCORD {
            builder = builder.proxy(base).ratelimiter_disabled(true);
        }
        Ok(Self { http: builder.build(), client, gate })
    }

    /// Performs one request and returns the body of a successful answer.
    pub async fn call(
        &self,
        method: LightMethod,
        route: Route<'_>,
        body: Option<Vec<u8>>,
    ) -> Result<Vec<u8>, ChannelError> {
        self.perform(Request::new(route, method).body(body)).await
    }

    /// A `multipart/form-data` request (`payload_json` and files, as serenity lays them out),
    /// decoding a JSON answer.
    pub async fn multipart<T: DeserializeOwned>(
        &self,
        method: LightMethod,
        route: Route<'_>,
        form: Multipart,
    ) -> Result<T, ChannelError> {
        let bytes = self.perform(Request::new(route, method).multipart(Some(form))).await?;
        serde_json::from_slice(&bytes)
            .map_err(|e| ChannelError::Transient(format!("unexpected answer from Discord: {e}")))
    }

    /// Sends `req` (unless its bucket is held) and returns the body of a successful answer.
    async fn perform(&self, req: Request<'_>) -> Result<Vec<u8>, ChannelError> {
        let bucket = bucket_key(req.route_ref());
        let held = self.gate.held(GLOBAL).await.max(self.gate.held(&bucket).await);
        if let Some(retry_after) = held {
            return Err(ChannelError::RateLimited { retry_after });
        }
        let sent = match &self.http.ratelimiter {
            Some(limiter) => limiter.perform(req).await.map_err(|e| ChannelError::Transient(e.to_string()))?,
            None => {
                let built = req
                    .build(&self.client, self.http.token(), self.http.proxy.as_deref())
                    .map_err(|e| ChannelError::Rejected(e.to_string()))?;
                built.send().await.map_err(|e| ChannelError::Transient(format!("request failed: {e}")))?
            }
        };
        let status = sent.status().as_u16();
        let header_wait =
            sent.headers().get("retry-after").and_then(|v| v.to_str().ok()).and_then(|s| s.trim().parse::<f64>().ok());
        let spent = spent_until(sent.headers());
        let bytes = sent.bytes().await.map_err(|e| ChannelError::Transient(format!("reading the answer: {e}")))?;
        if (200..300).contains(&status) {
            if let Some(reset) = spent.filter(|_| self.gate.is_shared()) {
                self.gate.hold(&bucket, reset).await;
            }
            return Ok(bytes.to_vec());
        }
        let err = classify(status, header_wait, &bytes);
        if let ChannelError::RateLimited { retry_after } = &err {
            let global = serde_json::from_slice::<serde_json::Value>(&bytes).is_ok_and(|v| v["global"] == true);
            tracing::info!(?retry_after, global, "Discord rate limit; holding the bucket");
            self.gate.hold(if global { GLOBAL } else { &bucket }, *retry_after).await;
        }
        Err(err)
    }

    /// [`Self::call`] with a JSON body, decoding a JSON answer.
    pub async fn json<T: DeserializeOwned>(
        &self,
        method: LightMethod,
        route: Route<'_>,
        body: Option<&impl serde::Serialize>,
    ) -> Result<T, ChannelError> {
        let body = body.map(serde_json::to_vec).transpose().map_err(|e| ChannelError::Rejected(e.to_string()))?;
        let bytes = self.call(method, route, body).await?;
        serde_json::from_slice(&bytes)
            .map_err(|e| ChannelError::Transient(format!("unexpected answer from Discord: {e}")))
    }
}

/// How long a bucket Discord reports as spent (`X-RateLimit-Remaining: 0`) stays spent.
fn spent_until(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if text("x-ratelimit-remaining")? != "0" {
        return None;
    }
    let secs = text("x-ratelimit-reset-after")?.parse::<f64>().ok()?;
    Some(Duration::from_secs_f64(secs.clamp(0.0, 3600.0))).filter(|d| !d.is_zero())
}

/// An unsuccessful answer as the error that tells the caller what to do next.
pub(crate) fn classify(status: u16, header_wait: Option<f64>, body: &[u8]) -> ChannelError {
    let json: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let message = json["message"].as_str().unwrap_or("no message").to_string();
    let what = match json["code"].as_i64() {
        Some(code) => format!("{message} (HTTP {status}, code {code})"),
        None => format!("{message} (HTTP {status})"),
    };
    match status {
        429 => {
            let secs = json["retry_after"].as_f64().or(header_wait).unwrap_or(1.0);
            ChannelError::RateLimited { retry_after: Duration::from_secs_f64(secs.clamp(0.05, 3600.0)) }
        }
        401 => ChannelError::Unauthorized(what),
        404 => ChannelError::NotFound(what),
        408 | 500..=599 => ChannelError::Transient(what),
        _ => ChannelError::Rejected(what),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_map_to_what_to_do_next() {
        let limited = br#"{"message": "You are being rate limited.", "retry_after": 1.5, "global": false}"#;
        match classify(429, Some(9.0), limited) {
            ChannelError::RateLimited { retry_after } => assert_eq!(retry_after, Duration::from_millis(1500)),
            e => panic!("{e:?}"),
        }
        match classify(429, Some(2.0), b"") {
            ChannelError::RateLimited { retry_after } => assert_eq!(retry_after, Duration::from_secs(2)),
            e => panic!("{e:?}"),
        }
        assert!(matches!(
            classify(401, None, br#"{"message": "401: Unauthorized", "code": 0}"#),
            ChannelError::Unauthorized(_)
        ));
        assert!(matches!(
            classify(404, None, br#"{"message": "Unknown Message", "code": 10008}"#),
            ChannelError::NotFound(_)
        ));
        assert!(matches!(
            classify(403, None, br#"{"message": "Missing Permissions", "code": 50013}"#),
            ChannelError::Rejected(_)
        ));
        assert!(matches!(classify(502, None, b"<html>"), ChannelError::Transient(_)));
        let e = classify(400, None, br#"{"message": "Invalid Form Body", "code": 50035}"#);
        assert_eq!(e.to_string(), "rejected by the platform: Invalid Form Body (HTTP 400, code 50035)");
    }

    #[test]
    fn a_spent_bucket_is_read_from_the_headers() {
        type Headers<'a> = &'a [(&'a str, &'a str)];
        let cases: &[(Headers, Option<u64>)] = &[
            (&[("x-ratelimit-remaining", "0"), ("x-ratelimit-reset-after", "1.250")], Some(1250)),
            (&[("x-ratelimit-remaining", "3"), ("x-ratelimit-reset-after", "1.250")], None),
            (&[("x-ratelimit-remaining", "0")], None),
            (&[("x-ratelimit-remaining", "0"), ("x-ratelimit-reset-after", "soon")], None),
            (&[], None),
        ];
        for (headers, want) in cases {
            let mut map = reqwest::header::HeaderMap::new();
            for (k, v) in *headers {
                map.insert(*k, v.parse().unwrap());
            }
            assert_eq!(spent_until(&map).map(|d| d.as_millis() as u64), *want, "{headers:?}");
        }
        let a = bucket_key(&Route::Channel { channel_id: 1.into() });
        assert_eq!(a, bucket_key(&Route::Channel { channel_id: 1.into() }));
        assert_ne!(a, bucket_key(&Route::Channel { channel_id: 2.into() }));
    }
}
