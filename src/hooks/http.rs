//! HTTP hooks: `POST` the payload as JSON to the hook's URL. This file must never follow
//! redirects, wait past the timeout, or put the URL's path or query (which may hold a token)
//! into a message or log: hooks are named by their origin only.

use super::verdict::{explicit_block, first_line, HookError, HookResult, Payload, Verdict, OUTPUT_CAP};
use std::time::Duration;

/// The client shared by every HTTP hook: rustls, no redirects, a short connect timeout.
pub(super) fn client() -> Result<reqwest::Client, HookError> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(Duration::from_secs(5))
        .user_agent(concat!("butler/", env!("CARGO_PKG_VERSION"), " hooks"))
        .build()
        .map_err(HookError::HttpClient)
}

/// Runs one HTTP hook to its answer or its timeout.
pub(super) async fn run(
    client: &reqwest::Client,
    url: &str,
    label: &str,
    timeout: Duration,
    payload: &Payload,
) -> HookResult {
    let exchange = async {
        let response = client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header("x-butler-hook-event", payload.event.as_str())
            .body(payload.json.clone())
            .send()
            .await?;
        let status = response.status();
        Ok::<_, reqwest::Error>((status, read_capped(response).await))
    };
    match tokio::time::timeout(timeout, exchange).await {
        Err(_) => Err(format!("{label} timed out after {}s", timeout.as_secs())),
        Ok(Err(e)) => Err(format!("{label} could not be reached: {}", describe(&e))),
        Ok(Ok((status, body))) if status.is_success() => Ok(match explicit_block(&body) {
            Some(reason) => Verdict::Block(reason.unwrap_or_else(|| format!("{label} blocked the call"))),
            None => Verdict::Ok,
        }),
        Ok(Ok((status, body))) => {
            let said = first_line(&body);
            let said = if said.is_empty() { said } else { format!(": {said}") };
            Err(format!("{label} answered HTTP {status}{said}"))
        }
    }
}

/// `scheme://host[:port]/…` (or `/` when the URL has no path), or "an invalid URL".
pub(super) fn origin(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(u) if u.has_host() => {
            let port = u.port().map(|p| format!(":{p}")).unwrap_or_default();
            let rest = if u.path() == "/" && u.query().is_none() { "/" } else { "/…" };
            format!("{}://{}{port}{rest}", u.scheme(), u.host_str().unwrap_or_default())
        }
        _ => "an invalid URL".into(),
    }
}

/// Reads the body to its end or [`OUTPUT_CAP`] bytes, whichever comes first.
async fn read_capped(mut response: reqwest::Response) -> Vec<u8> {
    let mut kept = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        let room = OUTPUT_CAP.saturating_sub(kept.len());
        kept.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if kept.len() >= OUTPUT_CAP {
            break;
        }
    }
    kept
}

/// The error and its causes, without the URL.
fn describe(e: &reqwest::Error) -> String {
    let mut parts = Vec::new();
    let mut source: Option<&dyn std::error::Error> = std::error::Error::source(e);
    while let Some(s) = source {
        let text = s.to_string();
        if !parts.contains(&text) {
            parts.push(text);
        }
        source = s.source();
    }
    let head = if e.is_connect() {
        "cannot connect"
    } else if e.is_timeout() {
        "timed out"
    } else if e.is_request() {
        "the request failed"
    } else {
        "the exchange failed"
    };
    if parts.is_empty() {
        head.to_string()
    } else {
        format!("{head} ({})", parts.join(": "))
    }
}
