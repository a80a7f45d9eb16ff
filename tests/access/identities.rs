//! Identities: (channel, platform id) -> user; owners from config; roles; one person on two
//! channels linked into one user with a one-time `/link` code, after which memory follows.

use crate::start;
use crate::support::fake_llm::Reply;
use butler::store::{MemoryScope, UserRole};
use serde_json::json;

#[tokio::test]
async fn link_joins_two_accounts_and_memory_follows_the_user() {
    let (app, chat, llm) = start(|_| {}).await;
    // The owner on the fake platform remembers something.
    llm.on("my cat", Reply::tool_call("remember", json!({"text": "The owner's cat is called Tom"})));
    llm.on("my cat", Reply::text("Noted."));
    app.emit(chat.dm("owner", "my cat is Tom")).await;
    chat.wait_texts("owner", 1).await;

    // On the web the same person is unknown (web:owner2): linking needs no pairing.
    app.emit(chat.dm("owner", "/link")).await;
    let texts = chat.wait_texts("owner", 2).await;
    let code = texts[1].split('`').nth(1).unwrap().trim_start_matches("/link ").to_string();
    let (status, _) = app.post("w1", "owner2", &format!("/link {code}")).await;
    assert_eq!(status, 202);
    let replies = app.wait_replies("w1", 1, 30).await;
    assert!(replies[0]["text"].as_str().unwrap().starts_with("🔗 Linked"), "{}", replies[0]["text"]);

    let owner = app.app.store.identity_user(&"chat:owner".parse().unwrap()).await.unwrap().unwrap();
    let web = app.app.store.identity_user(&"web:owner2".parse().unwrap()).await.unwrap().unwrap();
    assert_eq!(owner.id, web.id, "one user");
    assert_eq!(owner.role, UserRole::Owner);

    // Memory follows: the web account recalls what the chat account stored.
    llm.on("which cat", Reply::tool_call("recall", json!({"query": "cat"})));
    llm.on("which cat", Reply::text("Tom."));
    app.post("w1", "owner2", "which cat do I have").await;
    app.wait_replies("w1", 2, 30).await;
    assert!(llm.last_request().unwrap().last_tool_result().unwrap().contains("called Tom"));
    assert_eq!(app.app.store.memory_list(&MemoryScope::personal(&owner.id), 10).await.unwrap().len(), 1);

    // /whoami shows both accounts; the owner's role carries over to the linked account.
    app.post("w1", "owner2", "/whoami").await;
    let replies = app.wait_replies("w1", 3, 30).await;
    let who = replies[2]["text"].as_str().unwrap();
    assert!(who.contains("role owner") && who.contains("`chat:owner`"), "{who}");

    // The code worked once.
    let (status, _) = app.post("w2", "owner3", &format!("/link {code}")).await;
    assert_eq!(status, 202);
    let replies = app.wait_replies("w2", 1, 30).await;
    assert!(replies[0]["text"].as_str().unwrap().contains("not valid"));
    app.stop().await;
}

#[tokio::test]
async fn roles_come_from_config_and_pairing() {
    let (app, chat, _llm) = start(|c| c.access.allow = vec!["chat:member".parse().unwrap()]).await;
    for (user, want) in [("owner", "role owner"), ("member", "role member")] {
        app.emit(chat.dm(user, "/whoami")).await;
        let texts = chat.wait_texts(user, 1).await;
        assert!(texts[0].contains(want), "{user}: {}", texts[0]);
    }
    // A member cannot answer pairing requests.
    app.emit(chat.dm("member", "/pair")).await;
    let texts = chat.wait_texts("member", 2).await;
    assert_eq!(texts[1], "Only the owner can answer pairing requests.");
    app.stop().await;
}
