//! Web chat log contract: inserts are idempotent on key, updates change text and buttons and
//! bump `updated_ms`, and listing pages through one conversation in id order.

use butler::channel::{Button, ButtonStyle};
use butler::store::{NewWebMessage, Store};
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
