//! Point 6: acting in the team. `send_message` posts to a Slack channel named by name
//! (`slack:#general`, resolved through conversations.list) or id, after the approval flow; a
//! signed slash command `/butler <text>` is acknowledged with an ephemeral message within 3
//! seconds and answered in the channel.

use crate::support::fake_llm::Reply;
use crate::support::fake_slack::payloads as p;
use crate::{start, Setup, ALICE};
use serde_json::json;
use std::time::{Duration, Instant};

#[tokio::test]
async fn send_message_posts_to_a_channel_by_name_or_id_after_approval() {
    let rig = start(Setup {
        tweak: Some(Box::new(|cfg| {
            cfg.tools.send_message.targets = vec!["slack:#general".parse().unwrap(), "slack:CRANDOM".parse().unwrap()];
        })),
        ..Setup::default()
    })
    .await;
    // Enough channels that finding #general takes more than one page of conversations.list.
    for i in 0..450 {
        rig.slack.add_channel(&format!("C{i:05}"), &format!("chan-{i}"));
    }
    rig.slack.add_channel("CRANDOM", "random");
    rig.llm.on(
        "announce lunch",
        Reply::tool_call("send_message", json!({"to": "slack:#general", "text": "Lunch is **served** & hot"}))
            .and_tool_call("send_message", json!({"to": "slack:CRANDOM", "text": "Lunch in #general"})),
    );
    rig.llm.on("announce lunch", Reply::text("Announced."));
    let ts = p::ts();
    rig.send
        .event(&p::callback(&p::event_id(), p::message(ALICE, "DALICE", "im", "announce lunch", &ts, None)), None)
        .await;
    // Two calls, two approval requests in Alice's DM; nothing is posted before they are approved.
    rig.slack
        .wait(20, "two approval requests", |f| {
            f.messages("DALICE").iter().filter(|m| m.buttons.iter().any(|b| b.1.starts_with("ap:"))).count() == 2
        })
        .await;
    assert!(rig.slack.messages("CGENERAL").is_empty() && rig.slack.messages("CRANDOM").is_empty());
    let requests: Vec<_> = rig.slack.messages("DALICE").into_iter().filter(|m| !m.buttons.is_empty()).collect();
    assert!(requests.iter().any(|m| m.shown().contains("send a message to slack:#general")), "{requests:#?}");
    for m in &requests {
        let once = &m.buttons[0].1;
        assert!(once.ends_with(":once"));
        let a = rig.send.click(&p::click(ALICE, "alice", "DALICE", &m.ts, None, once)).await;
        assert_eq!(a.status, 200);
    }
    let general = rig.slack.wait_text("CGENERAL", "Lunch is *served* &amp; hot").await;
    assert_eq!(general.thread_ts, None, "a top-level post");
    rig.slack.wait_text("CRANDOM", "Lunch in #general").await;
    rig.slack.wait_text("DALICE", "Announced.").await;
    let lists = rig.slack.calls_of("conversations.list");
    assert!(lists.len() >= 2, "paged through conversations.list: {}", lists.len());
    assert!(rig.slack.calls_of("chat.postMessage").iter().all(|c| c.params["channel"] != "#general"), "posted by id");
    rig.app.stop().await;
}

#[tokio::test]
async fn slash_command_is_acknowledged_ephemerally_and_answered_in_the_channel() {
    let rig = start(Setup::default()).await;
    rig.llm.on("status of the build", Reply::text("The build is green.").first_byte_delay(Duration::from_secs(4)));
    let fields = p::command(ALICE, "alice", "CBUILD", "status of the build");
    let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let started = Instant::now();
    let a = rig.send.command(&fields).await;
    let took = started.elapsed();
    assert_eq!(a.status, 200, "{}", a.body);
    assert!(took < Duration::from_secs(3), "acknowledged after {took:?}");
    let ack = a.json();
    assert_eq!(ack["response_type"], "ephemeral", "{ack}");
    assert!(ack["text"].as_str().unwrap().contains("status of the build"));
    let trigger = fields.iter().find(|(k, _)| *k == "trigger_id").unwrap().1;
    assert!(rig.app.app.store.inbox_get(&format!("slack:command:{trigger}")).await.unwrap().is_some());
    let answer = rig.slack.wait_text("CBUILD", "The build is green.").await;
    assert_eq!(answer.thread_ts, None, "answered in the channel");
    // Replies to that answer are in a thread Butler has spoken in: answered without a mention.
    let reply = p::callback(
        &p::event_id(),
        p::message(ALICE, "CBUILD", "channel", "thanks, and tests?", &p::ts(), Some(&answer.ts)),
    );
    rig.send.event(&reply, None).await;
    let next = rig.slack.wait_text("CBUILD", "thanks, and tests?").await;
    assert_eq!(next.thread_ts.as_deref(), Some(answer.ts.as_str()));

    // Without text: how to use it, and nothing stored; unsigned: 401.
    let empty = p::command(ALICE, "alice", "CBUILD", "  ");
    let empty: Vec<(&str, &str)> = empty.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let a = rig.send.command(&empty).await;
    assert_eq!(a.status, 200);
    assert!(a.json()["text"].as_str().unwrap().contains("/butler"));
    let trigger = empty.iter().find(|(k, _)| *k == "trigger_id").unwrap().1;
    assert!(rig.app.app.store.inbox_get(&format!("slack:command:{trigger}")).await.unwrap().is_none());
    let body = crate::support::fake_slack::Sender::form(&fields);
    let form = "application/x-www-form-urlencoded";
    assert_eq!(rig.send.raw("/channels/slack/commands", &body, form, None, &[]).await.status, 401);
    rig.app.stop().await;
}
