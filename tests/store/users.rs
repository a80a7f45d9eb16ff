//! Users and conversations contract: identities link to one user (race-safe, first writer
//! wins), several identities can share a user, and conversations keep their first state.

use crate::fixtures::user;
use butler::channel::{ConversationKind, Identity};
use butler::store::{ConversationRow, Store, UserRole};
use std::collections::BTreeSet;
use std::sync::Arc;

pub async fn ensure_links_identities(store: Arc<dyn Store>) {
    let tg = Identity::new("telegram", "123456789");
    let slack = Identity::new("slack", "U2CERLKJA");
    assert!(store.identity_user(&tg).await.unwrap().is_none());

    let alice = store.user_ensure(&tg, &user("alice", "Alice")).await.unwrap();
    assert_eq!((alice.id.as_str(), alice.display_name.as_deref()), ("alice", Some("Alice")));
    assert_eq!((alice.role, alice.timezone.as_str()), (UserRole::Member, "Europe/Berlin"));

    // (identity, proposed new user, expected user id, expected display name)
    let steps = [
        (&tg, user("bob", "Bob"), "alice", "Alice"),
        (&slack, user("alice", "Someone else"), "alice", "Alice"),
        (&Identity::new("web", "bob"), user("bob", "Bob"), "bob", "Bob"),
    ];
    for (identity, new, want_id, want_name) in steps {
        let got = store.user_ensure(identity, &new).await.unwrap();
        assert_eq!((got.id.as_str(), got.display_name.as_deref()), (want_id, Some(want_name)), "{identity}");
        assert_eq!(store.identity_user(identity).await.unwrap().unwrap(), got, "{identity}");
    }
    assert_eq!(store.identity_user(&slack).await.unwrap().unwrap().id, "alice", "two identities, one user");
    assert!(store.identity_user(&Identity::new("telegram", "987")).await.unwrap().is_none());
}

pub async fn ensure_race(store: Arc<dyn Store>) {
    let identity = Identity::new("discord", "80351110224678912");
    let mut tasks = Vec::new();
    for i in 0..8 {
        let (store, identity) = (store.clone(), identity.clone());
        tasks.push(tokio::spawn(async move { store.user_ensure(&identity, &user(&format!("u{i}"), "X")).await }));
    }
    let mut ids = BTreeSet::new();
    for t in tasks {
        ids.insert(t.await.unwrap().unwrap().id);
    }
    assert_eq!(ids.len(), 1, "all racers see one user: {ids:?}");
    assert_eq!(&store.identity_user(&identity).await.unwrap().unwrap().id, ids.first().unwrap());
}

pub async fn conversation_first_writer_wins(store: Arc<dyn Store>) {
    assert!(store.conversation_get("web:c1").await.unwrap().is_none());
    let first = ConversationRow {
        id: "web:c1".into(),
        kind: ConversationKind::Direct,
        owner: "web:alice".into(),
        created_ms: 1_000,
    };
    let second = ConversationRow {
        id: "web:c1".into(),
        kind: ConversationKind::Group,
        owner: "web:mallory".into(),
        created_ms: 2_000,
    };
    assert_eq!(store.conversation_ensure(&first).await.unwrap(), first);
    assert_eq!(store.conversation_ensure(&second).await.unwrap(), first, "the first writer wins");
    assert_eq!(store.conversation_get("web:c1").await.unwrap().unwrap(), first);

    let group = ConversationRow {
        id: "slack:C1/1.2".into(),
        kind: ConversationKind::Group,
        owner: "slack:U1".into(),
        created_ms: 0,
    };
    let stored = store.conversation_ensure(&group).await.unwrap();
    assert_eq!((stored.kind, stored.owner.as_str()), (ConversationKind::Group, "slack:U1"));
    assert!(stored.created_ms > 0, "a zero creation time becomes now");
}
