//! Files in the page: one picked with the attach button's file input and one dropped on the
//! page upload at once and show as chips; the message then carries both (the model gets the
//! image and the CSV's text) and the chips clear; a file over `[media] max_bytes` is refused in
//! the page, never uploaded, and not sent. A file Butler sends is a link to it.

use super::driver::*;
use crate::support::app::{config, TestApp};
use crate::support::fake_llm::{FakeLlm, Reply};
use crate::support::payloads::png;
use fantoccini::Locator;
use serde_json::json;

/// Drops a made-up file (`size` bytes of `content` repeated) on the page, as a person dragging
/// it from their desktop would.
async fn drop_file(page: &fantoccini::Client, name: &str, mime: &str, content: &str, size: usize) {
    let script = format!(
        "const text = {content}.repeat(Math.ceil({size} / {content}.length)).slice(0, {size});
         const dt = new DataTransfer();
         dt.items.add(new File([text], {name}, {{ type: {mime} }}));
         document.getElementById('messages').dispatchEvent(new DragEvent('drop', {{ dataTransfer: dt, bubbles: true, cancelable: true }}));
         return true;",
        content = json!(content),
        name = json!(name),
        mime = json!(mime),
    );
    js(page, &script).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn picked_and_dropped_files_go_with_the_message_and_big_ones_stay_behind() {
    let fake = FakeLlm::start().await;
    fake.on("what are these", Reply::text("A gradient and a table."));
    let (mut cfg, dir) = config(Some(&fake.openai_url()));
    cfg.tools.workspace_dir = dir.path().join("ws").display().to_string();
    cfg.media.max_bytes = 100 * 1024;
    let uploads = dir.path().join("ws/.web-files");
    let picture = dir.path().join("sunset.png");
    std::fs::write(&picture, png(256, 128)).unwrap();
    let app = TestApp::start(cfg, Some(dir)).await;
    let (_driver, page) = open_browser().await;
    load_page(&page, &app).await;

    let input = page.find(Locator::Id("file-input")).await.expect("the file input");
    input.send_keys(&picture.display().to_string()).await.expect("pick the file");
    drop_file(&page, "rev.csv", "text/csv", "month,revenue\nfeb,1350\n", 60).await;
    drop_file(&page, "huge.txt", "text/plain", "x", 200 * 1024).await;
    let chips = wait_js(
        &page,
        "two chips ready and one refused",
        "const c = [...document.querySelectorAll('.file-chip')].map((e) => [e.dataset.status, e.textContent]);
         return c.length === 3 && c.every((x) => x[0] !== 'uploading') ? c : null;",
    )
    .await;
    let chips: Vec<(String, String)> = serde_json::from_value(chips).unwrap();
    let status = |name: &str| chips.iter().find(|c| c.1.contains(name)).map(|c| c.0.clone());
    assert_eq!(status("sunset.png").as_deref(), Some("ready"), "{chips:?}");
    assert_eq!(status("rev.csv").as_deref(), Some("ready"), "{chips:?}");
    assert_eq!(status("huge.txt").as_deref(), Some("failed"), "{chips:?}");
    assert!(chips.iter().any(|c| c.1.contains("larger than the 100 KB limit")), "{chips:?}");
    let stored = std::fs::read_dir(&uploads).unwrap().count();
    assert_eq!(stored, 4, "two uploads and their descriptions; the big file never left the page");

    send_message(&page, "what are these").await;
    wait_final_reply(&page, "the reply", "t.includes('A gradient')").await;
    let req = fake.last_request().expect("the model was asked");
    assert_eq!(req.images().len(), 1, "the picked PNG");
    assert!(req.last_user_text().contains("feb,1350"), "{}", req.last_user_text());
    let page_state = js(
        &page,
        "const mine = [...document.querySelectorAll('#messages .msg.user .text')].pop();
         return { shown: mine.textContent, chips: document.querySelectorAll('.file-chip').length,
                  tray: document.getElementById('attachments').hidden };",
    )
    .await;
    let shown = page_state["shown"].as_str().unwrap();
    assert!(shown.contains("📎 sunset.png") && shown.contains("📎 rev.csv") && !shown.contains("huge"), "{page_state}");
    assert_eq!(page_state["chips"], 0, "{page_state}");
    assert_eq!(page_state["tray"], true, "{page_state}");
    app.stop().await;
}
