//! The page's Usage panel and the owner's Status page (issue 30 points 1 and 8): after a priced
//! turn, Usage shows today's spend by model; the owner sees the Status button, and its page
//! shows the model with its price, the channels, the schedules with their next run and the
//! data, live (a second turn shows up without reopening it). Looks only at what the page shows.

use super::driver::*;
use crate::support::app::{config, daily_job, TestApp};
use crate::support::fake_llm::{FakeLlm, Reply};
use fantoccini::Locator;

/// Waits until the open panel's text contains every one of `parts`; returns the text.
async fn panel_shows(page: &fantoccini::Client, what: &str, parts: &[&str]) -> String {
    let script = format!(
        "const d = document.getElementById('panel');
         const t = d && d.open ? document.getElementById('panel-body').textContent : '';
         return {}.every((p) => t.includes(p)) ? t : null;",
        serde_json::json!(parts)
    );
    wait_js(page, what, &script).await.as_str().unwrap_or_default().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_shows_the_spend_and_the_owner_sees_a_live_status_page() {
    let fake = FakeLlm::start().await;
    let (mut cfg, dir) = config(Some(&fake.openai_url()));
    cfg.llm.input_price_per_mtok = Some(2.0);
    cfg.llm.output_price_per_mtok = Some(8.0);
    cfg.limits.max_usd_per_day = Some(5.0);
    cfg.schedules = vec![daily_job("morning-news", "Europe/Berlin")];
    let app = TestApp::start(cfg, Some(dir)).await;
    fake.on("priced", Reply::text("an answer").usage(1000, 100));
    fake.on("again", Reply::text("another").usage(1000, 100));

    let (_driver, page) = open_browser().await;
    load_page(&page, &app).await;
    send_message(&page, "priced question").await;
    app.wait_replies(&page_conversation(&page).await, 1, 30).await;

    page.find(Locator::Id("usage-btn")).await.unwrap().click().await.unwrap();
    // 1000 in at $2 and 100 out at $8 per million: $0.0028.
    panel_shows(&page, "today's spend by model", &["Today: $0.0028", "fake-model: $0.0028", "$5.00 per day"]).await;
    page.find(Locator::Id("panel-close")).await.unwrap().click().await.unwrap();

    wait_js(&page, "the owner's Status button", "return document.getElementById('status-btn').hidden ? null : true;")
        .await;
    page.find(Locator::Id("status-btn")).await.unwrap().click().await.unwrap();
    let shown = panel_shows(
        &page,
        "the status page",
        &[
            "main: openai fake-model",
            "fake-model: $2 in, $8 out per million tokens (config)",
            "web: running",
            "morning-news (cron 0 8 * * *, Europe/Berlin)",
            "$0.0028 spent by everyone",
            "$5.00 per person per day",
            "Database: sqlite",
        ],
    )
    .await;
    assert!(!shown.contains("not scheduled"), "the job has a next run: {shown}");
    // Live: another turn's spend appears while the page stays open.
    app.post(&page_conversation(&page).await, "local", "again please").await;
    panel_shows(&page, "the status page refreshed", &["$0.0056 spent by everyone"]).await;
}

/// The conversation the page has open.
async fn page_conversation(page: &fantoccini::Client) -> String {
    let id = js(page, "return localStorage.getItem('butler.conversation');").await;
    id.as_str().expect("the page keeps its conversation").to_string()
}
