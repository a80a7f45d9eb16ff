//! Memory contract: full-text recall with OR semantics ranked by relevance then recency, strictly
//! per user, immune to full-text syntax in user input, and forget touching only the owner's rows.

use butler::store::{MemoryRow, Store};
use std::sync::Arc;

fn ids(rows: &[MemoryRow]) -> Vec<i64> {
    rows.iter().map(|r| r.id).collect()
}

pub async fn or_semantics_and_ranking(store: Arc<dyn Store>) {
    let add = |text: &'static str| {
        let store = store.clone();
        async move { store.memory_add("alice", text, Some("s1")).await.unwrap() }
    };
    let coffee = add("I drink coffee every morning").await;
    let espresso = add("Espresso coffee each morning before work").await;
    let cat = add("My cat is called Whiskers").await;
    let tea = add("Green tea in the afternoon").await;
    assert_eq!((coffee.user_id.as_str(), coffee.source.as_deref()), ("alice", Some("s1")));
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
        let got = store.memory_search("alice", query, 10).await.unwrap();
        assert_eq!(ids(&got), want, "{query:?}");
    }
    assert_eq!(store.memory_search("alice", "coffee", 1).await.unwrap().len(), 1, "limit");

    // Equal relevance: the most recent first.
    let old = add("Likes jazz music").await;
    let new = add("Likes jazz music").await;
    assert_eq!(ids(&store.memory_search("alice", "jazz", 10).await.unwrap()), [new.id, old.id]);
}

pub async fn per_user(store: Arc<dyn Store>) {
    let a = store.memory_add("alice", "Alice's coffee is black", None).await.unwrap();
    let b = store.memory_add("bob", "Bob's coffee has milk", None).await.unwrap();
    // (user, expected ids)
    let cases = [("alice", vec![a.id]), ("bob", vec![b.id]), ("carol", vec![])];
    for (user, want) in cases {
        assert_eq!(ids(&store.memory_search(user, "coffee milk black", 10).await.unwrap()), want, "{user}");
        assert_eq!(ids(&store.memory_list(user, 10).await.unwrap()), want, "{user}");
    }
}

pub async fn hostile_input(store: Arc<dyn Store>) {
    let coffee = store.memory_add("alice", "I drink coffee every morning", None).await.unwrap();
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
        let got = store.memory_search("alice", query, 10).await;
        let got = got.unwrap_or_else(|e| panic!("{query:?}: {e}"));
        assert_eq!(&ids(&got), want, "{query:?}");
    }
    assert_eq!(store.memory_list("alice", 10).await.unwrap().len(), 1, "the table survived");
}

pub async fn list_and_forget(store: Arc<dyn Store>) {
    let mut added = Vec::new();
    for text in ["first note about apples", "second note about pears", "third note about plums"] {
        added.push(store.memory_add("alice", text, None).await.unwrap());
    }
    let bobs = store.memory_add("bob", "bob's note about apples", None).await.unwrap();
    let listed = store.memory_list("alice", 10).await.unwrap();
    assert_eq!(ids(&listed), [added[2].id, added[1].id, added[0].id], "most recent first");
    assert_eq!(listed[2], added[0], "rows round-trip");
    assert_eq!(store.memory_list("alice", 2).await.unwrap().len(), 2);

    // (user, id, expected result)
    let steps = [
        ("bob", added[0].id, false),
        ("alice", bobs.id, false),
        ("alice", added[0].id, true),
        ("alice", added[0].id, false),
        ("alice", 999_999, false),
    ];
    for (user, id, want) in steps {
        assert_eq!(store.memory_forget(user, id).await.unwrap(), want, "{user} forgets {id}");
    }
    assert_eq!(ids(&store.memory_list("alice", 10).await.unwrap()), [added[2].id, added[1].id]);
    assert!(store.memory_search("alice", "apples", 10).await.unwrap().is_empty(), "forgotten rows leave the index");
    assert_eq!(ids(&store.memory_search("bob", "apples", 10).await.unwrap()), [bobs.id]);
}
