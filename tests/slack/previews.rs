//! Issue 30, point 7 (no unfurling): every chat.postMessage and chat.update of a reply, the
//! streamed draft and its updates included, asks Slack not to unfurl (`unfurl_links` and
//! `unfurl_media` false), unless `[channels.slack] link_previews = true` allows it; then both
//! are left out (Slack's default).

use crate::support::fake_llm::Reply;
use crate::support::fake_slack::payloads as p;
use crate::{start, Setup, ALICE};
use serde_json::{json, Value};
use std::time::Duration;

#[tokio::test]
async fn replies_ask_for_no_unfurling_unless_previews_are_allowed() {
    // (what the section says, the (unfurl_links, unfurl_media) every post and update carries)
    let off = (json!(false), json!(false));
    let cases: [(Option<bool>, (Value, Value)); 3] =
        [(None, off.clone()), (Some(false), off), (Some(true), (Value::Null, Value::Null))];
    for (allowed, want) in cases {
        let tweak = move |cfg: &mut butler::config::Config| {
            let section = cfg.channels.platforms.get_mut("slack").unwrap();
            match allowed {
                None => section.remove("link_previews"),
                Some(a) => section.insert("link_previews".into(), a.into()),
            };
        };
        let rig = start(Setup { tweak: Some(Box::new(tweak)), ..Setup::default() }).await;
        let words: Vec<String> =
            (0..20).map(|i| format!("word{i} ")).chain(["https://leak.example/?k=s3cret".into()]).collect();
        rig.llm.on("link please", Reply::chunks(words).chunk_delay(Duration::from_millis(100)));
        let ts = p::ts();
        let event = p::callback(&p::event_id(), p::mention(ALICE, "CLINK", "link please", &ts, None));
        assert_eq!(rig.send.event(&event, None).await.status, 200);
        rig.slack
            .wait(20, "the final text", |f| {
                f.messages("CLINK").first().is_some_and(|m| m.shown().contains("leak.example") && m.buttons.is_empty())
            })
            .await;
        let posts = rig.slack.calls_of("chat.postMessage");
        let updates = rig.slack.calls_of("chat.update");
        assert!(!posts.is_empty() && !updates.is_empty(), "{allowed:?}: a draft posted, then updated");
        for call in posts.iter().chain(&updates) {
            let got = (call.params["unfurl_links"].clone(), call.params["unfurl_media"].clone());
            assert_eq!(got, want, "{allowed:?}: {} {}", call.method, call.params);
        }
        rig.app.stop().await;
    }
}
