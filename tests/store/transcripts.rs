//! Past conversations contract: a transcript search reads only what its scope allows (a
//! person's own direct sessions, or one group key's), never tool output, ranks by relevance then
//! recency; the conversation list holds one person's direct sessions, newest first; and resuming
//! reopens only the person's own direct session under a direct key, closing the key's open one
//! in the same transaction, or changes nothing.

use butler::llm::ToolCall;
use butler::store::{NewMessage, NewSession, Role, Store, TranscriptScope};
use std::sync::Arc;
use std::time::Duration;

fn new_session(id: &str, key: &str, user: &str, conversation: &str) -> NewSession {
    NewSession {
        id: id.into(),
        key: key.into(),
        user_id: user.into(),
        conversation: conversation.into(),
        system_prompt: "You are Butler.".into(),
    }
}

/// Opens a session, appends `msgs` (a little apart, so their times differ) and closes it.
async fn seed(store: &Arc<dyn Store>, s: NewSession, msgs: Vec<NewMessage>) {
    store.session_open(&s).await.unwrap();
    for m in msgs {
        tokio::time::sleep(Duration::from_millis(3)).await;
        store.messages_append(&s.id, &[m]).await.unwrap();
    }
    store.session_close(&s.id).await.unwrap();
}

fn user(text: &str) -> NewMessage {
    NewMessage::user(text, None, None)
}

fn answer(text: &str) -> NewMessage {
    NewMessage::assistant(text, vec![])
}

/// Alice (`u-a`): a Telegram DM and a later web DM; Bob (`u-b`): a DM; two groups.
async fn people(store: &Arc<dyn Store>) {
    let call = ToolCall { id: "c1".into(), name: "web_search".into(), arguments: "{}".into() };
    let a1 = vec![
        user("my bike is blue"),
        NewMessage::assistant("", vec![call]),
        NewMessage::tool("c1", "bike shop results from a tool", false),
        answer("Noted, a nice bike."),
    ];
    seed(store, new_session("a1", "dm:telegram:1:1", "u-a", "telegram:1"), a1).await;
    seed(store, new_session("a2", "dm:web:c1:alice", "u-a", "web:c1"), vec![user("my bike is blue")]).await;
    let b1 = vec![user("my bike is red, a secret")];
    seed(store, new_session("b1", "dm:telegram:2:2", "u-b", "telegram:2"), b1).await;
    let g1 = vec![user("[Alice] group bike ride on sunday")];
    seed(store, new_session("g1", "group:telegram:-100", "u-a", "telegram:-100"), g1).await;
    let g2 = vec![user("[Bob] the other group's bike secret")];
    seed(store, new_session("g2", "group:telegram:-200", "u-b", "telegram:-200"), g2).await;
}

/// One search: who, the scope, the query, the session left out, the (session, seq) found, best first.
type Case = (&'static str, TranscriptScope, &'static str, Option<&'static str>, Vec<(&'static str, i64)>);

pub async fn search_stays_in_its_scope(store: Arc<dyn Store>) {
    people(&store).await;
    let private = TranscriptScope::Private;
    let group = |k: &str| TranscriptScope::Group(k.to_string());
    let cases: Vec<Case> = vec![
        // Both words beat one; equal matches: the newer first.
        ("u-a", private.clone(), "blue bike", None, vec![("a2", 1), ("a1", 1), ("a1", 4)]),
        ("u-a", private.clone(), "blue bike", Some("a2"), vec![("a1", 1), ("a1", 4)]),
        ("u-a", private.clone(), "sunday", None, vec![]),
        ("u-a", private.clone(), "secret", None, vec![]),
        ("u-b", private.clone(), "bike", None, vec![("b1", 1)]),
        ("u-a", group("group:telegram:-100"), "bike", None, vec![("g1", 1)]),
        // Anyone in the group reads the group's conversation, and only that one.
        ("u-b", group("group:telegram:-100"), "bike secret", None, vec![("g1", 1)]),
        ("u-a", group("group:telegram:-100"), "bike", Some("g1"), vec![]),
        // A direct key is no group scope.
        ("u-a", group("dm:telegram:1:1"), "bike", None, vec![]),
        ("u-b", group("dm:telegram:1:1"), "bike", None, vec![]),
        // Tool output is not searched.
        ("u-a", private.clone(), "shop results", None, vec![]),
        ("u-a", private.clone(), "the and of it", None, vec![]),
        ("u-a", private.clone(), "\"*) NEAR( OR -", None, vec![]),
        ("nobody", private.clone(), "bike", None, vec![]),
    ];
    for (who, scope, query, except, want) in cases {
        let hits = store.transcript_search(who, &scope, query, except, 10).await.unwrap();
        let got: Vec<(&str, i64)> = hits.iter().map(|h| (h.session_id.as_str(), h.seq)).collect();
        assert_eq!(got, want, "{who} {scope:?} {query:?} except {except:?}");
    }
    let hits = store.transcript_search("u-a", &private, "bike", None, 10).await.unwrap();
    let first = hits.iter().find(|h| h.session_id == "a1" && h.seq == 4).expect("the answer is found");
    assert_eq!(first.role, Role::Assistant);
    assert_eq!((first.session_key.as_str(), first.conversation.as_str()), ("dm:telegram:1:1", "telegram:1"));
    assert_eq!((first.channel(), first.content.as_str()), ("telegram", "Noted, a nice bike."));
    assert!(hits.iter().all(|h| h.role != Role::Tool && h.seq != 3), "tool output is not searched");
    assert!(first.created_ms >= first.session_created_ms && first.session_created_ms > 0);
    assert_eq!(store.transcript_search("u-a", &private, "bike", None, 1).await.unwrap().len(), 1, "the limit holds");
    assert!(store.transcript_search("u-a", &private, "bike", None, 0).await.unwrap().is_empty());
}

pub async fn recent_lists_own_direct_ones(store: Arc<dyn Store>) {
    people(&store).await;
    // An open direct session without messages is not listed.
    store.session_open(&new_session("a3", "dm:web:c2:alice", "u-a", "web:c2")).await.unwrap();
    let rows = store.sessions_recent("u-a", 10).await.unwrap();
    let got: Vec<(&str, &str, Option<&str>, i64, bool)> =
        rows.iter().map(|r| (r.id.as_str(), r.channel(), r.title.as_deref(), r.messages, r.is_open())).collect();
    assert_eq!(
        got,
        [("a2", "web", Some("my bike is blue"), 1, false), ("a1", "telegram", Some("my bike is blue"), 4, false)]
    );
    assert!(rows[0].last_ms > rows[1].last_ms && rows[1].last_ms >= rows[1].created_ms);
    assert_eq!(rows[0].key, "dm:web:c1:alice");
    let mine: Vec<String> = store.sessions_recent("u-b", 10).await.unwrap().into_iter().map(|r| r.id).collect();
    assert_eq!(mine, ["b1"]);
    assert_eq!(store.sessions_recent("u-a", 1).await.unwrap().len(), 1);
    assert!(store.sessions_recent("nobody", 10).await.unwrap().is_empty());
}

pub async fn resume_only_own_direct(store: Arc<dyn Store>) {
    people(&store).await;
    let here = "dm:web:c1:alice";
    seed(&store, new_session("a-now", here, "u-a", "web:c1"), vec![user("today")]).await;
    store.session_open(&new_session("a-now2", here, "u-a", "web:c1")).await.unwrap();
    seed(&store, new_session("a-tg", "dm:telegram:1:1", "u-a", "telegram:1"), vec![user("open")]).await;
    store.session_open(&new_session("a-tg-open", "dm:telegram:1:1", "u-a", "telegram:1")).await.unwrap();
    store.session_open(&new_session("b-open", "dm:web:c9:bob", "u-b", "web:c9")).await.unwrap();
    let active = |key: &'static str| {
        let store = store.clone();
        async move { store.session_active(key).await.unwrap().map(|s| s.id) }
    };
    // (session, key): refused, and nothing changes.
    let refused = [
        ("b1", here),                  // Bob's
        ("g1", here),                  // a group's
        ("a-tg-open", here),           // open under another key
        ("a1", "group:telegram:-100"), // not a direct key
        ("a1", "dm:web:c9:bob"),       // someone else's session is open there
        ("missing", here),
    ];
    for (id, key) in refused {
        assert!(store.session_resume("u-a", id, key).await.unwrap().is_none(), "{id} under {key}");
        assert_eq!(active(here).await.as_deref(), Some("a-now2"), "{id} under {key}");
        assert_eq!(active("dm:web:c9:bob").await.as_deref(), Some("b-open"));
        assert_eq!(active("dm:telegram:1:1").await.as_deref(), Some("a-tg-open"));
    }
    // Alice's Telegram conversation, taken up on the web: the web's open one closes.
    let row = store.session_resume("u-a", "a1", here).await.unwrap().expect("resumed");
    assert_eq!((row.id.as_str(), row.key.as_str(), row.user_id.as_str()), ("a1", here, "u-a"));
    assert_eq!(active(here).await.as_deref(), Some("a1"));
    assert_eq!(store.messages_recent("a1", 10).await.unwrap().len(), 4, "its transcript is whole");
    // Resuming the open one again changes nothing; the other one can come back.
    assert_eq!(store.session_resume("u-a", "a1", here).await.unwrap().map(|r| r.id).as_deref(), Some("a1"));
    assert_eq!(active(here).await.as_deref(), Some("a1"));
    assert!(store.session_resume("u-a", "a-now2", here).await.unwrap().is_some());
    assert_eq!(active(here).await.as_deref(), Some("a-now2"));
    // Bob's rows never moved.
    assert_eq!(active("dm:web:c9:bob").await.as_deref(), Some("b-open"));
    let listed: Vec<String> = store.sessions_recent("u-a", 10).await.unwrap().into_iter().map(|r| r.key).collect();
    assert!(listed.iter().all(|k| k.starts_with("dm:")), "{listed:?}");
}
