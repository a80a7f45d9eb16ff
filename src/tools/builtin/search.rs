//! `web_search {query, count?}`: asks the search API chosen in `[tools.web_search]` (SearXNG,
//! Brave or Tavily; shapes in [`super::search_api`]) and returns numbered results: title, URL
//! and a snippet with its HTML stripped, each bounded. Read-only, low risk.
//!
//! The configured `base_url` is trusted config, not model input: requests go straight to it
//! without the [`NetGuard`](super::net::NetGuard), so a SearXNG on loopback or the LAN works
//! (only IP literals the guard forbids outright, such as cloud metadata, are refused at load).
//! The model only chooses the query. Redirects are not followed, and no proxy is used.
//!
//! Searches are limited per process to `per_minute` (a token bucket); a refused call never
//! reaches the provider. Every error names the provider and what to do. The API key must never
//! appear in a message, a log line or an action summary.

use super::plain::{mask_text, preview};
use super::search_api::{self, Hit};
use crate::config::{SearchProvider, Secret, WebSearchConfig};
use crate::tools::{parse_args, Action, Tool, ToolCtx, ToolError, ToolSpec};
use async_trait::async_trait;
use butler_channel::limit::Bucket;
use reqwest::{StatusCode, Url};
use serde::Deserialize;
use serde_json::{json, Value};
use std::error::Error as StdError;
use std::time::{Duration, Instant};

/// The most results one call may ask for (Brave's and Tavily's own maximum).
pub const MAX_COUNT: usize = 20;
/// The most bytes of an answer read; a search answer is far smaller.
const MAX_RESPONSE_BYTES: usize = 2_000_000;
/// Characters kept of a title, a URL and a snippet.
const TITLE_CHARS: usize = 200;
const URL_CHARS: usize = 500;
const SNIPPET_CHARS: usize = 400;

pub struct WebSearch {
    spec: ToolSpec,
    provider: SearchProvider,
    base: Url,
    key: Option<Secret>,
    client: reqwest::Client,
    max_results: usize,
    timeout: Duration,
    per_minute: u32,
    bucket: Bucket,
}

impl WebSearch {
    /// The tool for `cfg`; the reason when it cannot be built (no provider, no usable URL).
    pub fn new(cfg: &WebSearchConfig) -> Result<Self, String> {
        let provider = cfg.provider.ok_or("no provider is set")?;
        let raw = cfg.endpoint().ok_or_else(|| format!("{} needs a base_url", provider.label()))?;
        let base = Url::parse(raw.trim()).map_err(|e| format!("base_url is not a URL: {e}"))?;
        let timeout = Duration::from_secs(cfg.timeout_secs.max(1));
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .referer(false)
            .timeout(timeout)
            .connect_timeout(timeout)
            .user_agent(concat!("Butler/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("could not build the HTTP client: {e}"))?;
        let max_results = cfg.max_results.clamp(1, MAX_COUNT);
        Ok(Self {
            spec: ToolSpec {
                name: "web_search".into(),
                description: format!(
                    "Search the web ({}) and get the top results: title, URL and a short snippet each. \
                     Read-only. Snippets are short; to read a result, fetch its URL.",
                    provider.label()
                ),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "description": "what to search for"},
                        "count": {"type": "integer", "minimum": 1, "maximum": MAX_COUNT,
                                  "description": format!("how many results (default {max_results})")}
                    },
                    "required": ["query"],
                    "additionalProperties": false
                }),
                read_only: true,
            },
            provider,
            base,
            key: cfg.api_key.clone(),
            client,
            max_results,
            timeout,
            per_minute: cfg.per_minute,
            bucket: Bucket::new(cfg.per_minute),
        })
    }

    /// `host[:port]` of the API, for messages (never a path or query).
    fn host(&self) -> String {
        let host = self.base.host_str().unwrap_or("?");
        match self.base.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_string(),
        }
    }

    /// Takes a token of the per-process limit, or says when to retry.
    fn take_token(&self) -> Result<(), ToolError> {
        self.bucket.take(Instant::now()).map_err(|wait| {
            ToolError::Failed(format!(
                "web search is limited to {} searches a minute ([tools.web_search] per_minute); try again in {} s",
                self.per_minute,
                butler_channel::limit::retry_after_secs(wait)
            ))
        })
    }

    async fn search(&self, query: &str, count: usize) -> Result<Vec<Hit>, ToolError> {
        let p = self.provider.label();
        let req = search_api::request(&self.client, self.provider, &self.base, self.key.as_ref(), query, count);
        let mut resp = req.send().await.map_err(|e| self.send_error(&e))?;
        let status = resp.status();
        tracing::debug!(provider = p, status = status.as_u16(), "web search answered");
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| self.send_error(&e))? {
            if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
                return Err(ToolError::Failed(format!(
                    "{p} sent more than {MAX_RESPONSE_BYTES} bytes; check [tools.web_search] base_url points at its \
                     search API"
                )));
            }
            body.extend_from_slice(&chunk);
        }
        if !status.is_success() {
            return Err(self.status_error(status, resp.headers(), &body));
        }
        search_api::parse(self.provider, &body).map_err(|e| {
            ToolError::Failed(format!(
                "{p} answered with something that is not its search JSON ({e}); check [tools.web_search] base_url \
                 points at the {p} API{}",
                if self.provider == SearchProvider::Searxng {
                    " and that `json` is in search.formats of its settings.yml"
                } else {
                    ""
                }
            ))
        })
    }

    /// A request that got no answer: refused, timed out, broken.
    fn send_error(&self, e: &reqwest::Error) -> ToolError {
        let (p, host) = (self.provider.label(), self.host());
        if e.is_timeout() {
            return ToolError::Failed(format!(
                "{p} at {host} did not answer within {} s; check that it is up, or raise [tools.web_search] \
                 timeout_secs",
                self.timeout.as_secs()
            ));
        }
        let cause = innermost(e);
        if e.is_connect() {
            return ToolError::Failed(format!(
                "could not connect to {p} at {host} ({cause}); check that it runs and [tools.web_search] base_url"
            ));
        }
        ToolError::Failed(format!("the request to {p} at {host} failed ({cause}); try again later"))
    }

    /// An answer that is not a success, in words that say what to do.
    fn status_error(&self, status: StatusCode, headers: &reqwest::header::HeaderMap, body: &[u8]) -> ToolError {
        let (p, host) = (self.provider.label(), self.host());
        let code = status_text(status);
        let msg = match (self.provider, status.as_u16()) {
            (SearchProvider::Searxng, 403) => format!(
                "SearXNG at {host} answered {code}: its JSON API is probably off; add `json` to search.formats in \
                 its settings.yml (or, behind an authenticating proxy, check [tools.web_search] api_key)"
            ),
            (_, 401 | 403) => format!(
                "{p} answered {code}: the API key was not accepted; check [tools.web_search] api_key{}",
                if self.key.as_ref().is_none_or(Secret::is_empty) { " (none is set)" } else { "" }
            ),
            (_, 429) => {
                let after = headers
                    .get(reqwest::header::RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .map(|s| format!(" in {s} s"))
                    .unwrap_or_else(|| " later".into());
                format!(
                    "{p} rate-limited this search ({code}); try again{after}, or lower [tools.web_search] per_minute \
                     to stay under your plan's limit"
                )
            }
            (SearchProvider::Tavily, 432 | 433) => {
                format!("Tavily answered {code}: the plan's usage limit is reached; check your Tavily plan")
            }
            (_, 300..=399) => {
                let to = headers.get(reqwest::header::LOCATION).and_then(|v| v.to_str().ok()).unwrap_or("?");
                format!(
                    "{p} at {host} answered {code}, a redirect to {}; set [tools.web_search] base_url to the address \
                     it redirects to",
                    preview(&mask_text(to), 200)
                )
            }
            _ => {
                let text = String::from_utf8_lossy(body);
                format!("{p} at {host} answered {code}: {}; try again later", preview(&mask_text(text.trim()), 200))
            }
        };
        ToolError::Failed(msg)
    }

    fn render(&self, query: &str, hits: &[Hit]) -> String {
        let p = self.provider.label();
        let q = preview(query, 200);
        if hits.is_empty() {
            return format!("No web results for \"{q}\" ({p}).");
        }
        let mut out = format!("Web results for \"{q}\" ({p}):\n");
        for (i, hit) in hits.iter().enumerate() {
            let title = match clean(&hit.title, TITLE_CHARS) {
                t if t.is_empty() => "(no title)".to_string(),
                t => t,
            };
            out.push_str(&format!("\n{}. {title}\n   {}\n", i + 1, preview(hit.url.trim(), URL_CHARS)));
            let snippet = clean(&hit.snippet, SNIPPET_CHARS);
            if !snippet.is_empty() {
                out.push_str(&format!("   {snippet}\n"));
            }
        }
        out
    }
}

/// The last error of a chain in plain words ("Connection refused (os error 111)"); never the
/// top one, whose text holds the full URL.
fn innermost(e: &reqwest::Error) -> String {
    let mut last: &dyn StdError = e;
    while let Some(next) = last.source() {
        last = next;
    }
    last.to_string()
}

/// `401 Unauthorized`.
fn status_text(status: StatusCode) -> String {
    match status.canonical_reason() {
        Some(reason) => format!("{} {reason}", status.as_u16()),
        None => status.as_u16().to_string(),
    }
}

/// `s` without HTML tags, entities decoded, whitespace collapsed, cut to `max` characters.
pub fn clean(s: &str, max: usize) -> String {
    let mut text = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        // A tag starts with `<` and a letter, `/` or `!`; a lone `<` is text ("1 < 2").
        if c == '<' && chars.peek().is_some_and(|n| n.is_ascii_alphabetic() || *n == '/' || *n == '!') {
            for t in chars.by_ref() {
                if t == '>' {
                    break;
                }
            }
            continue;
        }
        text.push(c);
    }
    let decoded = super::html::decode_entities(&text);
    preview(&decoded.split_whitespace().collect::<Vec<_>>().join(" "), max)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    query: String,
    #[serde(default)]
    count: Option<usize>,
}

#[async_trait]
impl Tool for WebSearch {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn untrusted_output(&self) -> bool {
        true
    }

    fn action(&self, _ctx: &ToolCtx, args: &Value) -> Action {
        let query = args.get("query").and_then(Value::as_str).unwrap_or("");
        Action {
            summary: format!(
                "search the web for \"{}\" with {} (read only)",
                mask_text(&preview(query, 120)),
                self.provider.label()
            ),
            ..Action::default()
        }
    }

    async fn call(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let args: SearchArgs = parse_args(args)?;
        let query = args.query.trim();
        if query.is_empty() {
            return Err(ToolError::InvalidArgs("`query` must not be empty".into()));
        }
        let count = args.count.unwrap_or(self.max_results).clamp(1, MAX_COUNT);
        self.take_token()?;
        let hits = tokio::select! {
            r = self.search(query, count) => r?,
            _ = ctx.cancel.cancelled() => return Err(ToolError::Failed("stopped".into())),
        };
        let shown: Vec<Hit> = hits.into_iter().filter(|h| !h.url.trim().is_empty()).take(count).collect();
        Ok(self.render(query, &shown))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippets_lose_their_markup() {
        let cases = [
            ("The <strong>Rust</strong> book", "The Rust book"),
            ("a &amp; b &#39;c&#39;", "a & b 'c'"),
            ("line\n  two\tthree", "line two three"),
            ("<b>x</b>y<br/>z", "xyz"),
            ("unclosed <b", "unclosed"),
            ("1 < 2 and 3 > 2", "1 < 2 and 3 > 2"),
        ];
        for (raw, want) in cases {
            assert_eq!(clean(raw, 100), want, "{raw}");
        }
        assert_eq!(clean(&"é".repeat(50), 10).chars().count(), 11, "cut with a marker");
    }
}
