//! Access contract: one-time codes are unique per kind, taken at most once (even by concurrent
//! takers) and dead once expired; linking an identity moves it, with its old user's memories,
//! sessions and usage, to the new user, deletes the old user once it has no identity left, and
//! changes nothing when the new user does not exist.

use crate::fixtures::{code, session, user};
use butler::channel::Identity;
use butler::store::{
    CodeKind, CodeRow, InboxStatus, MemoryRow, MemoryScope, NewSession, Store, StoreError, TurnCommit, UsageRecord,
    UserRole,
};
use std::sync::Arc;

const T: i64 = 1_700_000_000_000;

fn codes(rows: &[CodeRow]) -> Vec<&str> {
    rows.iter().map(|r| r.code.as_str()).collect()
}

fn ids(rows: &[MemoryRow]) -> Vec<i64> {
    rows.iter().map(|r| r.id).collect()
}

fn identities(items: &[&str]) -> Vec<Identity> {
    items.iter().map(|s| s.parse().unwrap()).collect()
}

pub async fn code_create_and_duplicate(store: Arc<dyn Store>) {
    use CodeKind::{Link, Pair};
    // (code, whether it is stored; otherwise `Conflict`)
    let steps = [
        (code(Pair, "123456", T, T + 60_000), true),
        (code(Pair, "123456", T + 1, T + 90_000), false),
        (code(Link, "123456", T, T + 60_000), true),
        (code(Pair, "654321", T, T + 10), true),
        // The first 654321 is dead by the time this one is created: it is replaced.
        (code(Pair, "654321", T + 10, T + 60_000), true),
        (code(Pair, "654321", T + 20, T + 60_000), false),
    ];
    for (i, (row, stored)) in steps.iter().enumerate() {
        match store.code_create(row).await {
            Ok(()) => assert!(stored, "step {i}: a duplicate was stored"),
            Err(StoreError::Conflict(_)) => assert!(!stored, "step {i}: refused"),
            Err(e) => panic!("step {i}: {e}"),
        }
    }
    assert_eq!(codes(&store.codes_live(Pair, T + 10).await.unwrap()), ["654321", "123456"]);
    assert_eq!(codes(&store.codes_live(Link, T + 10).await.unwrap()), ["123456"]);
    assert_eq!(store.code_take(Pair, "123456", T + 10).await.unwrap().as_ref(), Some(&steps[0].0), "first one kept");
}

pub async fn code_take_once(store: Arc<dyn Store>) {
    use CodeKind::{Link, Pair};
    let link = CodeRow { user_id: Some("alice".into()), ..code(Link, "ABC123", T, T + 60_000) };
    store.code_create(&link).await.unwrap();
    // (kind, code, expected)
    let steps = [
        (Pair, "ABC123", None),
        (Link, "abc123", None),
        (Link, "ABC12", None),
        (Link, "ABC123", Some(&link)),
        (Link, "ABC123", None),
    ];
    for (kind, value, want) in steps {
        assert_eq!(store.code_take(kind, value, T + 1).await.unwrap().as_ref(), want, "take {kind:?} {value}");
    }
    assert!(store.codes_live(Link, T).await.unwrap().is_empty(), "a taken code is gone");

    store.code_create(&code(Pair, "999999", T, T + 60_000)).await.unwrap();
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move { store.code_take(Pair, "999999", T + 1).await }));
    }
    let mut winners = 0;
    for t in tasks {
        winners += usize::from(t.await.unwrap().unwrap().is_some());
    }
    assert_eq!(winners, 1, "exactly one concurrent taker gets the code");
}

pub async fn codes_expire_and_list_newest_first(store: Arc<dyn Store>) {
    use CodeKind::{Link, Pair};
    // (code, expires_ms); created one millisecond apart in this order.
    let rows = [("past", T - 1), ("edge", T), ("soon", T + 1), ("later", T + 60_000)];
    for (i, (value, expires)) in rows.into_iter().enumerate() {
        store.code_create(&code(Pair, value, T - 1_000 + i as i64, expires)).await.unwrap();
    }
    store.code_create(&code(Link, "other-kind", T, T + 60_000)).await.unwrap();

    // (now, expected live pair codes)
    let cases: [(i64, &[&str]); 4] = [
        (T - 2, &["later", "soon", "edge", "past"]),
        (T - 1, &["later", "soon", "edge"]),
        (T, &["later", "soon"]),
        (T + 60_000, &[]),
    ];
    for (now, want) in cases {
        assert_eq!(codes(&store.codes_live(Pair, now).await.unwrap()), want, "live at {now}");
    }
    // (code, taken at T)
    for (value, taken) in [("past", false), ("edge", false), ("soon", true), ("later", true), ("other-kind", false)] {
        assert_eq!(store.code_take(Pair, value, T).await.unwrap().is_some(), taken, "{value}");
    }
    assert!(store.codes_live(Pair, 0).await.unwrap().is_empty(), "taking deletes expired codes as well");
    assert_eq!(codes(&store.codes_live(Link, T).await.unwrap()), ["other-kind"]);
}

/// What a user owns that a link must move: a personal and a group memory, an open session and
/// one turn of usage.
struct Owned {
    personal: MemoryRow,
    group: MemoryRow,
    session_key: String,
}

async fn give(store: &Arc<dyn Store>, user_id: &str, tag: &str) -> Owned {
    let personal = store.memory_add(&MemoryScope::personal(user_id), &format!("note {tag}"), None).await.unwrap();
    let group = store.memory_add(&MemoryScope::group(user_id, "telegram:-100"), &format!("group {tag}"), None).await;
    let session_key = format!("key-{tag}");
    let new = NewSession { user_id: user_id.into(), ..session(&format!("s-{tag}"), &session_key) };
    store.session_open(&new).await.unwrap();
    let usage = UsageRecord {
        user_id: user_id.into(),
        session_id: new.id.clone(),
        event_id: format!("e-{tag}"),
        model: "test-model".into(),
        input_tokens: 10,
        output_tokens: 5,
        cost_usd: 0.01,
        iterations: 1,
        kind: "turn".into(),
        context_tokens: 0,
    };
    let commit = TurnCommit {
        inbox_id: format!("e-{tag}"),
        inbox_status: InboxStatus::Done,
        session_id: None,
        messages: vec![],
        reply: None,
        usage: Some(usage.into()),
        approvals: vec![],
        notices: vec![],
        fence: None,
    };
    store.finish_event(&commit).await.unwrap();
    Owned { personal, group: group.unwrap(), session_key }
}

/// Whether `user_id` exists (setting the role it already has changes nothing).
async fn exists(store: &Arc<dyn Store>, user_id: &str, role: UserRole) -> bool {
    store.user_set_role(user_id, role).await.unwrap()
}

pub async fn link_new_identity(store: Arc<dyn Store>) {
    let tg = Identity::new("telegram", "1");
    let slack = Identity::new("slack", "U1");
    store.user_ensure(&tg, &user("alice", "Alice")).await.unwrap();
    // (identity, expected previous user)
    let steps = [(&slack, None), (&slack, Some("alice")), (&tg, Some("alice"))];
    for (identity, want) in steps {
        assert_eq!(store.identity_link(identity, "alice").await.unwrap().as_deref(), want, "{identity}");
        assert_eq!(store.identity_user(identity).await.unwrap().unwrap().id, "alice", "{identity}");
    }
    assert_eq!(store.user_identities("alice").await.unwrap(), [slack, tg]);
}

pub async fn link_moves_other_users_data(store: Arc<dyn Store>) {
    let tg = Identity::new("telegram", "1");
    let slack = Identity::new("slack", "U1");
    let web = Identity::new("web", "bob");
    store.user_ensure(&tg, &user("alice", "Alice")).await.unwrap();
    store.user_ensure(&slack, &user("bob", "Bob")).await.unwrap();
    store.user_ensure(&web, &user("bob", "Bob")).await.unwrap();
    let alices = give(&store, "alice", "alice").await;
    let bobs_code = CodeRow { user_id: Some("bob".into()), ..code(CodeKind::Link, "LINK01", T, T + 60_000) };
    store.code_create(&bobs_code).await.unwrap();

    let alice_personal = MemoryScope::personal("alice");
    let alice_group = MemoryScope::group("alice", "telegram:-100");
    let mut moved_personal = vec![alices.personal.id];
    let mut moved_group = vec![alices.group.id];
    // (identity moved to alice, whether bob still exists afterwards, bob's and alice's identities afterwards)
    let steps = [
        (&slack, true, identities(&["web:bob"]), identities(&["slack:U1", "telegram:1"])),
        (&web, false, vec![], identities(&["slack:U1", "telegram:1", "web:bob"])),
    ];
    for (turns, (identity, bob_kept, bob_ids, alice_ids)) in (2..).zip(steps) {
        let bobs = give(&store, "bob", &format!("bob-{turns}")).await;
        moved_personal.insert(0, bobs.personal.id);
        moved_group.insert(0, bobs.group.id);

        assert_eq!(store.identity_link(identity, "alice").await.unwrap().as_deref(), Some("bob"), "{identity}");
        assert_eq!(store.identity_user(identity).await.unwrap().unwrap().id, "alice");
        // Memories keep their scope and order; nothing is left with bob.
        let personal = store.memory_list(&alice_personal, 10).await.unwrap();
        assert_eq!(ids(&personal), moved_personal, "{identity}");
        assert!(personal.iter().all(|m| m.user_id == "alice"));
        assert_eq!(ids(&store.memory_list(&alice_group, 10).await.unwrap()), moved_group, "{identity}");
        assert_eq!(
            ids(&store.memory_search(&alice_personal, &format!("bob {turns}"), 10).await.unwrap())[0],
            bobs.personal.id
        );
        for owner in [MemoryScope::personal("bob"), MemoryScope::group("bob", "telegram:-100")] {
            assert!(store.memory_list(&owner, 10).await.unwrap().is_empty(), "{owner:?}");
        }
        for key in [&alices.session_key, &bobs.session_key] {
            assert_eq!(store.session_active(key).await.unwrap().unwrap().user_id, "alice", "{key}");
        }
        assert_eq!(store.usage_since("alice", 0).await.unwrap().turns, turns);
        assert_eq!(store.usage_since("bob", 0).await.unwrap().turns, 0);
        assert_eq!(exists(&store, "bob", UserRole::Member).await, bob_kept, "{identity}");
        assert_eq!(store.user_identities("bob").await.unwrap(), bob_ids);
        assert_eq!(store.user_identities("alice").await.unwrap(), alice_ids);
    }
    let taken = store.code_take(CodeKind::Link, "LINK01", T).await.unwrap().unwrap();
    assert_eq!(taken.user_id.as_deref(), Some("alice"), "the deleted user's link codes now link to alice");
}

pub async fn link_to_missing_user_changes_nothing(store: Arc<dyn Store>) {
    let slack = Identity::new("slack", "U1");
    let fresh = Identity::new("web", "new");
    store.user_ensure(&slack, &user("bob", "Bob")).await.unwrap();
    let bobs = give(&store, "bob", "bob").await;
    for identity in [&slack, &fresh] {
        match store.identity_link(identity, "ghost").await {
            Err(StoreError::Conflict(_)) => {}
            other => panic!("{identity}: {other:?}"),
        }
    }
    assert_eq!(store.identity_user(&slack).await.unwrap().unwrap().id, "bob");
    assert!(store.identity_user(&fresh).await.unwrap().is_none());
    assert_eq!(store.user_identities("bob").await.unwrap(), [slack]);
    assert!(store.user_identities("ghost").await.unwrap().is_empty());
    assert_eq!(ids(&store.memory_list(&MemoryScope::personal("bob"), 10).await.unwrap()), [bobs.personal.id]);
    let group = MemoryScope::group("bob", "telegram:-100");
    assert_eq!(ids(&store.memory_list(&group, 10).await.unwrap()), [bobs.group.id]);
    assert_eq!(store.session_active(&bobs.session_key).await.unwrap().unwrap().user_id, "bob");
    assert_eq!(store.usage_since("bob", 0).await.unwrap().turns, 1);
    assert!(!exists(&store, "ghost", UserRole::Member).await, "no user was created");
}

pub async fn concurrent_links_delete_old_user_once(store: Arc<dyn Store>) {
    let tg = Identity::new("telegram", "1");
    store.user_ensure(&tg, &user("alice", "Alice")).await.unwrap();
    let bobs: Vec<Identity> = (0..4).map(|i| Identity::new("web", format!("bob{i}"))).collect();
    for identity in &bobs {
        store.user_ensure(identity, &user("bob", "Bob")).await.unwrap();
    }
    let note = store.memory_add(&MemoryScope::personal("bob"), "bob's note", None).await.unwrap();
    let mut tasks = Vec::new();
    for identity in bobs.clone() {
        let store = store.clone();
        tasks.push(tokio::spawn(async move { store.identity_link(&identity, "alice").await }));
    }
    for t in tasks {
        assert_eq!(t.await.unwrap().unwrap().as_deref(), Some("bob"));
    }
    assert!(!exists(&store, "bob", UserRole::Member).await, "bob is deleted once his last identity moved");
    let mut want = bobs;
    want.push(tg);
    want.sort();
    assert_eq!(store.user_identities("alice").await.unwrap(), want);
    assert_eq!(ids(&store.memory_list(&MemoryScope::personal("alice"), 10).await.unwrap()), [note.id]);
}

pub async fn set_role(store: Arc<dyn Store>) {
    let tg = Identity::new("telegram", "1");
    store.user_ensure(&tg, &user("alice", "Alice")).await.unwrap();
    // (user, new role, expected result, alice's role afterwards)
    let steps = [
        ("alice", UserRole::Owner, true, UserRole::Owner),
        ("alice", UserRole::Owner, true, UserRole::Owner),
        ("alice", UserRole::Guest, true, UserRole::Guest),
        ("ghost", UserRole::Owner, false, UserRole::Guest),
    ];
    for (user_id, role, want, alice_role) in steps {
        assert_eq!(store.user_set_role(user_id, role).await.unwrap(), want, "{user_id} -> {role:?}");
        assert_eq!(store.identity_user(&tg).await.unwrap().unwrap().role, alice_role);
    }
}

pub async fn identities_sorted(store: Arc<dyn Store>) {
    let first = Identity::new("telegram", "9");
    store.user_ensure(&first, &user("alice", "Alice")).await.unwrap();
    store.user_ensure(&Identity::new("web", "bob"), &user("bob", "Bob")).await.unwrap();
    for identity in ["slack:U2", "telegram:10", "web:alice", "slack:U1", "telegram:B", "telegram:a"] {
        store.identity_link(&identity.parse().unwrap(), "alice").await.unwrap();
    }
    // (user, expected identities in order)
    let cases = [
        (
            "alice",
            identities(&["slack:U1", "slack:U2", "telegram:10", "telegram:9", "telegram:B", "telegram:a", "web:alice"]),
        ),
        ("bob", identities(&["web:bob"])),
        ("ghost", vec![]),
    ];
    for (user_id, want) in cases {
        assert_eq!(store.user_identities(user_id).await.unwrap(), want, "{user_id}");
    }
}
