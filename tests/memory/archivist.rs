//! The archivist: after the reply is delivered (never delaying it) it distils durable facts
//! into memories - no duplicates, changed facts updated, cost recorded; it can be switched off.

use crate::support::app::{config, TestApp};
use crate::support::fake_llm::{FakeLlm, Reply};
use crate::{eventually, replies};
use butler::store::MemoryScope;
use std::time::Duration;

const ARCHIVIST: &str = "Known memories:";

async fn memories(app: &TestApp) -> Vec<String> {
    app.app.store.memory_list(&MemoryScope::personal("local"), 50).await.unwrap().into_iter().map(|m| m.text).collect()
}

#[tokio::test]
async fn facts_are_distilled_after_the_reply_without_duplicates() {
    let llm = FakeLlm::start().await;
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    cfg.memory.archivist = true;
    cfg.llm.input_price_per_mtok = Some(1.0);
    let app = TestApp::start(cfg, Some(dir)).await;

    // The archivist's call is slow: the reply must not wait for it.
    llm.on(
        ARCHIVIST,
        Reply::text(r#"{"add": ["Lives in Porto", "Loves green tea"]}"#)
            .first_byte_delay(Duration::from_secs(2))
            .usage(300, 20),
    );
    app.post("a", "local", "I moved to Porto last month and I love green tea").await;
    let texts = replies(&app, "a", 1).await;
    assert_eq!(texts[0], "echo: I moved to Porto last month and I love green tea");
    assert!(memories(&app).await.is_empty(), "the reply came before the archivist finished");
    eventually("the distilled facts", || async { memories(&app).await.len() == 2 }).await;
    let archivist_req = llm.requests().into_iter().find(|r| r.last_user_text().contains(ARCHIVIST)).unwrap();
    assert!(archivist_req.last_user_text().contains("User: I moved to Porto last month"));

    // The same facts again, one of them changed: no duplicate, the changed one is updated.
    let porto = app.app.store.memory_search(&MemoryScope::personal("local"), "Porto", 1).await.unwrap()[0].id;
    llm.on(
        ARCHIVIST,
        Reply::text(&format!(r#"{{"add": ["Loves green tea.", "loves GREEN tea"], "update": [{{"id": {porto}, "text": "Lives in Lisbon"}}]}}"#)),
    );
    app.post("a", "local", "Actually I moved from Porto to Lisbon, still love green tea").await;
    replies(&app, "a", 2).await;
    eventually("the update", || async { memories(&app).await.contains(&"Lives in Lisbon".to_string()) }).await;
    let mut now = memories(&app).await;
    now.sort();
    assert_eq!(now, ["Lives in Lisbon", "Loves green tea"]);

    // Its cost is recorded like any turn's (but it is not counted as a turn).
    let totals = app.app.store.usage_since("local", 0).await.unwrap();
    assert_eq!(totals.turns, 2);
    assert!(totals.input_tokens >= 300 && totals.cost_usd > 0.0, "{totals:?}");
    app.stop().await;
}

#[tokio::test]
async fn the_archivist_can_be_switched_off_and_never_touches_unseen_memories() {
    let llm = FakeLlm::start().await;
    let (cfg, dir) = config(Some(&llm.openai_url()));
    let app = TestApp::start(cfg.clone(), Some(dir)).await; // archivist off in test configs
    app.post("o", "local", "I have two brothers and a sister").await;
    replies(&app, "o", 1).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(llm.request_count(), 1, "no archivist call when switched off");
    app.stop().await;

    let llm = FakeLlm::start().await;
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    cfg.memory.archivist = true;
    let app = TestApp::start(cfg, Some(dir)).await;
    let me = MemoryScope::personal("local");
    let unrelated = app.app.store.memory_add(&me, "Works nights at the hospital", None).await.unwrap();
    llm.on(ARCHIVIST, Reply::text(&format!(r#"{{"forget": [{}], "add": []}}"#, unrelated.id)));
    app.post("o", "local", "My brothers visited yesterday").await;
    replies(&app, "o", 1).await;
    eventually("the archivist call", || async { llm.request_count() == 2 }).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(memories(&app).await, ["Works nights at the hospital"], "it may only change memories it was shown");
    app.stop().await;
}
