//! An approval request's long detail on the page (issue 30, point 5): the message carries all
//! of it, the page shows its first 30 lines, "… N more lines" and a "Show all" button that shows
//! the rest in place; a long code block in an ordinary reply is not folded.

use super::driver::*;
use crate::support::app::{config, TestApp};
use crate::support::fake_llm::{FakeLlm, Reply};
use fantoccini::Locator;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_detail_is_folded_and_show_all_unfolds_it() {
    let fake = FakeLlm::start().await;
    let long: String = (1..=200).map(|n| format!("{n}. a line of the long list\n")).collect();
    fake.on("write the long list", Reply::tool_call("file_write", json!({"path": "long.md", "content": long})));
    fake.on("show some code", Reply::chunks([format!("Here:\n\n```\n{long}```\n\nDone.")]));
    let (mut cfg, dir) = config(Some(&fake.openai_url()));
    cfg.tools.workspace_dir = dir.path().join("workspaces").display().to_string();
    let app = TestApp::start(cfg, Some(dir)).await;
    let (_driver, page) = open_browser().await;
    load_page(&page, &app).await;

    send_message(&page, "write the long list").await;
    let folded = wait_js(
        &page,
        "the folded request",
        "const m = [...document.querySelectorAll('#messages .msg.assistant')].find(m => m.querySelector('.show-all'));
         if (!m) return null;
         return { lines: m.querySelector('pre code').textContent.split('\\n'), note: m.querySelector('.fold-note').textContent };",
    )
    .await;
    let lines = folded["lines"].as_array().unwrap();
    assert_eq!(lines.len(), 30, "{folded:#}");
    assert_eq!(
        (lines[0].as_str(), lines[29].as_str()),
        (Some("1. a line of the long list"), Some("30. a line of the long list"))
    );
    assert_eq!(folded["note"], "… 170 more lines");

    page.find(Locator::Css("#messages .show-all")).await.expect("Show all").click().await.expect("click Show all");
    let all = wait_js(
        &page,
        "the whole detail",
        "const c = [...document.querySelectorAll('#messages .msg.assistant pre code')].pop();
         const lines = c.textContent.split('\\n');
         return lines.length === 200 && !document.querySelector('#messages .fold') ? lines[199] : null;",
    )
    .await;
    assert_eq!(all, "200. a line of the long list");

    // An ordinary reply's code block is shown whole.
    send_message(&page, "show some code").await;
    wait_final_reply(&page, "the reply with code", "t.endsWith('Done.')").await;
    let code = js(
        &page,
        "const m = [...document.querySelectorAll('#messages .msg.assistant')].pop();
         return [m.querySelector('pre code').textContent.split('\\n').length, m.querySelectorAll('.fold').length];",
    )
    .await;
    assert_eq!(code, json!([200, 0]));
    page.close().await.expect("close the browser");
    app.stop().await;
}
