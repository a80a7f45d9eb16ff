//! Memory contract: full-text recall with OR semantics ranked by relevance then recency, strictly
//! per user and per scope, immune to full-text syntax in user input, and forget touching only the
//! owner's rows in the owner's scope.

use butler::store::{MemoryRow, MemoryScope, Store};
use std::sync::Arc;

fn ids(rows: &[MemoryRow]) -> Vec<i64> {
    rows.iter().map(|r| r.id).collect()
}

pub async fn or_semantics_and_ranking(store: Arc<dyn Store>) {
    let add = |text: &'static str| {
        let store = store.clone();
        async move { store.memory_add(&MemoryScope::personal("alice"), text, Some("s1")).await.unwrap() }
    };
    let coffee = add("I drink coffee every morning").await;
    let espresso = add("Espresso coffee each morning before work").await;
    let cat = add("My cat is called Whiskers").await;
    let tea = add("Green tea in the afternoon").await;
    assert_eq!((coffee.user_id.as_str(), coffee.scope.as_str(), coffee.source.as_deref()), ("alice", "", Some("s1")));
    assert!(coffee.created_ms > 0);

    // (query, expected ids in rank order)
    let cases: Vec<(&str, Vec<i64>)> = vec![
        ("espresso coffee morning", vec![espresso.id, coffee.id]),
        ("whiskers unicorn", vec![cat.id]),
        ("cats", vec![cat.id]),
        ("TEA", vec![tea.id]),
        ("unicorn", vec![]),
        ("", vec![]),
    ];
    for (query, want) in cases {
        let got = store.memory_search(&MemoryScope::personal("alice"), query, 10).await.unwrap();
        assert_eq!(ids(&got), want, "{query:?}");
    }
    assert_eq!(store.memory_search(&MemoryScope::personal("alice"), "coffee", 1).await.unwrap().len(), 1, "limit");

    // Equal relevance: the most recent first.
    let old = add("Likes jazz music").await;
    let new = add("Likes jazz music").await;
    assert_eq!(ids(&store.memory_search(&MemoryScope::personal("alice"), "jazz", 10).await.unwrap()), [new.id, old.id]);
}

pub async fn per_user(store: Arc<dyn Store>) {
    let a = store.memory_add(&MemoryScope::personal("alice"), "Alice's coffee is black", None).await.unwrap();
    let b = store.memory_add(&MemoryScope::personal("bob"), "Bob's coffee has milk", None).await.unwrap();
    // (user, expected ids)
    let cases = [("alice", vec![a.id]), ("bob", vec![b.id]), ("carol", vec![])];
    for (user, want) in cases {
        assert_eq!(
            ids(&store.memory_search(&MemoryScope::personal(user), "coffee milk black", 10).await.unwrap()),
            want,
            "{user}"
        );
        assert_eq!(ids(&store.memory_list(&MemoryScope::personal(user), 10).await.unwrap()), want, "{user}");
    }
}

pub async fn hostile_input(store: Arc<dyn Store>) {
    let coffee = store.memory_add(&MemoryScope::personal("alice"), "I drink coffee every morning", None).await.unwrap();
    let found = vec![coffee.id];
    let none: Vec<i64> = vec![];
    let long = "coffee ".repeat(5000);
    // (query, expected ids); every one must run without a syntax error.
    let cases: Vec<(&str, &Vec<i64>)> = vec![
        ("\"", &none),
        ("*", &none),
        ("AND OR NOT", &none),
        ("NEAR(", &none),
        ("'; drop table memories; --", &none),
        ("coffee\"", &found),
        ("\"coffee", &found),
        ("coffee*", &found),
        ("-coffee", &found),
        ("text:coffee", &found),
        ("(coffee OR", &found),
        ("^coffee", &found),
        ("coffee AND", &found),
        ("coffee & tea | !milk <-> x:*", &found),
        ("NEAR(coffee morning, 2)", &found),
        ("\\", &none),
        ("''", &none),
        ("!@#$%^&*()[]{};:,.<>/?", &none),
        ("☕ ½ ²", &none),
        (&long, &found),
    ];
    for (query, want) in cases {
        let got = store.memory_search(&MemoryScope::personal("alice"), query, 10).await;
        let got = got.unwrap_or_else(|e| panic!("{query:?}: {e}"));
        assert_eq!(&ids(&got), want, "{query:?}");
    }
    assert_eq!(store.memory_list(&MemoryScope::personal("alice"), 10).await.unwrap().len(), 1, "the table survived");
}

pub async fn list_and_forget(store: Arc<dyn Store>) {
    let mut added = Vec::new();
    for text in ["first note about apples", "second note about pears", "third note about plums"] {
        added.push(store.memory_add(&MemoryScope::personal("alice"), text, None).await.unwrap());
    }
    let bobs = store.memory_add(&MemoryScope::personal("bob"), "bob's note about apples", None).await.unwrap();
    let listed = store.memory_list(&MemoryScope::personal("alice"), 10).await.unwrap();
    assert_eq!(ids(&listed), [added[2].id, added[1].id, added[0].id], "most recent first");
    assert_eq!(listed[2], added[0], "rows round-trip");
    assert_eq!(store.memory_list(&MemoryScope::personal("alice"), 2).await.unwrap().len(), 2);

    // (user, id, expected result)
    let steps = [
        ("bob", added[0].id, false),
        ("alice", bobs.id, false),
        ("alice", added[0].id, true),
        ("alice", added[0].id, false),
        ("alice", 999_999, false),
    ];
    for (user, id, want) in steps {
        assert_eq!(store.memory_forget(&MemoryScope::personal(user), id).await.unwrap(), want, "{user} forgets {id}");
    }
    assert_eq!(ids(&store.memory_list(&MemoryScope::personal("alice"), 10).await.unwrap()), [added[2].id, added[1].id]);
    assert!(
        store.memory_search(&MemoryScope::personal("alice"), "apples", 10).await.unwrap().is_empty(),
        "forgotten rows leave the index"
    );
    assert_eq!(ids(&store.memory_search(&MemoryScope::personal("bob"), "apples", 10).await.unwrap()), [bobs.id]);
}

pub async fn scopes_are_separate(store: Arc<dyn Store>) {
    let personal = MemoryScope::personal("alice");
    let group_x = MemoryScope::group("alice", "telegram:-100x");
    let group_y = MemoryScope::group("alice", "telegram:-100y");
    let bob_x = MemoryScope::group("bob", "telegram:-100x");
    let in_x = store.memory_add(&group_x, "The team meets on Tuesday", Some("s1")).await.unwrap();
    assert_eq!((in_x.user_id.as_str(), in_x.scope.as_str()), ("alice", "group:telegram:-100x"));
    let mine = store.memory_add(&personal, "My dentist appointment is on Tuesday", None).await.unwrap();
    assert_eq!(mine.scope, "");

    // (owner and scope, expected ids of both search and list)
    let cases = [(&personal, vec![mine.id]), (&group_x, vec![in_x.id]), (&group_y, vec![]), (&bob_x, vec![])];
    for (owner, want) in cases {
        let found = store.memory_search(owner, "tuesday team dentist", 10).await.unwrap();
        assert_eq!(ids(&found), want, "search in {owner:?}");
        let listed = store.memory_list(owner, 10).await.unwrap();
        assert_eq!(ids(&listed), want, "list in {owner:?}");
    }
    assert_eq!(store.memory_list(&group_x, 10).await.unwrap()[0], in_x, "scoped rows round-trip");

    // (owner and scope, id, expected result): only the memory's own scope forgets it.
    let steps = [
        (&personal, in_x.id, false),
        (&group_y, in_x.id, false),
        (&bob_x, in_x.id, false),
        (&group_x, mine.id, false),
        (&group_x, in_x.id, true),
        (&personal, mine.id, true),
    ];
    for (owner, id, want) in steps {
        assert_eq!(store.memory_forget(owner, id).await.unwrap(), want, "{owner:?} forgets {id}");
    }
    for owner in [&personal, &group_x] {
        assert!(store.memory_list(owner, 10).await.unwrap().is_empty(), "{owner:?}");
    }
}

/// A changed fact is updated in place (and found by its new words only), never another owner's.
pub async fn memory_update_own_only(store: Arc<dyn Store>) {
    let alice = butler::store::MemoryScope::personal("alice");
    let bob = butler::store::MemoryScope::personal("bob");
    let m = store.memory_add(&alice, "Lives in Porto", None).await.unwrap();
    assert!(!store.memory_update(&bob, m.id, "Lives in Oslo").await.unwrap(), "not bob's");
    assert!(!store.memory_update(&butler::store::MemoryScope::group("alice", "telegram:-1"), m.id, "x").await.unwrap());
    assert!(store.memory_update(&alice, m.id, "Lives in Lisbon").await.unwrap());
    assert!(store.memory_search(&alice, "Porto", 5).await.unwrap().is_empty(), "the old words are gone from the index");
    let found = store.memory_search(&alice, "Lisbon", 5).await.unwrap();
    assert_eq!((found.len(), found[0].id, found[0].text.as_str()), (1, m.id, "Lives in Lisbon"));
}
