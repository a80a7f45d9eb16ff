//! `finish_event` contract: one transaction that appends the transcript, turns the streamed
//! draft into the final pending reply (keeping its platform ids), records usage and finishes the
//! inbox row; applying it twice changes nothing; a failure leaves nothing behind.

use crate::fixtures::{event, reply, session, strings};
use butler::channel::Button;
use butler::store::{
    InboxStatus, NewMessage, NewOutbox, OutboxMark, OutboxStatus, Store, TurnCommit, TurnUsage, UsageRecord,
    UsageTotals,
};
use std::sync::Arc;

fn usage(user: &str, event_id: &str, tokens: (i64, i64), cost: f64) -> UsageRecord {
    UsageRecord {
        user_id: user.into(),
        session_id: "s1".into(),
        event_id: event_id.into(),
        model: "test-model".into(),
        input_tokens: tokens.0,
        output_tokens: tokens.1,
        cost_usd: cost,
        iterations: 2,
        kind: "turn".into(),
        context_tokens: 0,
    }
}

/// An event claimed and its session open with the user message already appended (as the turn
/// does before calling the model).
pub async fn started_turn(store: &Arc<dyn Store>, event_id: &str) -> TurnCommit {
    store.inbox_insert(&event(event_id, "web", "c1")).await.unwrap();
    store.inbox_claim(&strings(&["web"]), "w", 10).await.unwrap();
    let s = match store.session_active("k").await.unwrap() {
        Some(s) => s,
        None => store.session_open(&session("s1", "k")).await.unwrap(),
    };
    store.messages_append(&s.id, &[NewMessage::user("hi", None, Some(event_id.into()))]).await.unwrap();
    TurnCommit {
        inbox_id: event_id.into(),
        inbox_status: InboxStatus::Done,
        session_id: Some(s.id),
        messages: vec![NewMessage::assistant("final answer", vec![])],
        reply: Some(NewOutbox {
            private_to: None,
            buttons: vec![Button { label: "OK".into(), action: "a1".into(), style: Default::default() }],
            ..reply(&format!("reply:{event_id}"), "web:c1", "final answer")
        }),
        usage: Some(usage("alice", event_id, (100, 20), 0.25).into()),
        approvals: vec![],
        notices: vec![],
        fence: None,
    }
}

pub async fn commits_everything(store: Arc<dyn Store>) {
    let commit = started_turn(&store, "e1").await;
    // Streaming created a draft and delivered its first chunk.
    let draft = store.outbox_draft(&reply("reply:e1", "web:c1", "final ans")).await.unwrap();
    assert_eq!(draft.status, OutboxStatus::Draft);
    store.outbox_progress(draft.id, &strings(&["web-msg-1"])).await.unwrap();

    let id = store.finish_event(&commit).await.unwrap().map(|r| r.id);
    assert_eq!(id, Some(draft.id), "the draft row is the reply");
    let row = store.outbox_get("reply:e1").await.unwrap().unwrap();
    assert_eq!(row.status, OutboxStatus::Pending);
    assert_eq!(row.text, "final answer");
    assert_eq!(row.buttons, commit.reply.as_ref().unwrap().buttons);
    assert_eq!(row.platform_ids, strings(&["web-msg-1"]), "platform ids of the draft are kept");

    let inbox = store.inbox_get("e1").await.unwrap().unwrap();
    assert_eq!(inbox.status, InboxStatus::Done);
    let transcript = store.messages_recent("s1", 10).await.unwrap();
    assert_eq!(transcript.iter().map(|m| m.msg.content.as_str()).collect::<Vec<_>>(), ["hi", "final answer"]);
    let totals = store.usage_since("alice", 0).await.unwrap();
    assert_eq!(totals, UsageTotals { turns: 1, input_tokens: 100, output_tokens: 20, cost_usd: 0.25 });

    // Without a draft, the reply is a fresh pending row; without a reply there is no id.
    let mut second = started_turn(&store, "e2").await;
    let id2 = store.finish_event(&second).await.unwrap().map(|r| r.id).expect("reply id");
    assert_ne!(id2, draft.id);
    assert_eq!(store.outbox_get("reply:e2").await.unwrap().unwrap().platform_ids, Vec::<String>::new());
    second.inbox_id = "e3".into();
    second.reply = None;
    second.usage = None;
    second.messages.clear();
    store.inbox_insert(&event("e3", "web", "c1")).await.unwrap();
    assert_eq!(store.finish_event(&second).await.unwrap().map(|r| r.id), None);
    assert_eq!(store.inbox_get("e3").await.unwrap().unwrap().status, InboxStatus::Done, "commands end too");
}

pub async fn is_idempotent(store: Arc<dyn Store>) {
    let commit = started_turn(&store, "e1").await;
    let first = store.finish_event(&commit).await.unwrap().map(|r| r.id);
    let again = store.finish_event(&commit).await.unwrap().map(|r| r.id);
    assert_eq!(first, again, "same outbox row");
    assert_eq!(store.messages_recent("s1", 10).await.unwrap().len(), 2, "no duplicated messages");
    assert_eq!(store.usage_since("alice", 0).await.unwrap().turns, 1, "usage counted once");
    assert_eq!(store.outbox_due(&strings(&["web"]), i64::MAX, 10).await.unwrap().len(), 1, "one outbox row");

    // Once sent, a re-run never changes the row.
    let sent_text = store.outbox_get("reply:e1").await.unwrap().unwrap().text;
    let sent = OutboxMark::Sent { platform_ids: vec!["m1".into()], text: sent_text };
    store.outbox_mark(first.unwrap(), &sent).await.unwrap();
    let mut changed = commit.clone();
    changed.reply.as_mut().unwrap().text = "a different answer".into();
    assert_eq!(store.finish_event(&changed).await.unwrap().map(|r| r.id), first);
    let row = store.outbox_get("reply:e1").await.unwrap().unwrap();
    assert_eq!((row.status, row.text.as_str()), (OutboxStatus::Sent, "final answer"));
    assert_eq!(store.inbox_get("e1").await.unwrap().unwrap().status, InboxStatus::Done);
}

pub async fn is_atomic(store: Arc<dyn Store>) {
    let mut commit = started_turn(&store, "e1").await;
    commit.session_id = Some("no-such-session".into());
    assert!(store.finish_event(&commit).await.is_err(), "appending to a missing session fails");
    let inbox = store.inbox_get("e1").await.unwrap().unwrap();
    assert_eq!(inbox.status, InboxStatus::Processing, "inbox status rolled back");
    assert!(store.outbox_get("reply:e1").await.unwrap().is_none(), "reply rolled back");
    assert_eq!(store.usage_since("alice", 0).await.unwrap(), UsageTotals::default(), "usage rolled back");
    assert_eq!(store.messages_recent("s1", 10).await.unwrap().len(), 1);

    // The same commit with the right session then applies in full.
    commit.session_id = Some("s1".into());
    assert!(store.finish_event(&commit).await.unwrap().map(|r| r.id).is_some());
    assert_eq!(store.messages_recent("s1", 10).await.unwrap().len(), 2);
}

/// A turn answered by two models (the primary, then a fallback) is stored as one row per model
/// and still counts as one turn.
pub async fn usage_totals(store: Arc<dyn Store>) {
    let fallback = |row: UsageRecord| UsageRecord { model: "fallback-model".into(), iterations: 0, ..row };
    let turns = [
        ("e1", vec![usage("alice", "e1", (10, 1), 0.5)]),
        ("e2", vec![usage("alice", "e2", (15, 1), 0.2), fallback(usage("alice", "e2", (5, 1), 0.05))]),
        ("e3", vec![usage("bob", "e3", (1000, 1000), 9.0)]),
    ];
    for (eid, rows) in turns {
        store.inbox_insert(&event(eid, "web", "c1")).await.unwrap();
        let commit = TurnCommit {
            inbox_id: eid.into(),
            inbox_status: InboxStatus::Done,
            session_id: None,
            messages: vec![],
            reply: None,
            usage: Some(TurnUsage::new(rows)),
            approvals: vec![],
            notices: vec![],
            fence: None,
        };
        store.finish_event(&commit).await.unwrap().map(|r| r.id);
    }
    let future = butler::store::now_ms() + 60_000;
    // (user, since, expected totals)
    let cases = [
        ("alice", 0, UsageTotals { turns: 2, input_tokens: 30, output_tokens: 3, cost_usd: 0.75 }),
        ("bob", 0, UsageTotals { turns: 1, input_tokens: 1000, output_tokens: 1000, cost_usd: 9.0 }),
        ("carol", 0, UsageTotals::default()),
        ("alice", future, UsageTotals::default()),
    ];
    for (user, since, want) in cases {
        assert_eq!(store.usage_since(user, since).await.unwrap(), want, "{user} since {since}");
    }
}

/// Usage rows of other kinds (archivist, compaction) count in tokens and cost but not as turns;
/// the latest turn's context size is kept per session; summary checkpoints are per session and
/// the latest one wins.
pub async fn usage_kinds_context_and_summaries(store: Arc<dyn Store>) {
    let commit = started_turn(&store, "e1").await;
    let mut commit = commit;
    if let Some(u) = commit.usage.as_mut() {
        u.rows[0].context_tokens = 1234;
    }
    store.finish_event(&commit).await.unwrap();
    let extra = UsageRecord {
        kind: "archivist".into(),
        event_id: "e1:archivist".into(),
        ..usage("alice", "x", (100, 10), 0.5)
    };
    store.usage_add(&extra).await.unwrap();
    let totals = store.usage_since("alice", 0).await.unwrap();
    assert_eq!(totals.turns, 1, "the archivist is not a turn");
    assert!(totals.input_tokens >= 100 && totals.cost_usd >= 0.5, "{totals:?}");
    assert_eq!(store.last_context("s1").await.unwrap(), 1234);
    assert_eq!(store.last_context("nope").await.unwrap(), 0);

    assert!(store.summary_latest("s1").await.unwrap().is_none());
    for (up_to, text) in [(4, "first"), (9, "second"), (9, "ignored duplicate")] {
        store.summary_add("s1", up_to, text).await.unwrap();
    }
    let latest = store.summary_latest("s1").await.unwrap().unwrap();
    assert_eq!((latest.up_to_seq, latest.text.as_str()), (9, "second"));
    assert!(store.summary_latest("s2").await.unwrap().is_none(), "per session");
}
