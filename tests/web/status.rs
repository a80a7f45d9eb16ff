//! The owner's status page (`GET /api/v1/status`, issue 30 point 8): the model and its tiers
//! with their prices (an unpriced one named), the channels, the MCP servers, the skills, the
//! schedules with their next run, today's usage against the budgets, the data folder and the
//! database, live; never a secret; anyone but the owner gets a 403 JSON error.

use crate::support::app::{config, daily_job, TestApp};
use crate::support::fake_llm::{FakeLlm, Reply};
use butler::config::LlmTier;
use serde_json::Value;

#[tokio::test]
async fn the_owner_sees_the_running_parts_and_nobody_else_does() {
    let llm = FakeLlm::start().await;
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    cfg.llm.api_key = Some(butler::config::Secret::new("sk-status-secret-123"));
    cfg.llm.input_price_per_mtok = Some(2.0);
    cfg.llm.output_price_per_mtok = Some(8.0);
    cfg.llm.tiers.insert("worker".into(), LlmTier { model: Some("gpt-4o-mini".into()), ..Default::default() });
    cfg.llm.tiers.insert("local".into(), LlmTier { model: Some("llama3.1".into()), ..Default::default() });
    cfg.limits.max_usd_per_turn = Some(0.5);
    cfg.schedules = vec![daily_job("morning", "Asia/Tokyo")];
    let app = TestApp::start(cfg, Some(dir)).await;
    llm.on("hello", Reply::text("hi").usage(1000, 100));
    app.post("s1", "local", "hello").await;
    app.wait_replies("s1", 1, 30).await;

    let http = reqwest::Client::new();
    let res = http.get(app.url("/api/v1/status?user=local")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    let text = res.text().await.unwrap();
    assert!(!text.contains("sk-status-secret-123"), "no secret on the page: {text}");
    let page: Value = serde_json::from_str(&text).unwrap();
    let models: Vec<(&str, &str)> = page["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["tier"].as_str().unwrap(), m["model"].as_str().unwrap()))
        .collect();
    assert_eq!(models, [("main", "fake-model"), ("local", "llama3.1"), ("worker", "gpt-4o-mini")]);
    let prices: Vec<&str> = page["prices"].as_array().unwrap().iter().map(|p| p.as_str().unwrap()).collect();
    assert_eq!(prices[0], "fake-model: $2 in, $8 out per million tokens (config)");
    assert!(
        prices.contains(&"gpt-4o-mini: $0.15 in, $0.6 out per million tokens, cached $0.075 (price book)"),
        "{prices:?}"
    );
    assert_eq!(page["unpriced"], serde_json::json!(["llama3.1"]));
    assert!(page["channels"].as_array().unwrap().iter().any(|c| c["name"] == "web" && c["sent"].as_u64() >= Some(1)));
    assert!(
        page["skills"].as_array().unwrap().iter().any(|s| s.is_string()),
        "the built-in skills: {}",
        page["skills"]
    );
    let job = &page["schedules"][0];
    assert_eq!(
        (job["name"].as_str(), job["when"].as_str(), job["tz"].as_str()),
        (Some("morning"), Some("cron 0 8 * * *"), Some("Asia/Tokyo"))
    );
    assert!(job["next_fire_ms"].as_i64().unwrap() > butler::store::now_ms());
    let today = &page["today"];
    assert!((today["cost_usd"].as_f64().unwrap() - (1000.0 * 2.0 + 100.0 * 8.0) / 1e6).abs() < 1e-9, "{today}");
    assert_eq!(page["max_usd_per_turn"].as_f64(), Some(0.5));
    assert!(page["database"].as_str().unwrap().starts_with("sqlite "), "{}", page["database"]);
    assert!(!page["data_dir"].as_str().unwrap().is_empty());

    // Anyone else: the same refusal, as JSON.
    for user in ["stranger", "bob"] {
        let res = http.get(app.url(&format!("/api/v1/status?user={user}"))).send().await.unwrap();
        assert_eq!(res.status(), 403, "{user}");
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["error"]["code"], "owner_only", "{body}");
    }
    app.stop().await;
}
