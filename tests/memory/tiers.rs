//! Usage under the model that answered, and background work on the `worker` tier: a turn whose
//! calls two models answered is one usage row per model, each at its own prices; the archivist
//! and the compaction summary ask the worker tier's model when `[llm.tiers.worker]` is set (the
//! main model otherwise) and their rows name that model and its prices.

use crate::support::app::{config, TestApp};
use crate::support::fake_llm::{FakeLlm, Reply};
use crate::{eventually, replies};
use butler::config::{LlmFallback, LlmTier, ProviderKind};
use serde_json::json;

const ARCHIVIST: &str = "Known memories:";
const SUMMARIZER: &str = "Summarize this conversation so far";

/// USD for `input` and `output` tokens at `prices` per million.
fn cost(tokens: (i64, i64), prices: (f64, f64)) -> f64 {
    (tokens.0 as f64 * prices.0 + tokens.1 as f64 * prices.1) / 1e6
}

#[tokio::test]
async fn each_call_is_recorded_under_the_model_that_answered_it() {
    let (primary, backup) = (FakeLlm::start().await, FakeLlm::start().await);
    let (mut cfg, dir) = config(Some(&primary.openai_url()));
    cfg.llm.input_price_per_mtok = Some(2.0);
    cfg.llm.output_price_per_mtok = Some(4.0);
    cfg.llm.fallback = vec![LlmFallback {
        provider: ProviderKind::Openai,
        base_url: Some(backup.openai_url()),
        model: "backup-model".into(),
        input_price_per_mtok: Some(1.0),
        output_price_per_mtok: Some(3.0),
        ..LlmFallback::default()
    }];
    let app = TestApp::start(cfg, Some(dir)).await;

    // One turn, two models: the primary asks for a tool, then fails; the fallback answers.
    primary.on("what time", Reply::tool_call("now", json!({})).usage(1000, 100));
    primary.on("what time", Reply::server_error(503));
    backup.on("what time", Reply::text("It is late.").usage(500, 50));
    app.post("u", "local", "what time is it?").await;
    assert_eq!(replies(&app, "u", 1).await[0], "It is late.");
    // A turn only the fallback answers.
    primary.on("hello", Reply::server_error(503));
    backup.on("hello", Reply::text("Hi.").usage(300, 30));
    app.post("u", "local", "hello there").await;
    assert_eq!(replies(&app, "u", 2).await[1], "Hi.");
    assert_eq!(backup.last_request().unwrap().model(), "backup-model");

    let rows: Vec<_> = app.usage_rows().await.into_iter().filter(|r| r.kind == "turn").collect();
    // (model, tokens, iterations, cost): the first row of a turn carries its iterations.
    let want = [
        ("fake-model", (1000, 100), 2, cost((1000, 100), (2.0, 4.0))),
        ("backup-model", (500, 50), 0, cost((500, 50), (1.0, 3.0))),
        ("backup-model", (300, 30), 1, cost((300, 30), (1.0, 3.0))),
    ];
    assert_eq!(rows.len(), want.len(), "{rows:?}");
    for (row, (model, tokens, iterations, usd)) in rows.iter().zip(want) {
        assert_eq!(
            (row.model.as_str(), (row.input_tokens, row.output_tokens), row.iterations),
            (model, tokens, iterations)
        );
        assert!((row.cost_usd - usd).abs() < 1e-12, "{row:?}: want {usd}");
    }
    let totals = app.app.store.usage_since("local", 0).await.unwrap();
    assert_eq!(totals.turns, 2, "a turn two models answered is one turn");
    let all: f64 = want.iter().map(|w| w.3).sum();
    assert!((totals.cost_usd - all).abs() < 1e-12, "{totals:?}");
    app.stop().await;
}

#[tokio::test]
async fn the_archivist_and_compaction_run_on_the_worker_tier_when_one_is_configured() {
    // (worker tier configured, the model background calls name, its prices per million)
    let cases = [(true, "small-model", (1.0, 2.0)), (false, "fake-model", (10.0, 20.0))];
    for (tier, model, prices) in cases {
        let llm = FakeLlm::start().await;
        llm.on_every(ARCHIVIST, Reply::text("{}").usage(100, 10));
        llm.on_every(SUMMARIZER, Reply::text("SUMMARY: earlier chat.").usage(200, 20));
        let (mut cfg, dir) = config(Some(&llm.openai_url()));
        cfg.memory.archivist = true;
        cfg.llm.input_price_per_mtok = Some(10.0);
        cfg.llm.output_price_per_mtok = Some(20.0);
        if tier {
            let worker = LlmTier {
                model: Some("small-model".into()),
                input_price_per_mtok: Some(1.0),
                output_price_per_mtok: Some(2.0),
                ..LlmTier::default()
            };
            cfg.llm.tiers.insert("worker".into(), worker);
        }
        let app = TestApp::start(cfg, Some(dir)).await;
        for i in 0..4 {
            app.post("w", "local", &format!("message number {i}")).await;
            replies(&app, "w", i + 1).await;
        }
        // "Too long": one forced compaction, then the retry.
        llm.on("the big one", Reply::context_too_long());
        llm.on("the big one", Reply::text("Answered after compaction."));
        app.post("w", "local", "the big one").await;
        assert_eq!(replies(&app, "w", 5).await[4], "Answered after compaction.");
        let archived = || async { app.usage_rows().await.iter().filter(|r| r.kind == "archivist").count() >= 4 };
        eventually("the archivist's usage", archived).await;

        for req in llm.requests() {
            let text = req.last_user_text();
            let background = text.contains(ARCHIVIST) || text.contains(SUMMARIZER);
            let want = if background { model } else { "fake-model" };
            assert_eq!(req.model(), want, "tier {tier}: {}", &text[..text.len().min(40)]);
        }
        let rows = app.usage_rows().await;
        for (kind, tokens) in [("archivist", (100, 10)), ("compaction", (200, 20))] {
            let of_kind: Vec<_> = rows.iter().filter(|r| r.kind == kind).collect();
            assert!(!of_kind.is_empty(), "tier {tier}: no {kind} row");
            for row in of_kind {
                assert_eq!((row.model.as_str(), row.user_id.as_str()), (model, "local"), "tier {tier}: {row:?}");
                assert!((row.cost_usd - cost(tokens, prices)).abs() < 1e-12, "tier {tier}: {row:?}");
            }
        }
        assert!(rows.iter().filter(|r| r.kind == "turn").all(|r| r.model == "fake-model"), "{rows:?}");
        app.stop().await;
    }
}
