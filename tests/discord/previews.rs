//! Issue 30, point 7 (no unfurling): every message Butler creates and every edit of it, the
//! streamed draft and its edits included, carries Discord's SUPPRESS_EMBEDS flag (1 << 2), so
//! Discord fetches no link preview, unless `[channels.discord] link_previews = true` allows
//! them; then no flags are sent (Discord's default).

use crate::support::fake_discord::FakeDiscord;
use crate::support::fake_llm::Reply;
use crate::{alice, Rig, DM};
use serde_json::{json, Value};
use std::time::Duration;

#[tokio::test]
async fn replies_suppress_embeds_unless_previews_are_allowed() {
    // (what the section says, the flags every create and edit carries)
    let cases: [(Option<bool>, Value); 3] = [(None, json!(4)), (Some(false), json!(4)), (Some(true), Value::Null)];
    for (allowed, want) in cases {
        let tweak = move |cfg: &mut butler::config::Config| {
            let section = cfg.channels.platforms.get_mut("discord").unwrap();
            match allowed {
                None => section.remove("link_previews"),
                Some(a) => section.insert("link_previews".into(), a.into()),
            };
        };
        let rig = Rig::start_on(FakeDiscord::start().await, vec![], tweak).await;
        let words: Vec<String> =
            (0..16).map(|i| format!("word{i} ")).chain(["https://leak.example/?k=s3cret".into()]).collect();
        let full = words.concat();
        rig.llm.on(
            "link please",
            Reply::chunks(words).first_byte_delay(Duration::from_millis(600)).chunk_delay(Duration::from_millis(150)),
        );
        rig.dm(&alice(), "link please");
        rig.discord
            .wait_for(30, "the final text", |f| {
                f.bot_messages(DM)
                    .into_iter()
                    .find(|m| m.content.trim_end() == full.trim_end() && m.buttons().is_empty())
            })
            .await;
        let messages = format!("/api/v10/channels/{DM}/messages");
        let calls = rig.discord.calls();
        let creates: Vec<_> = calls.iter().filter(|c| c.method == "POST" && c.path == messages).collect();
        let edits: Vec<_> =
            calls.iter().filter(|c| c.method == "PATCH" && c.path.starts_with(&format!("{messages}/"))).collect();
        assert!(!creates.is_empty() && !edits.is_empty(), "{allowed:?}: a draft created, then edited");
        for call in creates.iter().chain(&edits) {
            assert_eq!(call.body["flags"], want, "{allowed:?}: {} {} {}", call.method, call.path, call.body);
        }
        rig.stop().await;
    }
}
