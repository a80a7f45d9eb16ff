//! Issue 30, point 7 (no unfurling): every sendMessage and editMessageText of a reply, the
//! streamed draft and its edits included, asks Telegram for no link preview
//! (`link_preview_options: {"is_disabled": true}`), unless `[channels.telegram]
//! link_previews = true` allows them; then the option is left out (Telegram's default).

use crate::support::fake_llm::Reply;
use crate::support::fake_telegram::updates::dm;
use crate::{Tg, OWNER};
use serde_json::{json, Value};
use std::time::Duration;

#[tokio::test]
async fn replies_ask_for_no_link_preview_unless_previews_are_allowed() {
    // (what the section says, the link_preview_options every send and edit carries)
    let cases: [(Option<bool>, Value); 3] =
        [(None, json!({"is_disabled": true})), (Some(false), json!({"is_disabled": true})), (Some(true), Value::Null)];
    for (allowed, want) in cases {
        let tweak = move |cfg: &mut butler::config::Config| {
            let section = cfg.channels.platforms.get_mut("telegram").unwrap();
            match allowed {
                None => section.remove("link_previews"),
                Some(a) => section.insert("link_previews".into(), a.into()),
            };
        };
        let tg = Tg::start_with(tweak, vec![]).await;
        tg.polling().await;
        let words: Vec<String> =
            (0..16).map(|i| format!("w{i} ")).chain(["https://leak.example/?k=s3cret".into()]).collect();
        tg.llm.on("link please", Reply::chunks(words.clone()).chunk_delay(Duration::from_millis(120)));
        tg.fake.push(dm(OWNER, 1, "link please"));
        let full = words.concat();
        tg.fake
            .wait_chat(OWNER, 30, "the final text", |m| m.len() == 1 && m[0].text == full && m[0].buttons.is_empty())
            .await;
        let sends = tg.fake.calls("sendMessage");
        let edits = tg.fake.calls("editMessageText");
        assert!(!sends.is_empty() && !edits.is_empty(), "{allowed:?}: a draft sent, then edited");
        for call in sends.iter().chain(&edits) {
            assert_eq!(call.body["link_preview_options"], want, "{allowed:?}: {} {}", call.method, call.body);
        }
        tg.stop().await;
    }
}
