//! `web_fetch` (read a public web page as text), `http_get` (read-only GET to an allowed API
//! host) and `http_request` (any method to an allowed API host; mutating).
//!
//! Every request goes through the [`NetGuard`](super::net::NetGuard): `web_fetch` must never
//! reach a non-public address (checked after DNS and on every redirect); the http tools must
//! never reach a host outside `allowed_hosts` (also on redirects) nor link-local or metadata
//! addresses. Responses are cut at the configured size and requests at the configured time. An
//! action summary must never show an Authorization value or another recognisable secret.

use super::html;
use super::net::{self, ClientOptions, HostList, NetGuard};
use super::plain::{mask_lines, mask_text, str_arg};
use crate::config::{is_secret_name, HttpRequestConfig, WebFetchConfig};
use crate::tools::{masked_pretty, parse_args, Action, Detail, DetailKind, Tool, ToolCtx, ToolError, ToolSpec};
use async_trait::async_trait;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, Url};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Redirects the http tools follow (each checked against `allowed_hosts`).
const HTTP_MAX_REDIRECTS: usize = 5;

/// Headers the model may not set: they belong to the connection, not to the request.
const FORBIDDEN_HEADERS: &[&str] = &["host", "content-length", "transfer-encoding", "connection", "upgrade", "te"];

pub struct WebFetch {
    spec: ToolSpec,
    guard: Arc<NetGuard>,
    client: reqwest::Client,
    max_bytes: usize,
    timeout: Duration,
}

impl WebFetch {
    /// The production tool: public addresses only, real DNS.
    pub fn new(cfg: &WebFetchConfig) -> Result<Self, String> {
        Self::with_guard(cfg, NetGuard::public_only())
    }

    /// With another guard (tests inject host entries and a public override).
    pub fn with_guard(cfg: &WebFetchConfig, guard: NetGuard) -> Result<Self, String> {
        let guard = Arc::new(guard);
        let timeout = Duration::from_secs(cfg.timeout_secs);
        let client =
            net::client(guard.clone(), ClientOptions { timeout, max_redirects: cfg.max_redirects, hosts: None })?;
        Ok(Self {
            spec: ToolSpec {
                name: "web_fetch".into(),
                description: "Fetch a public web page (http or https) and return its readable text, with link \
                              targets in parentheses. Read-only; private and local addresses are refused."
                    .into(),
                parameters: json!({
                    "type": "object",
                    "properties": {"url": {"type": "string", "description": "the page's http(s) URL"}},
                    "required": ["url"],
                    "additionalProperties": false
                }),
                read_only: true,
            },
            guard,
            client,
            max_bytes: cfg.max_bytes,
            timeout,
        })
    }
}

fn parse_url(raw: &str) -> Result<Url, ToolError> {
    Url::parse(raw.trim()).map_err(|e| ToolError::InvalidArgs(format!("`{raw}` is not a URL: {e}")))
}

/// Refuses early what the guard refuses (before the client, which rejects other schemes with
/// a less helpful message).
fn precheck(guard: &NetGuard, url: &Url) -> Result<(), ToolError> {
    guard.check_url(url).map_err(|r| ToolError::Failed(format!("refused: {r}")))
}

/// The cut marker for a response longer than the cap.
fn cut_marker(max: usize, key: &str) -> String {
    format!("\n[… response cut at {max} bytes ({key})]")
}

#[derive(Deserialize)]
struct FetchArgs {
    url: String,
}

#[async_trait]
impl Tool for WebFetch {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn untrusted_output(&self) -> bool {
        true
    }

    fn action(&self, _ctx: &ToolCtx, args: &Value) -> Action {
        let url = str_arg(args, "url");
        Action {
            summary: format!("fetch {} (read only)", mask_text(url)),
            url: Some(url.to_string()),
            ..Action::default()
        }
    }

    async fn call(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let args: FetchArgs = parse_args(args)?;
        let url = parse_url(&args.url)?;
        precheck(&self.guard, &url)?;
        let req = self
            .client
            .get(url)
            .header(reqwest::header::ACCEPT, "text/html,text/plain;q=0.9,*/*;q=0.5")
            .build()
            .map_err(|e| ToolError::InvalidArgs(format!("bad request: {e}")))?;
        let got = net::send(&self.guard, &self.client, req, self.max_bytes, self.timeout, &ctx.cancel).await?;
        let ct = got.content_type.clone().unwrap_or_default().to_ascii_lowercase();
        let raw = String::from_utf8_lossy(&got.body);
        let looks_html = ct.contains("html") || (ct.is_empty() && raw.trim_start().starts_with('<'));
        let texty = ct.starts_with("text/") || ["json", "xml", "javascript"].iter().any(|t| ct.contains(t));
        let text = if looks_html {
            html::to_text(&raw, Some(&got.url))
        } else if texty || (ct.is_empty() && std::str::from_utf8(&got.body).is_ok()) {
            raw.into_owned()
        } else {
            format!("(binary content, {} bytes read; not shown)", got.body.len())
        };
        let mut out = format!(
            "URL: {}\nStatus: {}\nContent-Type: {}\n\n{text}",
            got.url,
            got.status,
            got.content_type.as_deref().unwrap_or("(none)")
        );
        if got.truncated {
            out.push_str(&cut_marker(self.max_bytes, "web_fetch.max_bytes"));
        }
        Ok(out)
    }
}

/// What the two http tools share.
struct Http {
    /// The `[secrets]` a call may name as `auth`, and what to cut out of responses.
    vault: Arc<crate::secrets::Vault>,
    hosts: HostList,
    guard: Arc<NetGuard>,
    client: reqwest::Client,
    /// For requests that carry a secret: follows no redirect, so the header never travels on.
    no_redirects: reqwest::Client,
    max_bytes: usize,
    timeout: Duration,
}

pub struct HttpGet {
    spec: ToolSpec,
    http: Arc<Http>,
}

pub struct HttpRequest {
    spec: ToolSpec,
    http: Arc<Http>,
}

/// `http_get` and `http_request` for `cfg.allowed_hosts`.
pub fn http_tools(cfg: &HttpRequestConfig, vault: Arc<crate::secrets::Vault>) -> Result<Vec<Arc<dyn Tool>>, String> {
    let guard = if cfg.allow_private_addresses { NetGuard::allowing_local() } else { NetGuard::public_only() };
    http_tools_with_guard(cfg, guard, vault)
}

/// With another guard (tests).
pub fn http_tools_with_guard(
    cfg: &HttpRequestConfig,
    guard: NetGuard,
    vault: Arc<crate::secrets::Vault>,
) -> Result<Vec<Arc<dyn Tool>>, String> {
    let guard = Arc::new(guard);
    let hosts = HostList::new(&cfg.allowed_hosts);
    let timeout = Duration::from_secs(cfg.timeout_secs);
    let opts = ClientOptions { timeout, max_redirects: HTTP_MAX_REDIRECTS, hosts: Some(hosts.clone()) };
    let client = net::client(guard.clone(), opts)?;
    let no_redirects =
        net::client(guard.clone(), ClientOptions { timeout, max_redirects: 0, hosts: Some(hosts.clone()) })?;
    let auth = super::http_auth::auth_property(&vault);
    let http = Arc::new(Http { vault, hosts, guard, client, no_redirects, max_bytes: cfg.max_bytes, timeout });
    let allowed = http.hosts.describe();
    let headers = json!({"type": "object", "description": "request headers, name to value",
                         "additionalProperties": {"type": "string"}});
    let get = HttpGet {
        spec: ToolSpec {
            name: "http_get".into(),
            description: format!(
                "Read-only HTTP GET to an allowed API host ({allowed}). Returns the status and the body as text."
            ),
            parameters: super::http_auth::with_auth(
                json!({
                    "type": "object",
                    "properties": {"url": {"type": "string", "description": "http(s) URL"}, "headers": headers},
                    "required": ["url"],
                    "additionalProperties": false
                }),
                &auth,
            ),
            read_only: true,
        },
        http: http.clone(),
    };
    let request = HttpRequest {
        spec: ToolSpec {
            name: "http_request".into(),
            description: format!(
                "HTTP request with any method to an allowed API host ({allowed}); it can change things there, so \
                 it may need approval. For reading, use http_get."
            ),
            parameters: super::http_auth::with_auth(
                json!({
                    "type": "object",
                    "properties": {
                        "method": {"type": "string", "enum": ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]},
                        "url": {"type": "string", "description": "http(s) URL"},
                        "headers": headers,
                        "body": {"type": "string", "description": "request body (send JSON as a string)"}
                    },
                    "required": ["method", "url"],
                    "additionalProperties": false
                }),
                &auth,
            ),
            read_only: false,
        },
        http,
    };
    Ok(vec![Arc::new(get), Arc::new(request)])
}

#[derive(Deserialize)]
struct HttpArgs {
    #[serde(default)]
    method: Option<String>,
    url: String,
    #[serde(default)]
    headers: Option<BTreeMap<String, String>>,
    #[serde(default)]
    body: Option<String>,
    /// A `[secrets]` name whose header Butler adds.
    #[serde(default)]
    auth: Option<String>,
}

/// `http_get` takes no method and no body.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GetArgs {
    url: String,
    #[serde(default)]
    headers: Option<BTreeMap<String, String>>,
    #[serde(default)]
    auth: Option<String>,
}

impl Http {
    async fn run(&self, ctx: &ToolCtx, method: Method, args: HttpArgs) -> Result<String, ToolError> {
        let url = parse_url(&args.url)?;
        let host = url.host_str().unwrap_or_default();
        if !self.hosts.matches(host) {
            return Err(ToolError::Failed(format!(
                "refused: `{host}` is not in tools.http_request.allowed_hosts ({}); the operator decides which hosts \
                 may be called",
                self.hosts.describe()
            )));
        }
        precheck(&self.guard, &url)?;
        let mut headers = HeaderMap::new();
        for (name, value) in args.headers.unwrap_or_default() {
            if FORBIDDEN_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
                return Err(ToolError::InvalidArgs(format!("the header `{name}` cannot be set")));
            }
            let n = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| ToolError::InvalidArgs(format!("`{name}` is not a header name")))?;
            let v = HeaderValue::from_str(&value)
                .map_err(|_| ToolError::InvalidArgs(format!("the value of header `{name}` is not valid")))?;
            headers.insert(n, v);
        }
        if let Some(name) = &args.auth {
            super::http_auth::apply(&self.vault, name, host, &mut headers)?;
        }
        let client = if args.auth.is_some() { &self.no_redirects } else { &self.client };
        let mut builder = client.request(method, url).headers(headers);
        if let Some(body) = args.body {
            builder = builder.body(body);
        }
        let req = builder.build().map_err(|e| ToolError::InvalidArgs(format!("bad request: {e}")))?;
        let got = net::send(&self.guard, client, req, self.max_bytes, self.timeout, &ctx.cancel).await?;
        let mut out = format!(
            "Status: {}\nContent-Type: {}\n\n{}",
            got.status,
            got.content_type.as_deref().unwrap_or("(none)"),
            String::from_utf8_lossy(&got.body)
        );
        if got.truncated {
            out.push_str(&cut_marker(self.max_bytes, "http_request.max_bytes"));
        }
        // A server that echoes a secret (its own header, a key in its answer) never hands it on.
        Ok(self.vault.redact(&out))
    }
}

/// What a request would send: the summary (`METHOD url with headers A, B and a N-byte body`)
/// and the detail (the request line, every header, a blank line and the whole body: JSON
/// pretty-printed), secrets masked: the values of secret-looking headers (`Authorization`,
/// `Cookie`, `X-Api-Key`, ...) and of secret-looking JSON keys, and recognisable secrets in URLs,
/// other header values and text bodies.
fn describe_http(method: &str, args: &Value) -> (String, Detail) {
    let url = mask_text(str_arg(args, "url"));
    let mut summary = format!("{method} {url}{}", super::http_auth::described(args));
    let mut detail = format!("{method} {url}\n");
    if let Some(headers) = args.get("headers").and_then(Value::as_object).filter(|h| !h.is_empty()) {
        let names: Vec<&str> = headers.keys().map(String::as_str).collect();
        summary.push_str(&format!(" with headers {}", names.join(", ")));
        for (k, v) in headers {
            let v = v.as_str().unwrap_or_default();
            let shown = if is_secret_name(k) { "***".to_string() } else { mask_lines(v) };
            detail.push_str(&format!("{k}: {shown}\n"));
        }
    }
    if let Some(body) = args.get("body").and_then(Value::as_str).filter(|b| !b.is_empty()) {
        summary.push_str(&format!(" and a {}-byte body", body.len()));
        let shown = match serde_json::from_str::<Value>(body) {
            Ok(v) if v.is_object() || v.is_array() => masked_pretty(&v),
            _ => mask_lines(body),
        };
        detail.push_str(&format!("\n{shown}"));
    }
    (summary, Detail::new(DetailKind::Request, detail))
}

#[async_trait]
impl Tool for HttpGet {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn untrusted_output(&self) -> bool {
        true
    }

    fn action(&self, _ctx: &ToolCtx, args: &Value) -> Action {
        let (summary, detail) = describe_http("GET", args);
        Action { summary, url: Some(str_arg(args, "url").to_string()), detail: Some(detail), ..Action::default() }
    }

    async fn call(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let GetArgs { url, headers, auth } = parse_args(args)?;
        self.http.run(ctx, Method::GET, HttpArgs { method: None, url, headers, body: None, auth }).await
    }
}

#[async_trait]
impl Tool for HttpRequest {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn untrusted_output(&self) -> bool {
        true
    }

    fn action(&self, _ctx: &ToolCtx, args: &Value) -> Action {
        let method = str_arg(args, "method").to_ascii_uppercase();
        let (summary, detail) = describe_http(if method.is_empty() { "GET" } else { &method }, args);
        Action { summary, url: Some(str_arg(args, "url").to_string()), detail: Some(detail), ..Action::default() }
    }

    async fn call(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let args: HttpArgs = parse_args(args)?;
        let name = args.method.clone().unwrap_or_else(|| "GET".into()).to_ascii_uppercase();
        let method = Method::from_bytes(name.as_bytes())
            .map_err(|_| ToolError::InvalidArgs(format!("`{name}` is not an HTTP method")))?;
        self.http.run(ctx, method, args).await
    }
}
