//! Groups: answered only when addressed (unless `respond = "all"`), every speaker named, and
//! group sessions and DM sessions never share history or memory.

use crate::start;
use crate::support::fake_llm::Reply;
use butler::channel::ConversationKind::Group;
use butler::config::{GroupConfig, GroupSession, Respond};
use serde_json::json;

fn users_in(req: &crate::support::fake_llm::RecordedRequest) -> Vec<String> {
    req.messages()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test]
async fn two_people_in_a_group_and_their_dms_never_mix() {
    let (app, chat, llm) =
        start(|c| c.access.allow = vec!["chat:alice".parse().unwrap(), "chat:bob".parse().unwrap()]).await;

    // Not addressed: ignored, recorded, the model never called.
    app.emit(chat.message("alice", "Alice", "g1", Group, false, "lunch at noon?")).await;
    chat.assert_quiet("g1", 0).await;
    assert_eq!(llm.request_count(), 0);

    // Alice keeps a private fact in her DM.
    llm.on("secret", Reply::tool_call("remember", json!({"text": "Alice's PIN is 4321"})));
    llm.on("secret", Reply::text("Kept."));
    app.emit(chat.dm("alice", "my secret: PIN 4321")).await;
    chat.wait_texts("alice", 1).await;

    // In the group, both speak to Butler; each is named.
    app.emit(chat.message("alice", "Alice", "g1", Group, true, "@butler hello from alice")).await;
    chat.wait_texts("g1", 1).await;
    app.emit(chat.message("bob", "Bob", "g1", Group, true, "@butler hello from bob")).await;
    chat.wait_texts("g1", 2).await;
    let group_req = llm.last_request().unwrap();
    assert_eq!(users_in(&group_req), ["[Alice] @butler hello from alice", "[Bob] @butler hello from bob"]);

    // Alice asks for her PIN in the group: group memory is not her DM memory.
    llm.on("pin", Reply::tool_call("recall", json!({"query": "PIN"})));
    llm.on("pin", Reply::text("I don't know."));
    app.emit(chat.message("alice", "Alice", "g1", Group, true, "@butler what is my pin")).await;
    chat.wait_texts("g1", 3).await;
    assert_eq!(llm.last_request().unwrap().last_tool_result().as_deref(), Some("No memories match."));

    // What is remembered in the group stays in the group.
    llm.on("group fact", Reply::tool_call("remember", json!({"text": "The team meets on Fridays"})));
    llm.on("group fact", Reply::text("Noted for the group."));
    app.emit(chat.message("alice", "Alice", "g1", Group, true, "@butler group fact: we meet Fridays")).await;
    chat.wait_texts("g1", 4).await;
    llm.on("when do we meet", Reply::tool_call("recall", json!({"query": "meets Fridays team"})));
    llm.on("when do we meet", Reply::text("?"));
    app.emit(chat.dm("alice", "when do we meet")).await;
    chat.wait_texts("alice", 2).await;
    assert_eq!(llm.last_request().unwrap().last_tool_result().as_deref(), Some("No memories match."));

    // Bob's DM session has none of the group's or Alice's history.
    app.emit(chat.dm("bob", "hi from my dm")).await;
    chat.wait_texts("bob", 1).await;
    assert_eq!(users_in(&llm.last_request().unwrap()), ["hi from my dm"]);
    // Alice's DM session holds only her DM messages.
    let alice_dm = llm.requests().into_iter().rev().find(|r| r.last_user_text() == "when do we meet").unwrap();
    assert_eq!(users_in(&alice_dm), ["my secret: PIN 4321", "when do we meet"]);
    app.stop().await;
}

#[tokio::test]
async fn respond_all_and_per_speaker_groups() {
    let (app, chat, llm) = start(|c| {
        c.access.allow = vec!["chat:alice".parse().unwrap(), "chat:bob".parse().unwrap()];
        c.access.groups = vec![
            GroupConfig {
                conversation: "chat:open".parse().unwrap(),
                respond: Respond::All,
                session: GroupSession::Shared,
            },
            GroupConfig {
                conversation: "chat:split".parse().unwrap(),
                respond: Respond::Mention,
                session: GroupSession::PerSpeaker,
            },
        ];
    })
    .await;
    app.emit(chat.message("alice", "Alice", "open", Group, false, "no mention needed here")).await;
    assert_eq!(chat.wait_texts("open", 1).await[0], "echo: [Alice] no mention needed here");

    app.emit(chat.message("alice", "Alice", "split", Group, true, "@butler first")).await;
    chat.wait_texts("split", 1).await;
    app.emit(chat.message("bob", "Bob", "split", Group, true, "@butler second")).await;
    chat.wait_texts("split", 2).await;
    assert_eq!(users_in(&llm.last_request().unwrap()), ["[Bob] @butler second"], "one session per speaker");
    // A thread of the open group is its own session but inherits `respond = "all"`.
    app.emit(chat.message("bob", "Bob", "open/t9", Group, false, "in a thread")).await;
    chat.wait_texts("open/t9", 1).await;
    assert_eq!(users_in(&llm.last_request().unwrap()), ["[Bob] in a thread"]);
    app.stop().await;
}

#[tokio::test]
async fn unknown_speakers_in_a_group_get_one_short_refusal() {
    let (app, chat, llm) = start(|_| {}).await;
    for _ in 0..3 {
        app.emit(chat.message("eve", "Eve", "g2", Group, true, "@butler hi")).await;
    }
    let texts = chat.wait_texts("g2", 1).await;
    chat.assert_quiet("g2", 1).await;
    assert!(texts[0].contains("Send me a direct message"), "{}", texts[0]);
    assert!(!texts[0].contains('`'), "no code in a group: {}", texts[0]);
    assert_eq!(llm.request_count(), 0);
    app.stop().await;
}
