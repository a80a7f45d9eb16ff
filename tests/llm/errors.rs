//! Error classes over real HTTP: each failure maps to its own LlmError variant, retries happen
//! only where they should, and no error ever shows the API key. Timing is asserted only as
//! generous bounds that prove a wait (Retry-After) or a timeout happened.

use crate::common::{self, ask, assert_no_key, complete, config, dead_url, events, BOTH, KEY};
use crate::support::fake_llm::{FakeLlm, Reply};
use butler::config::ProviderKind;
use butler::llm::{LlmError, StreamEvent};
use std::time::{Duration, Instant};

type Check = fn(&LlmError) -> bool;

/// (case, provider, reply, expected variant).
fn table() -> Vec<(&'static str, ProviderKind, Reply, Check)> {
    let mut t: Vec<(&'static str, ProviderKind, Reply, Check)> = Vec::new();
    for kind in BOTH {
        t.push(("bad key", kind, Reply::bad_key(), |e| matches!(e, LlmError::Auth(_))));
        t.push(("forbidden", kind, Reply::http_error(403, "{}"), |e| matches!(e, LlmError::Auth(_))));
        t.push((
            "unknown model",
            kind,
            Reply::unknown_model(),
            |e| matches!(e, LlmError::UnknownModel(m) if m == "test-model"),
        ));
        t.push(("context too long", kind, Reply::context_too_long(), |e| matches!(e, LlmError::ContextTooLong(_))));
        t.push((
            "rate limited",
            kind,
            Reply::rate_limited(0),
            |e| matches!(e, LlmError::RateLimited { retry_after: Some(d) } if d.is_zero()),
        ));
        t.push(("server error", kind, Reply::server_error(503), |e| matches!(e, LlmError::Server { status: 503, .. })));
        t.push((
            "other 4xx",
            kind,
            Reply::http_error(422, r#"{"error":{"message":"bad tool schema","type":"invalid_request_error"}}"#),
            |e| matches!(e, LlmError::BadRequest(m) if m.contains("bad tool schema")),
        ));
    }
    t.push(("anthropic overloaded", ProviderKind::Anthropic, Reply::server_error(529), |e| {
        matches!(e, LlmError::Server { status: 529, .. })
    }));
    t.push((
        "ollama model not found",
        ProviderKind::Openai,
        Reply::http_error(
            404,
            r#"{"error":{"message":"model \"llama9\" not found, try pulling it first","type":"api_error","param":null,"code":null}}"#,
        ),
        |e| matches!(e, LlmError::UnknownModel(_)),
    ));
    t.push((
        "vllm context length",
        ProviderKind::Openai,
        Reply::http_error(
            400,
            r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.","type":"BadRequestError","param":null,"code":400}"#,
        ),
        |e| matches!(e, LlmError::ContextTooLong(_)),
    ));
    t.push(("proxy html 502", ProviderKind::Openai, Reply::http_error(502, "<html>Bad Gateway</html>"), |e| {
        matches!(e, LlmError::Server { status: 502, .. })
    }));
    t.push((
        "wrong path 404",
        ProviderKind::Openai,
        Reply::http_error(404, "404 page not found"),
        |e| matches!(e, LlmError::BadRequest(m) if m.contains("base_url")),
    ));
    t
}

#[tokio::test]
async fn each_error_class_maps_to_its_own_variant() {
    let llm = FakeLlm::start().await;
    for (case, kind, reply, check) in table() {
        llm.reset();
        let mut cfg = config(&llm, kind);
        cfg.max_retries = 1;
        llm.push(reply.clone());
        llm.push(reply);
        let err = complete(butler::llm::from_config(&cfg).as_ref(), &ask("x")).await.unwrap_err();
        assert!(check(&err), "{case} ({kind:?}): got {err:?}");
        assert_no_key(&err);
        let retried = matches!(err, LlmError::RateLimited { .. } | LlmError::Server { .. });
        assert_eq!(llm.request_count(), if retried { 2 } else { 1 }, "{case} ({kind:?}): attempts");
    }
}

#[tokio::test]
async fn no_error_shows_the_key_even_when_the_provider_quotes_it() {
    let llm = FakeLlm::start().await;
    let bodies = [
        (401, format!(r#"{{"error":{{"message":"Incorrect API key provided: {KEY}","code":"invalid_api_key"}}}}"#)),
        (404, format!(r#"{{"error":{{"message":"model not found for key {KEY}","code":"model_not_found"}}}}"#)),
        (400, format!(r#"{{"error":{{"message":"maximum context length exceeded ({KEY})"}}}}"#)),
        (400, format!(r#"{{"error":{{"message":"bad request from {KEY}"}}}}"#)),
        (500, format!("internal error for {KEY}")),
        (429, format!(r#"{{"type":"error","error":{{"type":"rate_limit_error","message":"{KEY}"}}}}"#)),
    ];
    for kind in BOTH {
        for (status, body) in &bodies {
            llm.reset();
            let mut cfg = config(&llm, kind);
            cfg.max_retries = 0;
            llm.push(Reply::http_error(*status, body.clone()));
            let err = complete(butler::llm::from_config(&cfg).as_ref(), &ask("x")).await.unwrap_err();
            assert_no_key(&err);
        }
        // And inside a stream, before and after content.
        for cut in [0, 1] {
            llm.reset();
            let mut cfg = config(&llm, kind);
            cfg.max_retries = 0;
            llm.push(Reply::text("a b").error_after(cut).error_message(&format!("failed for {KEY}")));
            let p = butler::llm::from_config(&cfg);
            let err = match p.stream(&ask("x")).await {
                Err(e) => e,
                Ok(s) => events(s).await.1.expect("an error"),
            };
            assert!(matches!(err, LlmError::Server { .. }), "{kind:?}: {err:?}");
            assert_no_key(&err);
        }
    }
}

#[tokio::test]
async fn rate_limit_waits_retry_after_seconds_then_succeeds() {
    let llm = FakeLlm::start().await;
    for kind in BOTH {
        llm.reset();
        llm.push(Reply::rate_limited(1));
        llm.push(Reply::text("after the pause"));
        let started = Instant::now();
        let got = complete(common::provider(&llm, kind).as_ref(), &ask("x")).await.unwrap();
        assert_eq!(got.text, "after the pause");
        assert_eq!(llm.request_count(), 2);
        assert!(started.elapsed() >= Duration::from_millis(900), "{kind:?}: Retry-After honoured");
    }
}

#[tokio::test]
async fn rate_limit_waits_retry_after_http_date_then_succeeds() {
    let llm = FakeLlm::start().await;
    let when = chrono::Utc::now() + chrono::Duration::seconds(2);
    let date = when.format("%a, %d %b %Y %H:%M:%S GMT").to_string();
    llm.push(
        Reply::http_error(429, r#"{"error":{"message":"slow down","type":"requests"}}"#).header("retry-after", &date),
    );
    llm.push(Reply::text("ok"));
    let started = Instant::now();
    let got = complete(common::provider(&llm, ProviderKind::Openai).as_ref(), &ask("x")).await.unwrap();
    assert_eq!(got.text, "ok");
    assert!(started.elapsed() >= Duration::from_millis(900), "waited until the date");
    assert_eq!(butler::llm::parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), Some(Duration::ZERO));
    assert_eq!(butler::llm::parse_retry_after("120"), Some(Duration::from_secs(120)));
    assert_eq!(butler::llm::parse_retry_after("soon"), None);
}

#[tokio::test]
async fn server_errors_are_retried_then_succeed() {
    let llm = FakeLlm::start().await;
    for kind in BOTH {
        llm.reset();
        llm.push(Reply::server_error(500));
        llm.push(Reply::server_error(502));
        llm.push(Reply::text("third time lucky"));
        let got = complete(common::provider(&llm, kind).as_ref(), &ask("x")).await.unwrap();
        assert_eq!(got.text, "third time lucky", "{kind:?}");
        assert_eq!(llm.request_count(), 3, "{kind:?}");
    }
}

#[tokio::test]
async fn retries_give_up_after_max_retries() {
    let llm = FakeLlm::start().await;
    let cases: [(Reply, Check); 2] = [
        (Reply::server_error(503), |e| matches!(e, LlmError::Server { status: 503, .. })),
        (Reply::rate_limited(0), |e| matches!(e, LlmError::RateLimited { .. })),
    ];
    for kind in BOTH {
        for (reply, check) in &cases {
            llm.reset();
            llm.on_every("x", reply.clone());
            let err = complete(common::provider(&llm, kind).as_ref(), &ask("x")).await.unwrap_err();
            assert!(check(&err), "{kind:?}: {err:?}");
            assert_eq!(llm.request_count(), 3, "{kind:?}: 1 try + max_retries (2)");
        }
    }
}

#[tokio::test]
async fn a_long_retry_after_is_reported_not_waited_for() {
    let llm = FakeLlm::start().await;
    llm.push(Reply::rate_limited(3600));
    let started = Instant::now();
    let err = complete(common::provider(&llm, ProviderKind::Anthropic).as_ref(), &ask("x")).await.unwrap_err();
    assert!(matches!(err, LlmError::RateLimited { retry_after: Some(d) } if d == Duration::from_secs(3600)), "{err:?}");
    assert!(err.to_string().contains("retry after 3600s"), "{err}");
    assert_eq!(llm.request_count(), 1);
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[tokio::test]
async fn first_byte_timeout() {
    let llm = FakeLlm::start().await;
    for kind in BOTH {
        llm.reset();
        let mut cfg = config(&llm, kind);
        cfg.first_byte_timeout_secs = 1;
        llm.push(Reply::text("late").first_byte_delay(Duration::from_secs(4)));
        let started = Instant::now();
        let err = complete(butler::llm::from_config(&cfg).as_ref(), &ask("x")).await.unwrap_err();
        assert!(matches!(&err, LlmError::Timeout(phase) if phase.contains("no response")), "{kind:?}: {err:?}");
        assert!(started.elapsed() < Duration::from_secs(3), "{kind:?}: gave up at the timeout");
        assert_eq!(llm.request_count(), 1, "timeouts are not retried (the fallback handles them)");
    }
}

#[tokio::test]
async fn idle_timeout_mid_stream() {
    let llm = FakeLlm::start().await;
    for kind in BOTH {
        let mut cfg = config(&llm, kind);
        cfg.idle_timeout_secs = 1;
        llm.push(Reply::text("first then silence").pause_after(1, Duration::from_secs(4)));
        let stream = butler::llm::from_config(&cfg).stream(&ask("x")).await.unwrap();
        let (evs, err) = events(stream).await;
        let first_text = evs.iter().find(|e| matches!(e, StreamEvent::Text(_)));
        assert_eq!(first_text, Some(&StreamEvent::Text("first".into())), "{kind:?}");
        assert!(matches!(&err, Some(LlmError::Timeout(phase)) if phase.contains("stalled")), "{kind:?}: {err:?}");
    }
}

#[tokio::test]
async fn unreachable_names_the_base_url() {
    for kind in BOTH {
        let base = dead_url().await;
        let cfg = butler::config::LlmConfig {
            provider: kind,
            base_url: Some(base.clone()),
            api_key: Some(butler::config::Secret::new(KEY)),
            model: "m".into(),
            ..butler::config::LlmConfig::default()
        };
        let err = complete(butler::llm::from_config(&cfg).as_ref(), &ask("x")).await.unwrap_err();
        assert!(matches!(&err, LlmError::Unreachable(u) if u == &base), "{kind:?}: {err:?}");
        assert!(err.to_string().contains(&base));
        assert_no_key(&err);
    }
}

#[tokio::test]
async fn a_fake_that_requires_another_key_gives_auth() {
    let llm = FakeLlm::start().await;
    llm.require_api_key("sk-the-right-one");
    for kind in BOTH {
        let err = complete(common::provider(&llm, kind).as_ref(), &ask("x")).await.unwrap_err();
        assert!(matches!(err, LlmError::Auth(_)), "{kind:?}: {err:?}");
        assert_no_key(&err);
    }
}
