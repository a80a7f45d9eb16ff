//! Closed by default: unknown people get one pairing code (at most once an hour), nothing
//! reaches the agent; the owner approves; codes are single use and expire; wrong codes lock the
//! sender out; `allowlist` and `open` policies. Lockouts and refusal counts hold across
//! replicas (issue 18).

use crate::support::db::SqliteTestDb;
use crate::support::fake_channel::FakeChannel;
use crate::support::gates;
use crate::{decisions, start};
use butler::channel::Identity;
use butler::config::{AccessConfig, AccessPolicy};
use butler::store::{now_ms, CodeKind, CodeRow};
use butler::triage::access::{Access, Admission};
use std::time::Duration;

fn code_in(text: &str) -> String {
    let start = text.find('`').expect("a code in backticks") + 1;
    let end = start + text[start..].find('`').unwrap();
    text[start..end].to_string()
}

#[tokio::test]
async fn an_unknown_person_gets_one_pairing_code_and_the_owner_approves_it() {
    let (app, chat, llm) = start(|_| {}).await;
    for text in ["hello?", "anyone there?", "hello???"] {
        app.emit(chat.dm("mallory", text)).await;
    }
    let texts = chat.wait_texts("mallory", 1).await;
    chat.assert_quiet("mallory", 1).await;
    assert!(texts[0].contains("pairing code"), "{}", texts[0]);
    let code = code_in(&texts[0]);
    assert_eq!(code.len(), 9, "{code}");
    assert_eq!(llm.request_count(), 0, "nothing reached the model");
    let kinds: Vec<String> = decisions(&app).await.into_iter().map(|(k, _)| k).collect();
    assert_eq!(kinds, ["pairing", "drop", "drop"], "the code once, then silence, each recorded");

    // The owner lists and approves in their own chat.
    app.emit(chat.dm("owner", "/pair")).await;
    let owner = chat.wait_texts("owner", 1).await;
    assert!(owner[0].contains(&code) && owner[0].contains("chat:mallory"), "{}", owner[0]);
    app.emit(chat.dm("owner", &format!("/pair approve {}", code.to_lowercase()))).await;
    let owner = chat.wait_texts("owner", 2).await;
    assert!(owner[1].contains("Approved `chat:mallory`"), "{}", owner[1]);
    let told = chat.wait_texts("mallory", 2).await;
    assert!(told[1].contains("You're in"), "{}", told[1]);

    // Now Mallory reaches the agent.
    app.emit(chat.dm("mallory", "hi again")).await;
    let texts = chat.wait_texts("mallory", 3).await;
    assert_eq!(texts[2], "echo: hi again");
    assert_eq!(llm.request_count(), 1);

    // Single use: approving the same code again says it was approved already (not "no such
    // code"), and lets nobody else in.
    app.emit(chat.dm("owner", &format!("/pair approve {code}"))).await;
    let owner = chat.wait_texts("owner", 3).await;
    assert_eq!(owner[2], format!("`{code}` was already approved: chat:mallory is in."));
    app.stop().await;
}

/// "One code an hour" holds after the owner denies the code (issue 36): before, a denied
/// person got a new code with their next message, so they could ask the owner again and again.
#[tokio::test]
async fn a_denied_person_gets_no_new_code_within_the_hour() {
    let (app, chat, llm) = start(|_| {}).await;
    app.emit(chat.dm("mallory", "let me in")).await;
    let code = code_in(&chat.wait_texts("mallory", 1).await[0]);
    app.emit(chat.dm("owner", &format!("/pair deny {code}"))).await;
    let owner = chat.wait_texts("owner", 1).await;
    assert_eq!(owner[0], "Declined the request from `chat:mallory`.");
    for text in ["please?", "let me in!"] {
        app.emit(chat.dm("mallory", text)).await;
    }
    // Both are decided (silence, recorded) and Mallory is told nothing.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let quiet = |d: &(String, String)| d.0 == "drop" && d.1 == "chat:mallory";
    while decisions(&app).await.iter().filter(|d| quiet(d)).count() < 2 {
        assert!(std::time::Instant::now() < deadline, "{:?}", decisions(&app).await);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    app.emit(chat.dm("trudy", "hi")).await;
    assert!(chat.wait_texts("trudy", 1).await[0].contains("pairing code"), "others still get theirs");
    chat.assert_quiet("mallory", 1).await;
    let store = &app.app.store;
    let live = store.codes_live(CodeKind::Pair, now_ms()).await.unwrap();
    assert!(!live.iter().any(|c| c.identity == "chat:mallory"), "no new code for mallory: {live:?}");
    assert_eq!(llm.request_count(), 0);
    let kinds: Vec<String> = decisions(&app).await.into_iter().map(|(k, _)| k).collect();
    assert_eq!(kinds.iter().filter(|k| *k == "pairing").count(), 2, "mallory's one and trudy's: {kinds:?}");
    app.stop().await;
}

#[tokio::test]
async fn expired_codes_do_nothing_and_wrong_codes_lock_the_sender_out() {
    let (app, chat, _llm) = start(|_| {}).await;
    let store = &app.app.store;
    let old = CodeRow {
        kind: CodeKind::Pair,
        code: "ABCD-EFGH".into(),
        identity: "chat:late".into(),
        user_id: None,
        display_name: None,
        conversation: "chat:late".into(),
        created_ms: now_ms() - 7_200_000,
        expires_ms: now_ms() - 3_600_000,
    };
    store.code_create(&old).await.unwrap();
    app.emit(chat.dm("owner", "/pair approve ABCD-EFGH")).await;
    let owner = chat.wait_texts("owner", 1).await;
    assert!(owner[0].contains("not valid"), "{}", owner[0]);
    assert!(store.identity_user(&"chat:late".parse().unwrap()).await.unwrap().is_none());

    // A stranger guessing link codes is locked out after five wrong ones, even for a right one.
    for i in 0..5 {
        app.emit(chat.dm("guesser", &format!("/link WRNG-{i:04}"))).await;
    }
    let texts = chat.wait_texts("guesser", 5).await;
    assert!(texts[4].contains("too many wrong codes"), "{}", texts[4]);
    app.emit(chat.dm("owner", "/link")).await;
    let owner = chat.wait_texts("owner", 2).await;
    let right = code_in(&owner[1]).replace("/link ", "");
    app.emit(chat.dm("guesser", &format!("/link {right}"))).await;
    let texts = chat.wait_texts("guesser", 6).await;
    assert!(texts[5].starts_with("Too many wrong codes"), "{}", texts[5]);
    assert!(store.identity_user(&"chat:guesser".parse().unwrap()).await.unwrap().is_none(), "not linked");
    let kinds: Vec<String> = decisions(&app).await.into_iter().map(|(k, _)| k).collect();
    assert!(kinds.contains(&"locked".to_string()) && kinds.contains(&"wrong_code".to_string()), "{kinds:?}");
    app.stop().await;
}

#[tokio::test]
async fn allowlist_and_open_policies() {
    // Allowlist: listed people get through; others get one refusal and no code.
    let (app, chat, llm) = start(|c| {
        c.access.policy = AccessPolicy::Allowlist;
        c.access.allow = vec!["chat:friend".parse().unwrap()];
    })
    .await;
    app.emit(chat.dm("friend", "hi")).await;
    assert_eq!(chat.wait_texts("friend", 1).await[0], "echo: hi");
    app.emit(chat.dm("stranger", "hi")).await;
    app.emit(chat.dm("stranger", "hi?")).await;
    let texts = chat.wait_texts("stranger", 1).await;
    chat.assert_quiet("stranger", 1).await;
    assert_eq!(texts[0], "🔒 This Butler is private.");
    assert_eq!(llm.request_count(), 1);
    assert!(
        app.app.store.codes_live(CodeKind::Pair, now_ms()).await.unwrap().is_empty(),
        "no pairing in allowlist mode"
    );
    app.stop().await;

    // Open: anyone, as a guest.
    let (app, chat, _llm) = start(|c| c.access.policy = AccessPolicy::Open).await;
    app.emit(chat.dm("anyone", "/whoami")).await;
    let texts = chat.wait_texts("anyone", 1).await;
    assert!(texts[0].contains("role guest"), "{}", texts[0]);
    app.stop().await;
}

/// Issue 18 point 4: two replicas (two `Access`es on one shared gate, as two processes on one
/// Redis): wrong codes sent to either count toward one lockout that holds on both, and a
/// stranger is refused once an hour wherever their messages land.
#[tokio::test]
async fn lockouts_and_refusals_hold_across_replicas() {
    let (gates, _) = gates::replicas(2).await;
    let cfg = AccessConfig { policy: AccessPolicy::Allowlist, ..AccessConfig::default() };
    let replicas: Vec<Access> = gates.iter().map(|g| Access::new(&cfg, [], "UTC").with_gate(g.clone())).collect();
    let guesser = Identity::new("chat", "guesser");
    // (replica that gets the wrong code, locked out after it)
    let steps = [(0, false), (1, false), (0, false), (1, false), (0, true)];
    for (i, (r, locks)) in steps.into_iter().enumerate() {
        assert_eq!(replicas[r].wrong_code(&guesser).await, locks, "wrong code {i} on replica {r}");
    }
    for (r, access) in replicas.iter().enumerate() {
        let left = access.locked(&guesser).await;
        assert!(left.is_some_and(|l| l > Duration::from_secs(800)), "replica {r}: {left:?}");
    }

    let db = SqliteTestDb::new();
    let store = butler::store::connect(&db.url, 2).await.unwrap();
    store.migrate().await.unwrap();
    let stranger = FakeChannel::new("chat").dm("stranger", "hi");
    // (replica the message lands on, answered with a refusal rather than silence)
    for (r, answered) in [(0, true), (1, false), (0, false), (1, false)] {
        let got = replicas[r].admit((&*store, &*store), &stranger).await.unwrap();
        assert_eq!(matches!(got, Admission::Answer { .. }), answered, "replica {r}: {got:?}");
    }
}

/// Issue 18 point 4: a link made on one replica is announced on the cluster's bus (topic
/// `Access`, the identity as payload) and heard by the other replica, whose bus listener drops
/// the identity from its admission cache (`Access::invalidate`, in `app/replicas.rs`).
#[tokio::test]
async fn a_link_on_one_replica_is_announced_to_the_others() {
    use butler::cluster::{Cluster, Topic};
    use butler::config::{RedisConfig, Secret};
    let redis = RedisConfig {
        url: Secret::new(gates::REDIS_URL),
        lease_ms: 3000,
        prefix: format!("butler-test-{}", uuid::Uuid::new_v4().simple()),
    };
    let (tracker, cancel) = (tokio_util::task::TaskTracker::new(), tokio_util::sync::CancellationToken::new());
    let a = Cluster::connect(&redis, "replica-a".into()).await.unwrap();
    let b = Cluster::connect(&redis, "replica-b".into()).await.unwrap();
    b.start(&tracker, cancel.clone());
    let mut heard = b.subscribe();
    tokio::time::sleep(Duration::from_millis(500)).await; // b's bus connection subscribes

    let db = SqliteTestDb::new();
    let store = butler::store::connect(&db.url, 2).await.unwrap();
    store.migrate().await.unwrap();
    let owner = Identity::new("chat", "owner");
    let cfg = AccessConfig { owners: vec![owner.clone()], ..AccessConfig::default() };
    let on_a = Access::new(&cfg, [], "UTC").with_bus(a.clone());
    let user = on_a.user_for(&*store, &owner).await.unwrap().expect("the owner");
    let code = on_a.link_code(&*store, &FakeChannel::new("chat").dm("owner", "/link"), &user).await.unwrap();
    let phone = Identity::new("chat", "phone");
    assert!(on_a.redeem_link(&*store, &phone, &code).await.unwrap().is_some());

    let msg = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match heard.recv().await {
                Ok(m) if m.topic == Topic::Access => return m,
                Ok(_) => continue,
                Err(e) => panic!("{e}"),
            }
        }
    })
    .await
    .expect("replica b hears the link");
    assert_eq!((msg.origin.as_str(), msg.payload.as_str()), ("replica-a", "chat:phone"));
    cancel.cancel();
    tracker.close();
    tracker.wait().await;
}
