//! Outbox contract: drafts and enqueues are idempotent per key, due rows come oldest first per
//! channel, and marks move rows as documented (a sent row never changes again).

use crate::fixtures::{reply, strings};
use butler::channel::{Button, ButtonStyle};
use butler::store::{OutboxMark, OutboxStatus, Store};
use std::sync::Arc;

pub async fn draft_and_enqueue(store: Arc<dyn Store>) {
    let approve = vec![Button { label: "Approve".into(), action: "ap:1".into(), style: ButtonStyle::Primary }];
    // (operation, key, text, expected status, expected text)
    let steps: &[(&str, &str, &str, OutboxStatus, &str)] = &[
        ("draft", "k1", "Hel", OutboxStatus::Draft, "Hel"),
        ("draft", "k1", "Hello wor", OutboxStatus::Draft, "Hel"),
        ("enqueue", "k1", "Hello world", OutboxStatus::Pending, "Hello world"),
        ("enqueue", "k1", "changed", OutboxStatus::Pending, "Hello world"),
        ("draft", "k1", "back to draft?", OutboxStatus::Pending, "Hello world"),
        ("enqueue", "k2", "direct", OutboxStatus::Pending, "direct"),
        ("enqueue", "k2", "again", OutboxStatus::Pending, "direct"),
    ];
    let mut ids = std::collections::HashMap::new();
    for (op, key, text, status, want_text) in steps {
        let mut new = reply(key, "slack:C024BE91L/1355517523.000005", text);
        new.buttons = approve.clone();
        new.reply_to = Some("m-1".into());
        let row = match *op {
            "draft" => store.outbox_draft(&new).await.unwrap(),
            _ => store.outbox_enqueue(&new).await.unwrap(),
        };
        assert_eq!((row.status, row.text.as_str()), (*status, *want_text), "{op} {key} {text}");
        assert_eq!(*ids.entry(key.to_string()).or_insert(row.id), row.id, "{op} {key}: one row per key");
        assert_eq!(row.channel, "slack");
        assert_eq!(row.conversation, "slack:C024BE91L/1355517523.000005");
        assert_eq!((row.buttons.clone(), row.reply_to.as_deref()), (approve.clone(), Some("m-1")));
        assert_eq!(store.outbox_get(key).await.unwrap().unwrap(), row, "outbox_get sees the same row");
    }
    assert!(store.outbox_get("k3").await.unwrap().is_none());
}

pub async fn due_mark_retry(store: Arc<dyn Store>) {
    let mut ids = Vec::new();
    for (key, conv) in [("a", "telegram:1"), ("b", "slack:C1"), ("c", "telegram:2/7"), ("d", "telegram:3")] {
        ids.push(store.outbox_enqueue(&reply(key, conv, key)).await.unwrap().id);
    }
    store.outbox_draft(&reply("drafting", "telegram:1", "...")).await.unwrap();
    let tg = strings(&["telegram"]);
    let now = butler::store::now_ms();
    let keys = |rows: Vec<butler::store::OutboxRow>| rows.into_iter().map(|r| r.key).collect::<Vec<_>>();

    assert_eq!(keys(store.outbox_due(&tg, now, 10).await.unwrap()), ["a", "c", "d"], "oldest first, no drafts");
    assert_eq!(keys(store.outbox_due(&tg, now, 2).await.unwrap()), ["a", "c"]);
    assert_eq!(keys(store.outbox_due(&strings(&["slack", "telegram"]), now, 10).await.unwrap()), ["a", "b", "c", "d"]);
    assert!(store.outbox_due(&[], now, 10).await.unwrap().is_empty());

    store.outbox_progress(ids[0], &strings(&["101"])).await.unwrap();
    // The last chunk's id is recorded by the same write that marks the row sent.
    let sent = OutboxMark::Sent { platform_ids: strings(&["101", "102"]), text: "a".into() };
    store.outbox_mark(ids[0], &sent).await.unwrap();
    let later = now + 60_000;
    let rate_limited = OutboxMark::Retry { next_attempt_ms: later, error: "429".into(), count_attempt: false };
    store.outbox_mark(ids[2], &rate_limited).await.unwrap();
    let broken = OutboxMark::Retry { next_attempt_ms: later, error: "502".into(), count_attempt: true };
    store.outbox_mark(ids[3], &broken).await.unwrap();
    store.outbox_mark(ids[3], &broken).await.unwrap();

    assert!(store.outbox_due(&tg, now, 10).await.unwrap().is_empty(), "sent and rescheduled rows are not due");
    assert_eq!(keys(store.outbox_due(&tg, later, 10).await.unwrap()), ["c", "d"], "due again at their time");

    // (key, status, attempts, last error, platform ids)
    type Expected<'a> = (&'a str, OutboxStatus, i32, Option<&'a str>, &'a [&'a str]);
    let want: &[Expected] = &[
        ("a", OutboxStatus::Sent, 1, None, &["101", "102"]),
        ("c", OutboxStatus::Pending, 0, Some("429"), &[]),
        ("d", OutboxStatus::Pending, 2, Some("502"), &[]),
    ];
    for (key, status, attempts, error, pids) in want {
        let row = store.outbox_get(key).await.unwrap().unwrap();
        assert_eq!((row.status, row.attempts, row.last_error.as_deref()), (*status, *attempts, *error), "{key}");
        assert_eq!(row.platform_ids, strings(pids), "{key}");
        if *status == OutboxStatus::Pending {
            assert_eq!(row.next_attempt_ms, later, "{key}");
        }
    }

    store.outbox_mark(ids[3], &OutboxMark::Failed { error: "gave up".into() }).await.unwrap();
    let d = store.outbox_get("d").await.unwrap().unwrap();
    assert_eq!((d.status, d.attempts, d.last_error.as_deref()), (OutboxStatus::Failed, 3, Some("gave up")));

    // A sent row never changes again, whatever is marked.
    for mark in [
        OutboxMark::Failed { error: "late".into() },
        rate_limited.clone(),
        OutboxMark::Sent { platform_ids: strings(&["999"]), text: "a".into() },
    ] {
        store.outbox_mark(ids[0], &mark).await.unwrap();
        let a = store.outbox_get("a").await.unwrap().unwrap();
        assert_eq!((a.status, a.attempts, a.last_error.as_deref()), (OutboxStatus::Sent, 1, None), "{mark:?}");
        assert_eq!(a.platform_ids, strings(&["101", "102"]), "{mark:?}");
    }
}

/// A row revised while it was being delivered (an approval decided meanwhile) stays pending:
/// marking it sent with the text that went out changes nothing, so the new text goes out too.
pub async fn revision_during_delivery_stays_pending(store: Arc<dyn Store>) {
    let row = store.outbox_enqueue(&reply("approval:r1", "telegram:1", "Allow this?")).await.unwrap();
    // The decision revises the row while the worker is still sending the old text.
    revise_through_an_approval(&store, &row).await;
    let stale = OutboxMark::Sent { platform_ids: strings(&["m1"]), text: row.text.clone() };
    store.outbox_mark(row.id, &stale).await.unwrap();
    let now = store.outbox_get("approval:r1").await.unwrap().unwrap();
    assert_eq!(now.status, butler::store::OutboxStatus::Pending, "still to be delivered");
    assert_eq!(now.text, "Approved.");
    // Delivering the new text and marking it with that text completes it.
    let fresh = OutboxMark::Sent { platform_ids: strings(&["m1"]), text: now.text.clone() };
    store.outbox_mark(row.id, &fresh).await.unwrap();
    assert_eq!(store.outbox_get("approval:r1").await.unwrap().unwrap().status, butler::store::OutboxStatus::Sent);
}

/// Revises the row through the store's own path for revisions (a decided approval's message).
async fn revise_through_an_approval(store: &Arc<dyn Store>, row: &butler::store::OutboxRow) {
    use butler::store::{ApprovalDecision, ApprovalKind, ApprovalRow, ApprovalStatus, InboxStatus, TurnCommit};
    let _ = row;
    let session = store
        .session_open(&butler::store::NewSession {
            id: "rs".into(),
            key: "dm:telegram:1:1".into(),
            user_id: "u".into(),
            conversation: "telegram:1".into(),
            system_prompt: "p".into(),
        })
        .await
        .unwrap();
    let approval = ApprovalRow {
        id: "r1".into(),
        session_id: session.id.clone(),
        session_key: session.key.clone(),
        conversation: "telegram:1".into(),
        event_id: "e-r1".into(),
        tool_call_id: "c1".into(),
        tool: "shell".into(),
        args_hash: "h".into(),
        summary: "run `ls`".into(),
        requester: "telegram:1".into(),
        requester_user: "u".into(),
        approvers: vec!["requester".into()],
        kind: ApprovalKind::Tool,
        options: vec![],
        answer: None,
        detail: None,
        status: ApprovalStatus::Pending,
        scope: None,
        decided_by: None,
        decided_ms: None,
        created_ms: 0,
        expires_ms: i64::MAX,
    };
    let commit = TurnCommit {
        inbox_id: "e-r1".into(),
        inbox_status: InboxStatus::Done,
        session_id: None,
        messages: vec![],
        reply: None,
        usage: None,
        approvals: vec![approval],
        notices: vec![],
        fence: None,
    };
    store.finish_event(&commit).await.unwrap();
    let decision = ApprovalDecision {
        status: ApprovalStatus::Approved,
        scope: Some("once".into()),
        decided_by: "alice".into(),
        message: "Approved.".into(),
        answer: None,
    };
    assert!(store.approval_decide("r1", &decision).await.unwrap().is_some());
}

/// Replies held for a closed reply window: only the held rows of that conversation become due,
/// with the notice before their text; the others are untouched, and a second release finds none.
pub async fn held_replies_are_released_per_conversation(store: Arc<dyn Store>) {
    let now = butler::store::now_ms();
    let week = now + 7 * 24 * 3600 * 1000;
    // (key, conversation, error it was parked with)
    let rows = [
        ("h1", "whatsapp:111", "held: 131047"),
        ("h2", "whatsapp:111", "rate limited"),
        ("h3", "whatsapp:222", "held: 131047"),
    ];
    for (key, conversation, error) in rows {
        let id = store.outbox_enqueue(&reply(key, conversation, "the briefing")).await.unwrap().id;
        let mark = OutboxMark::Retry { next_attempt_ms: week, error: error.into(), count_attempt: false };
        store.outbox_mark(id, &mark).await.unwrap();
    }
    let wa = strings(&["whatsapp"]);
    assert!(store.outbox_due(&wa, now + 1000, 10).await.unwrap().is_empty(), "all parked");
    assert_eq!(store.outbox_release("whatsapp:111", "(notice)\n\n").await.unwrap(), 1);
    let due = store.outbox_due(&wa, butler::store::now_ms() + 1000, 10).await.unwrap();
    let got: Vec<(&str, &str)> = due.iter().map(|r| (r.key.as_str(), r.text.as_str())).collect();
    assert_eq!(got, [("h1", "(notice)\n\nthe briefing")]);
    assert_eq!(store.outbox_release("whatsapp:111", "(notice)\n\n").await.unwrap(), 0, "released once");
    assert_eq!(store.outbox_get("h3").await.unwrap().unwrap().text, "the briefing", "another person's stays held");
}

/// The ingress releases held replies only on channels with a reply window (WhatsApp): a message
/// on any other channel looks nothing up and releases nothing, even in a conversation of the same
/// id; a message on a windowed channel releases its conversation's.
pub async fn ingress_releases_only_on_windowed_channels(store: Arc<dyn Store>) {
    use butler::channel::Ingress;
    let week = butler::store::now_ms() + 7 * 24 * 3600 * 1000;
    for (key, conversation) in [("w1", "whatsapp:111"), ("t1", "telegram:111")] {
        let id = store.outbox_enqueue(&reply(key, conversation, "the briefing")).await.unwrap().id;
        let mark = OutboxMark::Retry { next_attempt_ms: week, error: "held: 131047".into(), count_attempt: false };
        store.outbox_mark(id, &mark).await.unwrap();
    }
    let ingress = butler::ingress::InboxIngress::new(store.clone(), Arc::new(tokio::sync::Notify::new()))
        .with_held(store.clone());
    ingress.release_held_on(strings(&["whatsapp"]));
    let held = |key: &'static str| {
        let store = store.clone();
        async move { store.outbox_get(key).await.unwrap().unwrap().text == "the briefing" }
    };
    ingress.accept(crate::fixtures::event("e-t", "telegram", "111")).await.unwrap();
    assert!(held("t1").await && held("w1").await, "a telegram message releases nothing");
    ingress.accept(crate::fixtures::event("e-w", "whatsapp", "111")).await.unwrap();
    assert!(!held("w1").await, "a whatsapp message releases its conversation's held reply");
    assert!(held("t1").await, "the telegram row was never held by a window and stays as it was");
}

/// A briefing's title (the schedule's name, a mail's subject): kept from the draft to the
/// final row, and set by the reply to a scheduled job's event only.
pub async fn a_scheduled_jobs_reply_is_titled_with_its_name(store: Arc<dyn Store>) {
    use butler::channel::{Actor, ConversationKind, ConversationRef, EventBody, EventId, Identity, InboundEvent};
    let event = |n: usize, source: &str, name: &str| InboundEvent {
        id: EventId(format!("{source}:{n}:1700000000000")),
        actor: Actor::new(Identity::new("email", "alice@example.com")),
        conversation: ConversationRef::new("email", "alice@example.com"),
        kind: ConversationKind::Direct,
        addressed: true,
        reply_to: None,
        message_id: None,
        body: EventBody::Trigger {
            source: source.into(),
            text: "brief me".into(),
            payload: serde_json::json!({"name": name}),
        },
        at_ms: 1_700_000_000_000,
        attachments: vec![],
    };
    // (event source, job name, expected title)
    let cases =
        [("schedule", "Morning briefing", Some("Morning briefing")), ("schedule", " ", None), ("hook", "deploy", None)];
    for (n, (source, name, want)) in cases.into_iter().enumerate() {
        let e = event(n, source, name);
        let draft = butler::store::NewOutbox::reply(&e, "Rai");
        assert_eq!(draft.title.as_deref(), want, "{source} {name:?}");
        store.outbox_draft(&draft).await.unwrap();
        let mut last = butler::store::NewOutbox::reply(&e, "Rain today.");
        last.title = None;
        let row = store.outbox_enqueue(&last).await.unwrap();
        assert_eq!((row.text.as_str(), row.title.as_deref()), ("Rain today.", want), "the draft's title stays");
    }
}
