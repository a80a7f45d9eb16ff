//! Point 2: approvals as message components. The request is a message with an action row of
//! buttons (`ap:<id>:once|session|deny`, primary/secondary/danger). A click (INTERACTION_CREATE)
//! is acknowledged with a deferred update (type 6) within 3 seconds, before the slow work it
//! starts, and the request message is then edited to the outcome with its buttons removed.
//! A click by anyone else gets an ephemeral refusal (flags 64) and changes nothing.

use crate::support::fake_discord::FakeDiscord;
use crate::support::fake_llm::Reply;
use crate::support::touch::Touch;
use crate::{alice, bob, Rig, GENERAL};
use butler::store::ApprovalStatus;
use serde_json::json;
use std::time::{Duration, Instant};

#[tokio::test]
async fn approvals_are_buttons_clicks_are_acknowledged_at_once_and_edited_to_the_outcome() {
    // Takes a while, so the acknowledgement must come before it ends.
    let touch = Touch::slow(Duration::from_millis(1500));
    let rig = Rig::start_on(FakeDiscord::start().await, vec![touch.clone()], |cfg| {
        cfg.permissions.approvers = vec!["requester".into()];
    })
    .await;
    rig.llm.on("lamp", Reply::tool_call("touch", json!({"name": "lamp"})));
    rig.llm.on("lamp", Reply::text("lamp done"));
    rig.say(GENERAL, &alice(), "please touch the lamp", |m| m.mentioning_bot());

    // The request: text plus one action row of three buttons.
    let request = rig
        .discord
        .wait_for(30, "an approval request", |f| {
            f.bot_messages(GENERAL).into_iter().find(|m| m.buttons().iter().any(|b| b.starts_with("ap:")))
        })
        .await;
    assert!(
        request.content.contains("Approval needed") && request.content.contains("touch `lamp`"),
        "{}",
        request.content
    );
    let row = &request.components[0];
    assert_eq!(row["type"], 1, "an action row");
    let styles: Vec<(String, i64)> = row["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| (b["custom_id"].as_str().unwrap().to_string(), b["style"].as_i64().unwrap()))
        .collect();
    let id = styles[0].0.split(':').nth(1).unwrap().to_string();
    let want: Vec<(String, i64)> =
        [("once", 1), ("session", 2), ("deny", 4)].iter().map(|(c, s)| (format!("ap:{id}:{c}"), *s)).collect();
    assert_eq!(styles, want);

    // Bob may not decide: acknowledged, then refused privately; nothing changes.
    let bobs = rig.discord.click(&bob(), &request, &format!("ap:{id}:once"));
    let refusal = rig
        .discord
        .wait_for(20, "an ephemeral refusal", |f| {
            f.messages(GENERAL).into_iter().find(|m| m.interaction.as_deref() == Some(bobs.as_str()))
        })
        .await;
    assert_eq!(refusal.flags & 64, 64, "ephemeral");
    assert!(refusal.content.contains("only"), "{}", refusal.content);
    let bob_ack = rig.discord.callbacks().into_iter().find(|(_, i, _)| *i == bobs).expect("bob's click acknowledged");
    assert_eq!(bob_ack.2, 6, "a deferred update");
    assert!(bob_ack.0 <= refusal.writes[0], "acknowledged before the refusal was sent");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(rig.discord.message(&request.id).unwrap().writes.len(), 1, "the request was not edited");
    let row = rig.app.app.store.approval_get(&id).await.unwrap().unwrap();
    assert_eq!(row.status, ApprovalStatus::Pending);
    assert_eq!(touch.runs(), 0);

    // Alice approves: acknowledged within 3 s, long before the slow tool finishes.
    let clicked = Instant::now();
    let alices = rig.discord.click(&alice(), &request, &format!("ap:{id}:once"));
    let ack = rig
        .discord
        .wait_for(5, "alice's click acknowledged", |f| f.callbacks().into_iter().find(|(_, i, _)| *i == alices))
        .await;
    assert_eq!(ack.2, 6);
    assert!(ack.0.duration_since(clicked) < Duration::from_secs(3), "{:?}", ack.0.duration_since(clicked));
    let event = rig.app.app.store.inbox_get(&format!("discord:interaction:{alices}")).await.unwrap();
    assert!(event.is_some(), "the click is in the inbox");

    // The request becomes the outcome, without buttons; the turn finishes.
    let decided = rig
        .discord
        .wait_for(20, "the request edited to the outcome", |f| {
            f.message(&request.id).filter(|m| m.content.starts_with("✅ Approved by alice"))
        })
        .await;
    assert_eq!(decided.components, json!([]), "buttons removed");
    let done = rig
        .discord
        .wait_for(20, "the final answer", |f| f.bot_messages(GENERAL).into_iter().find(|m| m.content == "lamp done"))
        .await;
    assert_eq!(touch.runs(), 1);
    let finished = *done.writes.last().unwrap();
    assert!(ack.0 < *decided.writes.last().unwrap());
    assert!(finished.duration_since(ack.0) >= Duration::from_millis(1400), "the slow work came after the ack");
    // No ephemeral message for alice: her click needed only the acknowledgement.
    assert!(rig.discord.messages(GENERAL).iter().all(|m| m.interaction.as_deref() != Some(alices.as_str())));
    rig.stop().await;
}
