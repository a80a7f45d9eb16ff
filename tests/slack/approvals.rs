//! Point 5: approvals as Block Kit buttons in the thread; who may approve is configurable per
//! workspace (`channel = "slack"`) or per channel (`conversation = "slack:C…"`): the
//! requester, Slack user ids, `role:owner`. Anyone else's click gets an ephemeral refusal and
//! changes nothing; the message is updated to show the outcome and who decided.

use crate::support::fake_llm::Reply;
use crate::support::fake_slack::{payloads as p, Posted};
use crate::{start, Rig, Setup, ALICE, BOB, BOSS, OWNER};
use butler::config::PermissionContext;
use butler::store::ApprovalStatus;
use serde_json::json;

/// Alice asks Butler (by mention in `channel`) to touch `what`; returns the thread and the
/// approval request message.
async fn request(rig: &Rig, channel: &str, what: &str) -> (String, Posted) {
    rig.llm.on(what, Reply::tool_call("touch", json!({"name": what})));
    rig.llm.on(what, Reply::text(&format!("{what} done")));
    let thread = p::ts();
    rig.send
        .event(&p::callback(&p::event_id(), p::mention(ALICE, channel, &format!("touch {what}"), &thread, None)), None)
        .await;
    let what_msg = format!("an approval request in {channel}");
    rig.slack
        .wait(20, &what_msg, |f| f.messages(channel).iter().any(|m| m.buttons.iter().any(|b| b.1.starts_with("ap:"))))
        .await;
    let msg =
        rig.slack.messages(channel).into_iter().find(|m| m.buttons.iter().any(|b| b.1.starts_with("ap:"))).unwrap();
    (thread, msg)
}

fn approval_id(msg: &Posted) -> String {
    msg.buttons[0].1.split(':').nth(1).unwrap().to_string()
}

async fn click(rig: &Rig, user: &str, name: &str, msg: &Posted, choice: &str) {
    let value = format!("ap:{}:{choice}", approval_id(msg));
    let a = rig.send.click(&p::click(user, name, &msg.channel, &msg.ts, msg.thread_ts.as_deref(), &value)).await;
    assert_eq!(a.status, 200, "{}", a.body);
}

/// Waits for the `n`th ephemeral message and returns it.
async fn ephemeral(rig: &Rig, n: usize) -> crate::support::fake_slack::Ephemeral {
    rig.slack.wait(10, &format!("{n} ephemeral messages"), |f| f.ephemerals().len() >= n).await;
    rig.slack.ephemerals()[n - 1].clone()
}

async fn status(rig: &Rig, msg: &Posted) -> ApprovalStatus {
    rig.app.app.store.approval_get(&approval_id(msg)).await.unwrap().unwrap().status
}

#[tokio::test]
async fn buttons_refusals_and_the_outcome_on_the_message() {
    let rig = start(Setup::default()).await;
    let (thread, msg) = request(&rig, "CSHIP", "lamp").await;
    assert_eq!(msg.thread_ts.as_deref(), Some(thread.as_str()), "asked in the thread");
    let labels: Vec<&str> = msg.buttons.iter().map(|b| b.0.as_str()).collect();
    assert_eq!(labels, ["Approve once", "Always for this session", "Deny"]);
    let id = approval_id(&msg);
    let values: Vec<String> = msg.buttons.iter().map(|b| b.1.clone()).collect();
    assert_eq!(values, [format!("ap:{id}:once"), format!("ap:{id}:session"), format!("ap:{id}:deny")]);
    let actions = msg.blocks.as_array().unwrap().iter().find(|b| b["type"] == "actions").unwrap();
    assert_eq!(actions["elements"][0]["style"], "primary");
    assert_eq!(actions["elements"][2]["style"], "danger");
    assert!(msg.shown().contains("*Approval needed*") && msg.shown().contains("touch `lamp`"), "{}", msg.shown());

    // Bob is not the requester: a refusal only he sees, in the thread; nothing changes.
    click(&rig, BOB, "bob", &msg, "once").await;
    let e = ephemeral(&rig, 1).await;
    assert_eq!((e.user.as_str(), e.channel.as_str()), (BOB, "CSHIP"));
    assert_eq!(e.thread_ts.as_deref(), Some(thread.as_str()));
    assert!(e.text.contains("Sorry, only the person who asked (slack:UALICE)"), "{}", e.text);
    assert_eq!(status(&rig, &msg).await, ApprovalStatus::Pending);
    assert_eq!(rig.touch.runs(), 0);
    let now = rig.slack.messages("CSHIP").into_iter().find(|m| m.ts == msg.ts).unwrap();
    assert_eq!((now.buttons.len(), now.shown()), (3, msg.shown()), "the request is unchanged");

    // Alice approves: the request shows the outcome and who decided, the turn goes on.
    click(&rig, ALICE, "alice", &msg, "once").await;
    rig.slack.wait_text("CSHIP", "lamp done").await;
    let decided = rig.slack.messages("CSHIP").into_iter().find(|m| m.ts == msg.ts).unwrap();
    assert!(decided.shown().contains("Approved by Alice"), "{}", decided.shown());
    assert!(decided.buttons.is_empty(), "no buttons after the decision");
    assert_eq!(rig.touch.runs(), 1);
    assert_eq!(status(&rig, &msg).await, ApprovalStatus::Approved);
    assert_eq!(rig.slack.ephemerals().len(), 1, "an accepted click needs no ephemeral message");

    // A late click changes nothing and says so.
    click(&rig, BOB, "bob", &msg, "deny").await;
    let e = ephemeral(&rig, 2).await;
    assert!(e.text.contains("already answered (approved by Alice)"), "{}", e.text);
    assert_eq!(rig.touch.runs(), 1);
    rig.app.stop().await;
}

#[tokio::test]
async fn approvers_per_workspace_and_per_channel() {
    let rig = start(Setup {
        tweak: Some(Box::new(|cfg| {
            let ctx = |channel: Option<&str>, conversation: Option<&str>, approvers: &[&str]| PermissionContext {
                channel: channel.map(Into::into),
                kind: None,
                role: None,
                mode: None,
                approvers: Some(approvers.iter().map(|a| a.to_string()).collect()),
                conversation: conversation.map(|c| c.parse().unwrap()),
            };
            cfg.permissions.contexts = vec![
                // The leads' channel: only the boss decides.
                ctx(None, Some("slack:CLEADS"), &["slack:UBOSS"]),
                // The rest of the workspace: an owner.
                ctx(Some("slack"), None, &["role:owner"]),
            ];
        })),
        ..Setup::default()
    })
    .await;
    // (channel, thing, refused clickers, the approver and their name)
    let cases =
        [("CLEADS", "budget", [ALICE, OWNER], (BOSS, "Boss")), ("CSHIP", "deploy", [ALICE, BOSS], (OWNER, "Owen"))];
    let mut refusals = 0;
    for (channel, what, refused, (approver, name)) in cases {
        let (_, msg) = request(&rig, channel, what).await;
        let runs = rig.touch.runs();
        for user in refused {
            click(&rig, user, "someone", &msg, "once").await;
            refusals += 1;
            let e = ephemeral(&rig, refusals).await;
            assert_eq!(e.user, user, "{channel}");
            assert!(e.text.starts_with("Sorry, only"), "{channel}: {}", e.text);
            assert_eq!(status(&rig, &msg).await, ApprovalStatus::Pending, "{channel}: {user} changed nothing");
        }
        assert_eq!(rig.touch.runs(), runs);
        click(&rig, approver, "x", &msg, "once").await;
        rig.slack.wait_text(channel, &format!("{what} done")).await;
        let decided = rig.slack.messages(channel).into_iter().find(|m| m.ts == msg.ts).unwrap();
        assert!(decided.shown().contains(&format!("Approved by {name}")), "{channel}: {}", decided.shown());
        assert_eq!(rig.touch.runs(), runs + 1);
    }
    let _ = BOB;
    rig.app.stop().await;
}
