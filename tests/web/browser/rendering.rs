//! What the page builds from model text beyond the basics: Markdown tables as `<table>`
//! elements, a copy button on code blocks, links that open in a new tab without an opener,
//! and status icons with a word shown instead where no emoji font is installed. All built as
//! DOM nodes from text; must never let model text become markup (a cell with HTML stays text).

use super::driver::*;
use crate::support::app::{config, TestApp};
use crate::support::fake_llm::{FakeLlm, Reply};
use fantoccini::Locator;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_copy_buttons_safe_links_and_status_words() {
    let fake = FakeLlm::start().await;
    let md = "\u{2705} Done: the table.\n\n\
              | Name | Count | Note |\n|:-----|------:|:----:|\n| **a** | 1 | <img src=x onerror=\"window.__pwned=1\"> |\n\
              | b \\| c | 22 | [site](https://example.com) |\n\n\
              ```sh\necho copied-text\n```\n\n\u{23f9} Stopped.";
    fake.on("table", Reply::chunks([md]));
    let (cfg, dir) = config(Some(&fake.openai_url()));
    let app = TestApp::start(cfg, Some(dir)).await;
    let (_driver, page) = open_browser().await;
    load_page(&page, &app).await;

    send_message(&page, "a table please").await;
    wait_final_reply(&page, "the reply", "t.includes('Stopped.')").await;
    let r = js(
        &page,
        "const t = [...document.querySelectorAll('#messages .msg.assistant .text')].pop();
         const tab = t.querySelector('table');
         const texts = (s) => [...tab.querySelectorAll(s)].map((e) => e.textContent);
         const a = t.querySelector('table a');
         return {
           head: texts('thead th'),
           rows: [...tab.querySelectorAll('tbody tr')].map((tr) => [...tr.children].map((c) => c.textContent)),
           align: [...tab.querySelectorAll('thead th')].map((c) => c.style.textAlign),
           strong: texts('tbody strong'),
           imgs: t.querySelectorAll('img').length,
           pwned: typeof window.__pwned,
           link: a && [a.getAttribute('href'), a.target, a.rel],
           copy: [...t.querySelectorAll('.code-block .copy')].map((b) => b.textContent),
           code: [...t.querySelectorAll('.code-block pre code')].map((c) => c.textContent),
           icons: [...t.querySelectorAll('.status-icon')].map((i) => [i.textContent, i.dataset.label]),
           text: t.textContent,
         };",
    )
    .await;
    assert_eq!(r["head"], json!(["Name", "Count", "Note"]), "{r:#}");
    assert_eq!(
        r["rows"],
        json!([["a", "1", "<img src=x onerror=\"window.__pwned=1\">"], ["b | c", "22", "site"]]),
        "{r:#}"
    );
    assert_eq!(r["align"], json!(["left", "right", "center"]), "{r:#}");
    assert_eq!(r["strong"], json!(["a"]), "{r:#}");
    assert_eq!(r["imgs"], 0, "a cell's HTML stays text: {r:#}");
    assert_eq!(r["pwned"], "undefined", "{r:#}");
    let link = &r["link"];
    assert_eq!(link[0], "https://example.com/", "{r:#}");
    assert_eq!(link[1], "_blank", "{r:#}");
    let rel = link[2].as_str().unwrap();
    assert!(rel.contains("noopener") && rel.contains("noreferrer"), "{r:#}");
    assert_eq!(r["copy"], json!(["Copy"]), "one copy button on the code block: {r:#}");
    assert_eq!(r["code"], json!(["echo copied-text"]), "{r:#}");
    assert_eq!(r["icons"], json!([["\u{2705}", "Done"], ["\u{23f9}", "Stopped"]]), "{r:#}");

    // The copy button answers (copied, or the code selected when the clipboard is refused).
    page.find(Locator::Css("#messages .code-block .copy"))
        .await
        .expect("the copy button")
        .click()
        .await
        .expect("click");
    let after = wait_js(
        &page,
        "the copy button to answer",
        "const b = document.querySelector('#messages .code-block .copy');
         return b.textContent !== 'Copy' && b.dataset.copied ? [b.textContent, b.dataset.copied, String(window.getSelection())] : null;",
    )
    .await;
    match after[1].as_str() {
        Some("yes") => assert_eq!(after[0], "Copied", "{after}"),
        Some("selected") => assert_eq!(after[2], "echo copied-text", "the code is selected instead: {after}"),
        other => panic!("unexpected copy state {other:?}: {after}"),
    }

    // Without an emoji font the status words are drawn instead of the icons.
    let shown = js(
        &page,
        "document.documentElement.classList.add('no-emoji');
         const i = document.querySelector('#messages .status-icon');
         return [getComputedStyle(i, '::before').content, getComputedStyle(i.querySelector('.glyph')).display];",
    )
    .await;
    assert_eq!(shown, json!(["\"Done\"", "none"]), "the word replaces the icon");

    page.close().await.expect("close the browser");
    app.stop().await;
}
