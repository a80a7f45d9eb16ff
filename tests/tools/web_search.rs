//! `web_search` against local fakes of the three search APIs (SearXNG, Brave, Tavily) serving
//! their real JSON shapes: the request each gets (method, path, query, headers, body), the
//! rendered results, every error (naming the provider and the fix, never the key), the
//! per-process rate limit, the `[tools.web_search]` checks, when the tool is offered, and one
//! agent turn showing it runs without asking in the default mode.
//!
//! Every fake listens on 127.0.0.1; nothing here reaches the internet.

use crate::support::app::{config, TestApp};
use crate::support::fake_llm::{FakeLlm, Reply};
use crate::{err_text, serve, Harness};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use butler::config::{parse_str, Config, ConfigError, Env, SearchProvider, Secret, WebSearchConfig};
use butler::tools::builtin::WebSearch;
use butler::tools::{builtin_tools, Tool};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const KEY: &str = "sk-test-SEARCH-KEY-42";

/// One request the fake got.
#[derive(Clone, Debug)]
struct Seen {
    method: Method,
    path: String,
    query: Vec<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
}

impl Seen {
    fn param(&self, name: &str) -> Option<&str> {
        self.query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// Status, extra headers and body of the fake's answer.
type Answer = (StatusCode, Vec<(&'static str, String)>, String);

/// What the fake answers (to any path) and what it saw.
#[derive(Clone)]
struct Fake {
    answer: Arc<Mutex<Answer>>,
    seen: Arc<Mutex<Vec<Seen>>>,
    delay: Duration,
}

impl Fake {
    fn new(body: Value) -> Self {
        Self {
            answer: Arc::new(Mutex::new((StatusCode::OK, vec![], body.to_string()))),
            seen: Arc::default(),
            delay: Duration::ZERO,
        }
    }

    fn answer(&self, status: u16, headers: &[(&'static str, &str)], body: &str) {
        let headers = headers.iter().map(|(k, v)| (*k, v.to_string())).collect();
        *self.answer.lock().unwrap() = (StatusCode::from_u16(status).unwrap(), headers, body.to_string());
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// Serves it; the base URL.
    async fn start(&self) -> String {
        async fn handle(
            State(fake): State<Fake>,
            method: Method,
            uri: Uri,
            headers: HeaderMap,
            body: Bytes,
        ) -> Response {
            let full = reqwest::Url::parse(&format!("http://fake{uri}")).expect("a request URI");
            let query = full.query_pairs().into_owned().collect();
            fake.seen.lock().unwrap().push(Seen { method, path: uri.path().to_string(), query, headers, body });
            if !fake.delay.is_zero() {
                tokio::time::sleep(fake.delay).await;
            }
            let (status, headers, body) = fake.answer.lock().unwrap().clone();
            let mut resp = (status, [("content-type", "application/json")], body).into_response();
            for (k, v) in headers {
                resp.headers_mut().insert(k, v.parse().unwrap());
            }
            resp
        }
        let app = Router::new().fallback(handle).with_state(self.clone());
        format!("http://{}", serve(app).await)
    }
}

/// A SearXNG `/search?format=json` answer: three results, HTML in one snippet, no URL in none.
fn searxng_body() -> Value {
    let item = |url: &str, title: &str, content: &str, engines: &[&str]| {
        json!({"url": url, "title": title, "content": content, "engine": engines[0],
               "parsed_url": ["https", "example.org", "/", "", "", ""], "template": "default.html",
               "engines": engines, "positions": [1], "score": 2.5, "category": "general",
               "publishedDate": null, "thumbnail": ""})
    };
    json!({
        "query": "rust async runtime",
        "number_of_results": 0,
        "results": [
            item("https://tokio.rs/", "Tokio - An asynchronous Rust runtime",
                 "Tokio is an <b>event-driven</b>, non-blocking I/O platform &amp; runtime.", &["duckduckgo", "brave"]),
            item("https://async.rs/", "async-std", "Async version of the Rust standard library.", &["bing"]),
            item("https://smol.rs/", "smol", "A small and fast async runtime.", &["qwant"]),
        ],
        "answers": [], "corrections": [], "infoboxes": [], "suggestions": ["tokio tutorial"],
        "unresponsive_engines": [["google", "timeout"]]
    })
}

/// A Brave `/web/search` answer: the query block, `mixed`, and `web.results` with `<strong>`.
fn brave_body() -> Value {
    let item = |url: &str, title: &str, description: &str| {
        json!({"title": title, "url": url, "is_source_local": false, "is_source_both": false,
               "description": description, "page_age": "2025-02-01T10:00:00", "language": "en",
               "profile": {"name": "Example", "url": url, "long_name": "example.org", "img": "https://imgs.example/x.png"},
               "family_friendly": true, "type": "search_result", "subtype": "generic",
               "meta_url": {"scheme": "https", "netloc": "example.org", "hostname": "example.org",
                            "favicon": "https://imgs.example/f.png", "path": "› news"},
               "age": "February 1, 2025", "extra_snippets": ["more text"]})
    };
    json!({
        "query": {"original": "rust async runtime", "show_strict_warning": false, "is_navigational": false,
                  "is_news_breaking": false, "spellcheck_off": true, "country": "us", "bad_results": false,
                  "should_fallback": false, "postal_code": "", "city": "", "header_country": "",
                  "more_results_available": true, "state": ""},
        "mixed": {"type": "mixed", "main": [{"type": "web", "index": 0, "all": false}], "top": [], "side": []},
        "type": "search",
        "web": {"type": "search", "family_friendly": true, "results": [
            item("https://tokio.rs/", "Tokio - An asynchronous Rust runtime",
                 "<strong>Tokio</strong> is an <strong>asynchronous</strong> runtime for Rust."),
            item("https://docs.rs/futures", "futures - Rust", "Zero-cost <strong>async</strong> futures &amp; streams."),
        ]}
    })
}

/// A Tavily `/search` answer.
fn tavily_body() -> Value {
    json!({
        "query": "rust async runtime",
        "follow_up_questions": null,
        "answer": null,
        "images": [],
        "results": [
            {"url": "https://tokio.rs/", "title": "Tokio", "score": 0.91, "raw_content": null,
             "content": "Tokio provides the building blocks for writing network applications."},
            {"url": "https://rust-lang.github.io/async-book/", "title": "Asynchronous Programming in Rust",
             "score": 0.84, "raw_content": null, "content": "A book about async/.await in Rust."}
        ],
        "response_time": 1.12,
        "request_id": "3f8e2a8b-5c1d-4e2f-9a7b-0c1d2e3f4a5b"
    })
}

fn search_config(provider: SearchProvider, base: &str) -> WebSearchConfig {
    WebSearchConfig {
        provider: Some(provider),
        base_url: Some(base.to_string()),
        api_key: (provider != SearchProvider::Searxng).then(|| Secret::new(KEY)),
        ..WebSearchConfig::default()
    }
}

async fn started(provider: SearchProvider, body: Value) -> (Fake, WebSearch) {
    let fake = Fake::new(body);
    let base = fake.start().await;
    (fake.clone(), WebSearch::new(&search_config(provider, &base)).expect("tool"))
}

#[tokio::test]
async fn each_provider_is_asked_in_its_own_shape_and_rendered() {
    /// (provider, its answer, method, path, checks of the request, fragments of the output)
    type Case = (SearchProvider, fn() -> Value, Method, &'static str, fn(&Seen), &'static [&'static str]);
    let cases: &[Case] = &[
        (
            SearchProvider::Searxng,
            searxng_body,
            Method::GET,
            "/search",
            |s| {
                assert_eq!(s.param("q"), Some("rust async runtime"));
                assert_eq!(s.param("format"), Some("json"));
                assert_eq!(s.header("authorization"), None, "no key, no header");
            },
            &[
                "Web results for \"rust async runtime\" (SearXNG):",
                "1. Tokio - An asynchronous Rust runtime\n   https://tokio.rs/\n   Tokio is an event-driven, \
                 non-blocking I/O platform & runtime.",
                "2. async-std\n   https://async.rs/",
                "3. smol",
            ],
        ),
        (
            SearchProvider::Brave,
            brave_body,
            Method::GET,
            "/web/search",
            |s| {
                assert_eq!(s.param("q"), Some("rust async runtime"));
                assert_eq!(s.param("count"), Some("5"), "max_results by default");
                assert_eq!(s.header("x-subscription-token"), Some(KEY));
                assert_eq!(s.header("accept"), Some("application/json"));
            },
            &[
                "(Brave):",
                "1. Tokio - An asynchronous Rust runtime\n   https://tokio.rs/\n   Tokio is an asynchronous runtime for \
                 Rust.",
                "2. futures - Rust\n   https://docs.rs/futures\n   Zero-cost async futures & streams.",
            ],
        ),
        (
            SearchProvider::Tavily,
            tavily_body,
            Method::POST,
            "/search",
            |s| {
                assert_eq!(s.header("authorization"), Some(format!("Bearer {KEY}").as_str()));
                assert!(s.header("content-type").unwrap_or_default().starts_with("application/json"));
                let body: Value = serde_json::from_slice(&s.body).expect("a JSON body");
                assert_eq!(body, json!({"query": "rust async runtime", "max_results": 5}));
            },
            &[
                "(Tavily):",
                "1. Tokio\n   https://tokio.rs/\n   Tokio provides the building blocks",
                "2. Asynchronous Programming in Rust\n   https://rust-lang.github.io/async-book/",
            ],
        ),
    ];
    let h = Harness::new().await;
    for (provider, body, method, path, check, want) in cases {
        let (fake, tool) = started(*provider, body()).await;
        let out = h.call(&tool, json!({"query": "  rust async runtime "})).await.expect("search");
        let seen = fake.seen();
        assert_eq!(seen.len(), 1, "{provider:?}");
        assert_eq!((&seen[0].method, seen[0].path.as_str()), (method, *path), "{provider:?}");
        check(&seen[0]);
        for w in *want {
            assert!(out.contains(w), "{provider:?}: {w:?} not in\n{out}");
        }
        for markup in ["<b>", "<strong>", "&amp;"] {
            assert!(!out.contains(markup), "{provider:?}: {markup} left in\n{out}");
        }
        assert!(!out.contains(KEY));
    }
}

#[tokio::test]
async fn count_bounds_the_results_and_long_text_is_cut() {
    let h = Harness::new().await;
    let (fake, tool) = started(SearchProvider::Brave, brave_body()).await;
    let out = h.call(&tool, json!({"query": "q", "count": 1})).await.unwrap();
    assert_eq!(fake.seen()[0].param("count"), Some("1"));
    assert!(out.contains("1. Tokio") && !out.contains("2. "), "{out}");

    // SearXNG cannot be asked for a number: the tool keeps the first `count`.
    let (_, tool) = started(SearchProvider::Searxng, searxng_body()).await;
    let out = h.call(&tool, json!({"query": "q", "count": 2})).await.unwrap();
    assert!(out.contains("2. async-std") && !out.contains("3. smol"), "{out}");

    let long =
        json!({"results": [{"title": "T".repeat(1000), "url": "https://x.org/", "content": "word ".repeat(2000)}]});
    let (_, tool) = started(SearchProvider::Tavily, long).await;
    let out = h.call(&tool, json!({"query": "q"})).await.unwrap();
    assert!(out.len() < 1200 && out.contains('…'), "{} chars: {out}", out.len());

    let (_, tool) = started(SearchProvider::Tavily, json!({"query": "q", "results": []})).await;
    assert_eq!(h.call(&tool, json!({"query": "nothing"})).await.unwrap(), "No web results for \"nothing\" (Tavily).");

    for bad in [json!({"query": " "}), json!({"query": "q", "count": "x"}), json!({"q": "x"})] {
        assert!(err_text(h.call(&tool, bad.clone()).await).contains("invalid arguments"), "{bad}");
    }
}

#[tokio::test]
async fn errors_name_the_provider_and_the_fix() {
    use SearchProvider::*;
    let brave_err = r#"{"type":"ErrorResponse","error":{"id":"c2f0","status":401,"code":"SUBSCRIPTION_TOKEN_INVALID","detail":"The provided subscription token is invalid."},"time":1700000000}"#;
    /// (provider, status, headers, body, fragments of the message)
    type Case = (SearchProvider, u16, &'static [(&'static str, &'static str)], &'static str, &'static [&'static str]);
    let cases: &[Case] = &[
        (Brave, 401, &[], brave_err, &["Brave answered 401 Unauthorized", "check [tools.web_search] api_key"]),
        (
            Tavily,
            401,
            &[],
            r#"{"detail":{"error":"Unauthorized: missing or invalid API key."}}"#,
            &["Tavily", "api_key"],
        ),
        (Brave, 403, &[], "{}", &["Brave answered 403 Forbidden", "api_key"]),
        (Searxng, 403, &[], "Forbidden", &["SearXNG", "403 Forbidden", "search.formats", "settings.yml"]),
        (Brave, 429, &[("retry-after", "7")], "{}", &["Brave rate-limited", "429", "try again in 7 s", "per_minute"]),
        (Tavily, 429, &[], "{}", &["Tavily rate-limited", "try again later"]),
        (Tavily, 432, &[], r#"{"detail":{"error":"plan limit"}}"#, &["Tavily", "432", "usage limit", "plan"]),
        (Searxng, 301, &[("location", "https://search.lan/search")], "", &["SearXNG", "redirect", "base_url"]),
        (
            Searxng,
            500,
            &[],
            "engine crashed",
            &["SearXNG at 127.0.0.1:", "500 Internal Server Error", "engine crashed"],
        ),
        (Searxng, 200, &[], "<!DOCTYPE html><html>results</html>", &["SearXNG", "not its search JSON", "base_url"]),
        (Brave, 200, &[], r#"{"web": {"results": "none"}}"#, &["Brave", "not its search JSON"]),
    ];
    let h = Harness::new().await;
    for (provider, status, headers, body, want) in cases {
        let (fake, tool) = started(*provider, json!({})).await;
        fake.answer(*status, headers, body);
        let msg = err_text(h.call(&tool, json!({"query": "q"})).await);
        for w in *want {
            assert!(msg.contains(w), "{provider:?} {status}: {w:?} not in {msg:?}");
        }
        assert!(!msg.contains(KEY), "{msg}");
    }
}

#[tokio::test]
async fn an_unreachable_or_slow_provider_is_named_with_its_host() {
    let h = Harness::new().await;
    // Nothing listens on a port that was just freed.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let tool = WebSearch::new(&search_config(SearchProvider::Searxng, &format!("http://127.0.0.1:{port}"))).unwrap();
    let msg = err_text(h.call(&tool, json!({"query": "q"})).await);
    for w in ["could not connect to SearXNG", &format!("127.0.0.1:{port}"), "base_url"] {
        assert!(msg.contains(w), "{w:?} not in {msg:?}");
    }

    let mut fake = Fake::new(tavily_body());
    fake.delay = Duration::from_secs(5);
    let base = fake.start().await;
    let cfg = WebSearchConfig { timeout_secs: 1, ..search_config(SearchProvider::Tavily, &base) };
    let msg = err_text(h.call(&WebSearch::new(&cfg).unwrap(), json!({"query": "q"})).await);
    for w in ["Tavily at 127.0.0.1:", "did not answer within 1 s", "timeout_secs"] {
        assert!(msg.contains(w), "{w:?} not in {msg:?}");
    }
    assert!(!msg.contains(KEY));
}

#[tokio::test]
async fn the_rate_limit_refuses_the_extra_call_before_the_provider() {
    let h = Harness::new().await;
    let fake = Fake::new(searxng_body());
    let base = fake.start().await;
    let tool =
        WebSearch::new(&WebSearchConfig { per_minute: 2, ..search_config(SearchProvider::Searxng, &base) }).unwrap();
    for _ in 0..2 {
        h.call(&tool, json!({"query": "q"})).await.expect("within the limit");
    }
    let msg = err_text(h.call(&tool, json!({"query": "q"})).await);
    for w in ["limited to 2 searches a minute", "[tools.web_search] per_minute", "try again in"] {
        assert!(msg.contains(w), "{w:?} not in {msg:?}");
    }
    assert_eq!(fake.seen().len(), 2, "the refused call never reached the provider");
}

#[test]
fn spec_is_read_only_and_the_key_stays_hidden() {
    let cfg = search_config(SearchProvider::Brave, "https://api.search.brave.com/res/v1");
    let tool = WebSearch::new(&cfg).unwrap();
    assert!(tool.spec().read_only);
    assert!(!format!("{cfg:?}").contains(KEY));
    let mut full = Config::default();
    full.tools.web_search = cfg;
    let shown = full.to_masked_toml();
    assert!(shown.contains("[tools.web_search]") && !shown.contains(KEY), "{shown}");
}

fn parse(text: &str) -> Config {
    parse_str(text, "config/butler.toml", &Env::from_pairs(Vec::<(String, String)>::new())).unwrap()
}

#[test]
fn offered_only_when_a_provider_is_configured() {
    let cases: &[(&str, bool)] = &[
        ("", false),
        ("[tools.web_search]\nmax_results = 3", false),
        ("[tools.web_search]\nprovider = \"searxng\"\nbase_url = \"http://127.0.0.1:8888\"", true),
        ("[tools.web_search]\nprovider = \"brave\"\napi_key = \"k\"", true),
        ("[tools.web_search]\nprovider = \"tavily\"\napi_key = \"k\"", true),
        ("[tools.web_search]\nprovider = \"brave\"\napi_key = \"k\"\nenabled = false", false),
    ];
    for (text, on) in cases {
        let cfg = parse(text);
        butler::app::check_config(&cfg).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(builtin_tools(&cfg, &Default::default()).get("web_search").is_some(), *on, "{text}");
    }
}

#[test]
fn checks_name_the_key_and_say_what_to_do() {
    /// (config, None when valid or the one key with fragments of its message)
    type Case = (&'static str, Option<(&'static str, &'static [&'static str])>);
    let cases: &[Case] = &[
        ("[tools.web_search]\nenabled = true", Some(("tools.web_search.provider", &["searxng", "brave", "tavily"]))),
        ("[tools.web_search]\nprovider = \"searxng\"", Some(("tools.web_search.base_url", &["SearXNG", "http://"]))),
        (
            "[tools.web_search]\nprovider = \"brave\"",
            Some(("tools.web_search.api_key", &["Brave needs an API key", "BRAVE_API_KEY", "brave.com"])),
        ),
        (
            "[tools.web_search]\nprovider = \"tavily\"\napi_key = \" \"",
            Some(("tools.web_search.api_key", &["Tavily needs an API key"])),
        ),
        ("[tools.web_search]\nprovider = \"searxng\"\nbase_url = \"http://192.168.1.5:8080\"", None),
        ("[tools.web_search]\nprovider = \"searxng\"\nbase_url = \"http://localhost:8888/searx\"", None),
        (
            "[tools.web_search]\nprovider = \"searxng\"\nbase_url = \"searx.lan\"",
            Some(("tools.web_search.base_url", &["http://"])),
        ),
        (
            "[tools.web_search]\nprovider = \"brave\"\napi_key = \"k\"\nbase_url = \"http://169.254.169.254/\"",
            Some(("tools.web_search.base_url", &["metadata"])),
        ),
        (
            "[tools.web_search]\nprovider = \"brave\"\napi_key = \"k\"\nbase_url = \"http://metadata.google.internal\"",
            Some(("tools.web_search.base_url", &["metadata"])),
        ),
        ("[tools.web_search]\nmax_results = 0", Some(("tools.web_search.max_results", &["greater than 0"]))),
        ("[tools.web_search]\nmax_results = 21", Some(("tools.web_search.max_results", &["at most 20"]))),
        ("[tools.web_search]\ntimeout_secs = 0", Some(("tools.web_search.timeout_secs", &["greater than 0"]))),
        ("[tools.web_search]\nper_minute = 0", Some(("tools.web_search.per_minute", &["greater than 0"]))),
        // Off: an incomplete provider is not a problem.
        ("[tools.web_search]\nprovider = \"brave\"\nenabled = false", None),
    ];
    for (text, want) in cases {
        match (butler::app::check_config(&parse(text)), want) {
            (Ok(()), None) => {}
            (Err(ConfigError::Invalid { problems, .. }), Some((key, words))) => {
                let keys: Vec<&str> = problems.iter().map(|p| p.key.as_str()).collect();
                assert_eq!(keys, vec![*key], "{text}");
                for w in *words {
                    assert!(problems[0].message.contains(w), "{text}: {w:?} not in {:?}", problems[0].message);
                }
            }
            (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
        }
    }
}

/// Through a real Butler: the model calls `web_search` and the call runs at once in the
/// default mode (no approval asked), the result going back to the model.
#[tokio::test]
async fn an_agent_searches_without_asking_in_the_default_mode() {
    let llm = FakeLlm::start().await;
    let fake = Fake::new(searxng_body());
    let base = fake.start().await;
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    cfg.tools.workspace_dir = dir.path().join("data/workspaces").display().to_string();
    cfg.tools.web_search.provider = Some(SearchProvider::Searxng);
    cfg.tools.web_search.base_url = Some(base);
    let app = TestApp::start(cfg, Some(dir)).await;
    llm.on("news about rust", Reply::tool_call("web_search", json!({"query": "rust async runtime"})));
    llm.on("news about rust", Reply::text("Tokio leads."));
    app.post("s-w", "local", "news about rust").await;
    let reqs = llm.requests_for("news about rust", 2).await;
    let offered: Vec<&str> = reqs[0].tools().iter().filter_map(|t| t["function"]["name"].as_str()).collect();
    assert!(offered.contains(&"web_search"), "{offered:?}");
    let result = reqs[1].last_tool_result().expect("the search result");
    assert!(
        result.contains("1. Tokio - An asynchronous Rust runtime") && result.contains("https://tokio.rs/"),
        "{result}"
    );
    assert_eq!(fake.seen().len(), 1);
    app.stop().await;
}
