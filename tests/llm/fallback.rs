//! Building providers from config and the fallback chain, against two fakes: the chain moves on
//! only on transient errors before streaming starts. Must never reach a real provider.

use crate::common::{self, ask, complete, config, dead_url, events, KEY};
use crate::support::fake_llm::{FakeLlm, Reply};
use butler::config::{LlmConfig, LlmFallback, ProviderKind, Secret};
use butler::llm::{LlmError, Provider, StreamEvent};
use std::sync::Arc;

/// Primary at `primary` (OpenAI protocol), one fallback at `second` (Anthropic protocol).
fn chain(primary: &FakeLlm, second: &FakeLlm) -> Arc<dyn Provider> {
    let mut cfg = config(primary, ProviderKind::Openai);
    cfg.max_retries = 1;
    cfg.fallback = vec![LlmFallback {
        provider: ProviderKind::Anthropic,
        base_url: Some(second.anthropic_url()),
        api_key: Some(Secret::new("sk-second")),
        model: "second-model".into(),
        ..LlmFallback::default()
    }];
    butler::llm::from_config(&cfg)
}

#[tokio::test]
async fn no_model_means_not_configured() {
    for model in ["", "   "] {
        let cfg = LlmConfig { model: model.into(), api_key: Some(Secret::new(KEY)), ..LlmConfig::default() };
        let p = butler::llm::from_config(&cfg);
        assert_eq!(p.name(), "none");
        let err = complete(p.as_ref(), &ask("hello")).await.unwrap_err();
        assert!(matches!(err, LlmError::NotConfigured), "{err:?}");
        assert!(err.to_string().contains("OPENAI_API_KEY"), "says what to set: {err}");
        assert!(!err.is_transient());
    }
}

#[tokio::test]
async fn provider_names_and_models_come_from_config() {
    let llm = FakeLlm::start().await;
    for (kind, name) in [(ProviderKind::Openai, "openai"), (ProviderKind::Anthropic, "anthropic")] {
        let p = common::provider(&llm, kind);
        assert_eq!((p.name(), p.model()), (name, "test-model"));
    }
    let second = FakeLlm::start().await;
    let p = chain(&llm, &second);
    assert_eq!((p.name(), p.model()), ("openai", "test-model"), "a chain is named after its primary");
}

#[tokio::test]
async fn fallback_answers_when_the_primary_keeps_failing_with_5xx() {
    let (a, b) = (FakeLlm::start().await, FakeLlm::start().await);
    a.on_every("", Reply::server_error(503));
    b.push(Reply::text("from the fallback"));
    let got = complete(chain(&a, &b).as_ref(), &ask("hello")).await.unwrap();
    assert_eq!(got.text, "from the fallback");
    assert_eq!(got.model, "second-model", "the answer names the model that gave it (usage is priced by it)");
    assert_eq!(a.request_count(), 2, "the primary is retried first (max_retries = 1)");
    assert_eq!(b.request_count(), 1);
    let req = b.last_request().unwrap();
    assert_eq!((req.model(), req.api_key()), ("second-model", Some("sk-second")), "the fallback's own model and key");
}

#[tokio::test]
async fn fallback_answers_when_the_primary_is_unreachable_or_times_out() {
    let b = FakeLlm::start().await;
    let cases = [("unreachable", true), ("first byte timeout", false)];
    for (case, unreachable) in cases {
        b.reset();
        let a = FakeLlm::start().await;
        let mut cfg = config(&a, ProviderKind::Openai);
        cfg.first_byte_timeout_secs = 1;
        if unreachable {
            cfg.base_url = Some(dead_url().await);
        } else {
            a.push(Reply::text("too late").first_byte_delay(std::time::Duration::from_secs(3)));
        }
        cfg.fallback = vec![LlmFallback {
            provider: ProviderKind::Openai,
            base_url: Some(b.openai_url()),
            api_key: None,
            model: "local".into(),
            ..LlmFallback::default()
        }];
        let got = complete(butler::llm::from_config(&cfg).as_ref(), &ask("hi")).await.unwrap();
        assert_eq!(got.text, "echo: hi", "{case}");
        assert_eq!(b.request_count(), 1, "{case}");
    }
}

#[tokio::test]
async fn no_fallback_on_auth_or_bad_request() {
    let cases = [Reply::bad_key(), Reply::context_too_long(), Reply::unknown_model()];
    for reply in cases {
        let (a, b) = (FakeLlm::start().await, FakeLlm::start().await);
        a.push(reply);
        let err = complete(chain(&a, &b).as_ref(), &ask("x")).await.unwrap_err();
        assert!(!err.is_transient(), "{err:?}");
        assert_eq!(b.request_count(), 0, "{err:?}: the fallback must not be tried");
    }
}

#[tokio::test]
async fn no_fallback_once_streaming_started() {
    let (a, b) = (FakeLlm::start().await, FakeLlm::start().await);
    a.push(Reply::text("partial answer here").drop_after(1));
    let stream = chain(&a, &b).stream(&ask("x")).await.unwrap();
    let (evs, err) = events(stream).await;
    assert_eq!(common::assemble(&evs).text, "partial");
    assert!(err.is_some());
    assert_eq!(b.request_count(), 0);
}

#[tokio::test]
async fn the_last_error_is_returned_when_every_endpoint_fails() {
    let (a, b) = (FakeLlm::start().await, FakeLlm::start().await);
    a.on_every("", Reply::server_error(500));
    b.on_every("", Reply::server_error(529));
    let err = complete(chain(&a, &b).as_ref(), &ask("x")).await.unwrap_err();
    assert!(matches!(err, LlmError::Server { status: 529, .. }), "{err:?}");
    assert_eq!((a.request_count(), b.request_count()), (2, 2));
}

#[tokio::test]
async fn every_stream_names_the_model_that_answered_first() {
    let (a, b) = (FakeLlm::start().await, FakeLlm::start().await);
    // (primary fails, the model named)
    for (fails, model) in [(false, "test-model"), (true, "second-model")] {
        a.reset();
        if fails {
            a.on_every("", Reply::server_error(503));
        }
        let (evs, err) = events(chain(&a, &b).stream(&ask("x")).await.unwrap()).await;
        assert!(err.is_none(), "{err:?}");
        assert_eq!(evs.first(), Some(&StreamEvent::Model(model.into())), "{model}");
        assert_eq!(common::assemble(&evs).model, model);
    }
}
