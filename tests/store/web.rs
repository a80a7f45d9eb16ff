//! Web chat log contract: inserts are idempotent on key, updates change text and buttons and
//! bump `updated_ms`, and listing pages through one conversation in id order; the conversation
//! list (owner, order, title source, rename, the Butler mark, delete as hiding) and live buttons.

use butler::channel::ConversationKind;
use butler::channel::{Button, ButtonStyle};
use butler::store::{ConversationRow, NewWebMessage, Store, WebConversation};
use std::sync::Arc;

fn msg(conversation: &str, key: &str, role: &str, text: &str) -> NewWebMessage {
    NewWebMessage {
        conversation: conversation.into(),
        key: key.into(),
        role: role.into(),
        author: if role == "user" { "alice".into() } else { "butler".into() },
        text: text.into(),
        buttons: vec![],
    }
}

pub async fn idempotent_and_listed(store: Arc<dyn Store>) {
    let first = store.web_insert(&msg("web:c1", "ev-1", "user", "hello")).await.unwrap();
    let again = store.web_insert(&msg("web:c1", "ev-1", "user", "hello, changed")).await.unwrap();
    assert_eq!(first, again, "same key, same row, unchanged");
    assert_eq!((first.role.as_str(), first.author.as_str(), first.text.as_str()), ("user", "alice", "hello"));

    let reply = store.web_insert(&msg("web:c1", "reply:ev-1#0", "assistant", "Thinking")).await.unwrap();
    store.web_insert(&msg("web:c2", "ev-9", "user", "elsewhere")).await.unwrap();
    let third = store.web_insert(&msg("web:c1", "ev-2", "user", "second")).await.unwrap();
    assert!(first.id < reply.id && reply.id < third.id);

    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let buttons = vec![Button { label: "Deny".into(), action: "deny:1".into(), style: ButtonStyle::Danger }];
    let updated = store.web_update(reply.id, "Done.", &buttons).await.unwrap().expect("row");
    assert_eq!((updated.text.as_str(), updated.buttons.clone()), ("Done.", buttons));
    assert!(updated.updated_ms > reply.updated_ms, "updated_ms bumped");
    assert_eq!((updated.created_ms, updated.key.as_str()), (reply.created_ms, "reply:ev-1#0"));
    assert!(store.web_update(999_999, "x", &[]).await.unwrap().is_none());

    // (after id, limit, expected texts)
    let pages: &[(i64, usize, &[&str])] = &[
        (0, 10, &["hello", "Done.", "second"]),
        (0, 2, &["hello", "Done."]),
        (first.id, 10, &["Done.", "second"]),
        (third.id, 10, &[]),
    ];
    for (after, limit, want) in pages {
        let got = store.web_list("web:c1", *after, *limit).await.unwrap();
        assert_eq!(got.iter().map(|m| m.text.as_str()).collect::<Vec<_>>(), *want, "after {after} limit {limit}");
    }
    assert_eq!(store.web_list("web:c2", 0, 10).await.unwrap().len(), 1);
}

fn conversation(id: &str, owner: &str, created_ms: i64) -> ConversationRow {
    ConversationRow { id: id.into(), kind: ConversationKind::Direct, owner: owner.into(), created_ms }
}

fn ids(list: &[WebConversation]) -> Vec<&str> {
    list.iter().map(|c| c.id.as_str()).collect()
}

/// The conversation list: only the owner's web conversations, latest activity first, the first
/// user message as the title source, renames, the Butler mark, and delete as hiding.
pub async fn conversations_listed_renamed_hidden(store: Arc<dyn Store>) {
    for (id, owner, created) in [
        ("web:old", "web:alice", 1_000),
        ("web:new", "web:alice", 2_000),
        ("web:empty", "web:alice", 3_000),
        ("web:bobs", "web:bob", 4_000),
        ("telegram:9", "web:alice", 5_000),
    ] {
        store.conversation_ensure(&conversation(id, owner, created)).await.unwrap();
    }
    // Butler speaks first in `old` (a briefing), then the user; `new` starts with the user.
    store.web_insert(&msg("web:old", "schedule:1:5:reply#0", "assistant", "Good morning")).await.unwrap();
    store.web_insert(&msg("web:old", "ev-o1", "user", "thanks, and the weather?")).await.unwrap();
    store.web_insert(&msg("web:new", "ev-n1", "user", "hello new")).await.unwrap();
    store.web_insert(&msg("web:bobs", "ev-b1", "user", "bob's")).await.unwrap();
    store.web_mark_unprompted("web:old", 7).await.unwrap();
    store.web_mark_unprompted("web:old", 5).await.unwrap();

    let list = store.web_conversations("web:alice", 10).await.unwrap();
    // `empty` has no message: its activity is its creation (3000 ms), older than any message now.
    assert_eq!(ids(&list), ["web:new", "web:old", "web:empty"], "{list:#?}");
    let old = &list[1];
    assert_eq!(old.first_text.as_deref(), Some("thanks, and the weather?"), "the first user message");
    assert_eq!(old.butler_ms, Some(7), "the latest mark is kept");
    assert_eq!((old.title.as_deref(), old.hidden_upto, old.owner.as_str()), (None, None, "web:alice"));
    assert!(old.last_ms >= old.created_ms);
    assert_eq!((list[0].butler_ms, list[2].first_text.as_deref(), list[2].last_ms), (None, None, 3_000));
    assert_eq!(ids(&store.web_conversations("web:alice", 1).await.unwrap()), ["web:new"], "limit");
    assert_eq!(ids(&store.web_conversations("web:bob", 10).await.unwrap()), ["web:bobs"]);
    assert!(store.web_conversations("web:carol", 10).await.unwrap().is_empty());

    // A long first message comes back cut (the title is made from its start).
    store.conversation_ensure(&conversation("web:long", "web:carol", 1)).await.unwrap();
    store.web_insert(&msg("web:long", "ev-l1", "user", &"é".repeat(500))).await.unwrap();
    let long = store.web_conversation("web:long").await.unwrap().unwrap();
    assert_eq!(long.first_text.unwrap().chars().count(), 200);

    // Rename, then back to automatic; unknown ids change nothing.
    assert!(store.web_rename("web:new", Some("Plans")).await.unwrap());
    assert_eq!(store.web_conversation("web:new").await.unwrap().unwrap().title.as_deref(), Some("Plans"));
    assert!(store.web_rename("web:new", None).await.unwrap());
    assert_eq!(store.web_conversation("web:new").await.unwrap().unwrap().title, None);
    assert!(!store.web_rename("web:nope", Some("x")).await.unwrap());
    assert!(!store.web_hide("web:nope").await.unwrap());
    assert!(store.web_conversation("web:nope").await.unwrap().is_none());

    // Delete hides the conversation and its messages; a later message shows it again, with
    // only what came after the delete.
    store.web_rename("web:old", Some("Mornings")).await.unwrap();
    assert!(store.web_hide("web:old").await.unwrap());
    assert!(store.web_hide("web:empty").await.unwrap());
    assert_eq!(ids(&store.web_conversations("web:alice", 10).await.unwrap()), ["web:new"]);
    let hidden = store.web_conversation("web:old").await.unwrap().unwrap();
    let upto = hidden.hidden_upto.expect("hidden");
    assert_eq!((hidden.title, hidden.butler_ms, hidden.first_text), (None, None, None), "it starts afresh");
    assert_eq!(store.web_list("web:old", upto, 10).await.unwrap().len(), 0, "nothing after the cut yet");
    store.web_insert(&msg("web:old", "schedule:1:6:reply#0", "assistant", "Another briefing")).await.unwrap();
    let back = store.web_conversations("web:alice", 10).await.unwrap();
    assert_eq!(ids(&back), ["web:old", "web:new"], "{back:#?}");
    assert_eq!(back[0].first_text.as_deref(), Some("Another briefing"), "no user message: the first message");
    let texts: Vec<String> = store.web_list("web:old", upto, 10).await.unwrap().into_iter().map(|m| m.text).collect();
    assert_eq!(texts, ["Another briefing"]);
}

/// Live buttons: exactly those on the conversation's messages now, never another's.
pub async fn live_buttons_are_the_shown_ones(store: Arc<dyn Store>) {
    let button = |action: &str| Button { label: action.into(), action: action.into(), style: ButtonStyle::Default };
    let a = store.web_insert(&msg("web:a", "r1", "assistant", "streaming")).await.unwrap();
    let b = store.web_insert(&msg("web:a", "r2", "assistant", "request")).await.unwrap();
    let other = store.web_insert(&msg("web:b", "r3", "assistant", "other")).await.unwrap();
    assert!(store.web_live_buttons("web:a").await.unwrap().is_empty());
    store.web_update(a.id, "streaming", &[button("stop:t1")]).await.unwrap();
    store.web_update(b.id, "request", &[button("ap:x:once"), button("ap:x:deny")]).await.unwrap();
    store.web_update(other.id, "other", &[button("ap:y:once")]).await.unwrap();
    let actions = |v: Vec<Button>| v.into_iter().map(|b| b.action).collect::<Vec<_>>();
    assert_eq!(actions(store.web_live_buttons("web:a").await.unwrap()), ["stop:t1", "ap:x:once", "ap:x:deny"]);
    // The reply finishes and the request is answered: nothing is live any more.
    store.web_update(a.id, "done", &[]).await.unwrap();
    store.web_update(b.id, "answered", &[]).await.unwrap();
    assert!(store.web_live_buttons("web:a").await.unwrap().is_empty());
    assert_eq!(actions(store.web_live_buttons("web:b").await.unwrap()), ["ap:y:once"]);
}

/// A person's list holds the conversations of every identity of theirs (the owner's terminal
/// made `web:brief` as `cli:local`), and nobody else's.
pub async fn one_persons_conversations_are_listed_together(store: Arc<dyn Store>) {
    let me = butler::store::NewUser {
        id: "local".into(),
        display_name: None,
        role: butler::store::UserRole::Owner,
        timezone: "UTC".into(),
    };
    for id in ["cli:local", "web:local"] {
        store.user_ensure(&id.parse().unwrap(), &me).await.unwrap();
    }
    let bob = butler::store::NewUser { id: "bob".into(), ..me.clone() };
    store.user_ensure(&"web:bob".parse().unwrap(), &bob).await.unwrap();
    for (id, owner, created) in
        [("web:brief", "cli:local", 1_000), ("web:mine", "web:local", 2_000), ("web:bobs", "web:bob", 3_000)]
    {
        store.conversation_ensure(&conversation(id, owner, created)).await.unwrap();
        store.web_insert(&msg(id, &format!("ev-{id}"), "user", "hello")).await.unwrap();
    }
    // (the list of, shows)
    let cases: [(&str, &[&str]); 4] = [
        ("web:local", &["web:brief", "web:mine"]),
        ("cli:local", &["web:brief", "web:mine"]),
        ("web:bob", &["web:bobs"]),
        ("web:nobody", &[]),
    ];
    for (whose, want) in cases {
        let mut got: Vec<String> =
            store.web_conversations(whose, 50).await.unwrap().into_iter().map(|c| c.id).collect();
        got.sort();
        assert_eq!(got, want, "{whose}");
    }
}
