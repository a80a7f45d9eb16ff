//! Approval contract: approvals are stored by `finish_event` together with their messages
//! (atomically, and once: a re-run of the commit adds neither), decided at most once (a
//! compare-and-swap from `pending` that also revises the approval's own message, and nothing
//! else, so that it is edited in place), listed when due (expiry inclusive) or pending per
//! session, and grant a tool for a session only when approved with scope `session`.

use crate::fixtures::{approval, event, reply, session, strings};
use crate::turn::started_turn;
use butler::channel::{Button, ButtonStyle};
use butler::store::{
    ApprovalDecision, ApprovalRow, ApprovalStatus, InboxStatus, NewOutbox, OutboxMark, OutboxRow, OutboxStatus, Store,
    StoreError, TurnCommit, UsageTotals,
};
use std::sync::Arc;

const T: i64 = 1_700_000_000_000;
const HOUR: i64 = 3_600_000;

fn ids(rows: &[ApprovalRow]) -> Vec<&str> {
    rows.iter().map(|r| r.id.as_str()).collect()
}

fn message_key(id: &str) -> String {
    format!("approval:{id}")
}

/// The request message of `a`: its summary and the buttons that carry its id.
fn notice(a: &ApprovalRow) -> NewOutbox {
    NewOutbox {
        buttons: vec![
            Button::new("Approve once", format!("approval:{}:once", a.id), ButtonStyle::Primary),
            Button::new("Always in this session", format!("approval:{}:session", a.id), ButtonStyle::Default),
            Button::new("Deny", format!("approval:{}:deny", a.id), ButtonStyle::Danger),
        ],
        ..reply(&message_key(&a.id), &a.conversation, &format!("Allow? {}", a.summary))
    }
}

fn decision(status: ApprovalStatus, scope: Option<&str>, by: &str) -> ApprovalDecision {
    ApprovalDecision {
        status,
        scope: scope.map(str::to_string),
        decided_by: by.to_string(),
        message: format!("{} by {by}", status.as_str()),
        answer: None,
    }
}

/// `approval(...)` already in `status` (with `scope`), as a commit may store it.
fn given(
    id: &str,
    session_id: &str,
    tool: &str,
    status: ApprovalStatus,
    scope: Option<&str>,
    times: (i64, i64),
) -> ApprovalRow {
    let decided = status != ApprovalStatus::Pending;
    ApprovalRow {
        status,
        scope: scope.map(str::to_string),
        decided_by: decided.then(|| "telegram:7".to_string()),
        decided_ms: decided.then_some(times.0 + 1),
        ..approval(id, session_id, tool, times.0, times.1)
    }
}

/// Opens sessions `ids` (keys `key-<id>`).
pub(crate) async fn open_sessions(store: &Arc<dyn Store>, ids: &[&str]) {
    for id in ids {
        store.session_open(&session(id, &format!("key-{id}"))).await.unwrap();
    }
}

/// Stores `approvals` and `notices` as a parked turn does: in the commit of event `event_id`.
async fn park_with(store: &Arc<dyn Store>, event_id: &str, approvals: &[ApprovalRow], notices: Vec<NewOutbox>) {
    store.inbox_insert(&event(event_id, "telegram", "42")).await.unwrap();
    let commit = TurnCommit {
        inbox_id: event_id.into(),
        inbox_status: InboxStatus::Done,
        session_id: None,
        messages: vec![],
        reply: None,
        usage: None,
        approvals: approvals.to_vec(),
        notices,
        fence: None,
    };
    store.finish_event(&commit).await.unwrap();
}

/// [`park_with`] the request message of every approval.
pub(crate) async fn park(store: &Arc<dyn Store>, event_id: &str, approvals: &[ApprovalRow]) {
    park_with(store, event_id, approvals, approvals.iter().map(notice).collect()).await;
}

async fn outbox_rows(store: &Arc<dyn Store>, keys: &[String]) -> Vec<Option<OutboxRow>> {
    let mut rows = Vec::new();
    for key in keys {
        rows.push(store.outbox_get(key).await.unwrap());
    }
    rows
}

pub async fn commit_stores_approvals_and_notices(store: Arc<dyn Store>) {
    use ApprovalStatus::Approved;
    let mut commit = started_turn(&store, "e1").await;
    let once = approval("a1", "s1", "shell", T, T + HOUR);
    let owner = ApprovalRow {
        approvers: strings(&["user:bob", "telegram:7"]),
        ..approval("a2", "s1", "write_file", T + 1, T + HOUR)
    };
    let decided = given("a3", "s1", "email", Approved, Some("session"), (T + 2, T + HOUR));
    // Before the commit: a2's message exists as a draft with a platform id, a note was sent.
    let draft = store.outbox_draft(&reply(&message_key("a2"), "telegram:42", "Allow? ...")).await.unwrap();
    store.outbox_progress(draft.id, &strings(&["tg-1"])).await.unwrap();
    let note = store.outbox_enqueue(&reply("note:e1", "telegram:42", "earlier")).await.unwrap();
    store
        .outbox_mark(note.id, &OutboxMark::Sent { platform_ids: strings(&["tg-0"]), text: note.text.clone() })
        .await
        .unwrap();
    commit.approvals = vec![once.clone(), owner.clone(), decided.clone()];
    commit.notices = vec![notice(&once), notice(&owner), reply("note:e1", "telegram:42", "changed")];

    let replied = store.finish_event(&commit).await.unwrap().expect("the reply row");
    assert_eq!((replied.key.as_str(), replied.status), ("reply:e1", OutboxStatus::Pending));
    for a in &commit.approvals {
        assert_eq!(store.approval_get(&a.id).await.unwrap().as_ref(), Some(a), "{} is stored as given", a.id);
    }
    assert_eq!(ids(&store.approvals_pending("s1").await.unwrap()), ["a1", "a2"]);

    // Notices are upserted like the reply: (key, status, text, buttons, platform ids).
    let want = [
        (message_key("a1"), OutboxStatus::Pending, notice(&once).text, notice(&once).buttons, vec![]),
        (message_key("a2"), OutboxStatus::Pending, notice(&owner).text, notice(&owner).buttons, strings(&["tg-1"])),
        ("note:e1".to_string(), OutboxStatus::Sent, "earlier".to_string(), vec![], strings(&["tg-0"])),
    ];
    for (key, status, text, buttons, platform_ids) in want {
        let row = store.outbox_get(&key).await.unwrap().unwrap_or_else(|| panic!("{key} stored"));
        assert_eq!(
            (row.status, &row.text, &row.buttons, &row.platform_ids),
            (status, &text, &buttons, &platform_ids),
            "{key}"
        );
        assert_eq!((row.channel.as_str(), row.conversation.as_str()), ("telegram", "telegram:42"), "{key}");
    }
    assert_eq!(
        draft.id,
        store.outbox_get(&message_key("a2")).await.unwrap().unwrap().id,
        "the draft row is the notice"
    );

    // The rest of the commit landed with them.
    assert_eq!(store.inbox_get("e1").await.unwrap().unwrap().status, InboxStatus::Done);
    assert_eq!(store.messages_recent("s1", 10).await.unwrap().len(), 2);
    assert_eq!(store.usage_since("alice", 0).await.unwrap().turns, 1);
}

pub async fn rerun_adds_nothing(store: Arc<dyn Store>) {
    let finished = [InboxStatus::Done, InboxStatus::Dropped, InboxStatus::Failed];
    for (i, status) in finished.into_iter().enumerate() {
        let mut commit = started_turn(&store, &format!("e{i}")).await;
        commit.inbox_status = status;
        let asked = approval(&format!("a{i}"), "s1", "shell", T + i as i64, T + HOUR);
        commit.approvals = vec![asked.clone()];
        commit.notices = vec![notice(&asked)];
        store.finish_event(&commit).await.unwrap();
        // Decided before the re-run: the approval and its revised message must stay as they are.
        let denied = decision(ApprovalStatus::Denied, None, "telegram:7");
        let decided = store.approval_decide(&asked.id, &denied).await.unwrap().expect("decided");
        let message = store.outbox_get(&message_key(&asked.id)).await.unwrap().unwrap();
        assert_eq!(message.text, denied.message);

        // The same commit again, and a re-run of the turn that asked anew (a fresh approval id).
        let fresh = approval(&format!("b{i}"), "s1", "shell", T, T + HOUR);
        let mut asked_anew = commit.clone();
        asked_anew.approvals.push(fresh.clone());
        asked_anew.notices.push(notice(&fresh));
        for (name, again) in [("same commit", &commit), ("asked anew", &asked_anew)] {
            store.finish_event(again).await.unwrap();
            let what = format!("{status:?}, {name}");
            assert_eq!(store.approval_get(&asked.id).await.unwrap().as_ref(), Some(&decided), "{what}");
            assert_eq!(store.outbox_get(&message.key).await.unwrap().as_ref(), Some(&message), "{what}");
            assert_eq!(store.approval_get(&fresh.id).await.unwrap(), None, "{what}: no new approval");
            assert_eq!(store.outbox_get(&message_key(&fresh.id)).await.unwrap(), None, "{what}: no new notice");
            assert_eq!(store.inbox_get(&commit.inbox_id).await.unwrap().unwrap().status, status, "{what}");
        }
    }
    assert!(store.approvals_pending("s1").await.unwrap().is_empty());
    assert_eq!(store.messages_recent("s1", 100).await.unwrap().len(), 6, "each turn appended once");
    assert_eq!(store.usage_since("alice", 0).await.unwrap().turns, 3, "each turn counted once");

    // An approval id that exists already is left unchanged, even by a commit applied in full (an
    // event without an inbox row).
    let existing = store.approval_get("a0").await.unwrap().unwrap();
    let other = TurnCommit {
        inbox_id: "no-inbox-row".into(),
        inbox_status: InboxStatus::Done,
        session_id: None,
        messages: vec![],
        reply: None,
        usage: None,
        approvals: vec![ApprovalRow { summary: "something else".into(), ..approval("a0", "s1", "shell", T, T) }],
        notices: vec![],
        fence: None,
    };
    store.finish_event(&other).await.unwrap();
    assert_eq!(store.approval_get("a0").await.unwrap(), Some(existing));
}

pub async fn commit_is_atomic(store: Arc<dyn Store>) {
    let mut commit = started_turn(&store, "e1").await;
    let good = approval("a1", "s1", "shell", T, T + HOUR);
    let bad = approval("a2", "no-such-session", "shell", T, T + HOUR);
    commit.approvals = vec![good.clone(), bad.clone()];
    commit.notices = vec![notice(&good), notice(&bad)];
    match store.finish_event(&commit).await {
        Err(StoreError::Conflict(_)) => {}
        other => panic!("an approval of a missing session must fail the commit, got {other:?}"),
    }
    for id in ["a1", "a2"] {
        assert_eq!(store.approval_get(id).await.unwrap(), None, "approval {id} rolled back");
        assert_eq!(store.outbox_get(&message_key(id)).await.unwrap(), None, "notice of {id} rolled back");
    }
    assert_eq!(store.outbox_get("reply:e1").await.unwrap(), None, "reply rolled back");
    assert_eq!(store.inbox_get("e1").await.unwrap().unwrap().status, InboxStatus::Processing, "inbox rolled back");
    assert_eq!(store.messages_recent("s1", 10).await.unwrap().len(), 1, "transcript rolled back");
    assert_eq!(store.usage_since("alice", 0).await.unwrap(), UsageTotals::default(), "usage rolled back");

    // Fixed, the same commit applies in full.
    commit.approvals[1].session_id = "s1".into();
    store.finish_event(&commit).await.unwrap();
    assert_eq!(ids(&store.approvals_pending("s1").await.unwrap()), ["a1", "a2"]);
    for id in ["a1", "a2"] {
        assert!(store.outbox_get(&message_key(id)).await.unwrap().is_some(), "notice of {id}");
    }
}

pub async fn decide_wins_once(store: Arc<dyn Store>) {
    use ApprovalStatus::{Approved, Denied, Pending};
    open_sessions(&store, &["s1"]).await;
    let asked = approval("a1", "s1", "shell", T, T + HOUR);
    park(&store, "e1", std::slice::from_ref(&asked)).await;
    let before = butler::store::now_ms();
    let mut tasks = Vec::new();
    for i in 0..8 {
        let store = store.clone();
        let by = format!("telegram:{i}");
        let d = if i % 2 == 0 { decision(Approved, Some("session"), &by) } else { decision(Denied, None, &by) };
        tasks.push(tokio::spawn(async move {
            let won = store.approval_decide("a1", &d).await;
            (d, won)
        }));
    }
    let mut winners = Vec::new();
    for t in tasks {
        let (d, won) = t.await.unwrap();
        if let Some(row) = won.unwrap() {
            winners.push((d, row));
        }
    }
    assert_eq!(winners.len(), 1, "exactly one concurrent decider wins");
    let (d, row) = &winners[0];
    assert_eq!(
        (row.status, row.scope.as_ref(), row.decided_by.as_ref()),
        (d.status, d.scope.as_ref(), Some(&d.decided_by))
    );
    assert!(row.decided_ms.unwrap() >= before, "decided now");
    let undecided = ApprovalRow { status: Pending, scope: None, decided_by: None, decided_ms: None, ..row.clone() };
    assert_eq!(undecided, asked, "only the decision fields change");
    assert_eq!(store.approval_get("a1").await.unwrap().as_ref(), Some(row), "the winner is stored");
    assert_eq!(store.outbox_get(&message_key("a1")).await.unwrap().unwrap().text, d.message, "the winner's text");
    assert!(store.approvals_pending("s1").await.unwrap().is_empty());
}

pub async fn decide_revises_its_message(store: Arc<dyn Store>) {
    open_sessions(&store, &["s1"]).await;
    let asked: Vec<ApprovalRow> =
        ["a1", "a2", "a3", "a10"].iter().map(|id| approval(id, "s1", "shell", T, T + HOUR)).collect();
    park(&store, "e1", &asked).await;
    // a4 has no message (yet).
    park_with(&store, "e2", &[approval("a4", "s1", "shell", T, T + HOUR)], vec![]).await;
    store.outbox_enqueue(&reply("reply:e1", "telegram:42", "I need your approval.")).await.unwrap();
    let later = T + HOUR;
    let retry = |error: &str| OutboxMark::Retry { next_attempt_ms: later, error: error.into(), count_attempt: true };
    // The text is filled in from the row when the mark is applied below.
    let sent = |ids: &[&str]| OutboxMark::Sent { platform_ids: strings(ids), text: String::new() };

    // (approval, what happened to its message before the decision, platform ids it keeps)
    let cases: [(&str, Vec<OutboxMark>, &[&str]); 4] = [
        ("a1", vec![retry("502"), sent(&["tg-1", "tg-2"])], &["tg-1", "tg-2"]),
        ("a2", vec![retry("429")], &[]),
        ("a3", vec![OutboxMark::Failed { error: "blocked".into() }], &[]),
        ("a4", vec![], &[]),
    ];
    let keys: Vec<String> =
        ["a1", "a2", "a3", "a4", "a10"].iter().map(|id| message_key(id)).chain(["reply:e1".to_string()]).collect();
    for (id, marks, kept) in cases {
        let key = message_key(id);
        let before = store.outbox_get(&key).await.unwrap();
        for mark in &marks {
            let row = before.as_ref().unwrap();
            let mark = match mark {
                OutboxMark::Sent { platform_ids, .. } => {
                    OutboxMark::Sent { platform_ids: platform_ids.clone(), text: row.text.clone() }
                }
                other => other.clone(),
            };
            store.outbox_mark(row.id, &mark).await.unwrap();
        }
        let others: Vec<&String> = keys.iter().filter(|k| **k != key).collect();
        let others_before = outbox_rows(&store, &others.iter().map(|k| k.to_string()).collect::<Vec<_>>()).await;
        let at = butler::store::now_ms();

        let d = decision(ApprovalStatus::Approved, Some("once"), "telegram:7");
        assert!(store.approval_decide(id, &d).await.unwrap().is_some(), "{id} decided");

        let after = store.outbox_get(&key).await.unwrap();
        match (before, after) {
            (Some(before), Some(after)) => {
                let want = OutboxRow {
                    text: d.message.clone(),
                    buttons: vec![],
                    status: OutboxStatus::Pending,
                    platform_ids: strings(kept),
                    attempts: 0,
                    next_attempt_ms: 0,
                    last_error: None,
                    updated_ms: after.updated_ms,
                    ..before
                };
                assert_eq!(after, want, "{id}: revised in place");
                assert!(after.updated_ms >= at, "{id}: updated now");
            }
            (None, after) => assert_eq!(after, None, "{id}: no message is created"),
            (Some(_), None) => panic!("{id}: the message disappeared"),
        }
        let others_after = outbox_rows(&store, &others.iter().map(|k| k.to_string()).collect::<Vec<_>>()).await;
        assert_eq!(others_after, others_before, "{id}: other rows are left alone");
    }
    assert_eq!(ids(&store.approvals_pending("s1").await.unwrap()), ["a10"]);
    let due = store.outbox_due(&strings(&["telegram"]), T, 10).await.unwrap();
    let due: Vec<&str> = due.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(due, ["approval:a1", "approval:a2", "approval:a3", "approval:a10", "reply:e1"], "revised rows are due");
}

pub async fn decide_refuses_unknown_and_decided(store: Arc<dyn Store>) {
    use ApprovalStatus::{Approved, Cancelled, Denied, Expired, Pending};
    open_sessions(&store, &["s1"]).await;
    let rows = [
        approval("a1", "s1", "shell", T, T + HOUR),
        approval("a2", "s1", "shell", T, T + HOUR),
        given("gone", "s1", "shell", Expired, None, (T, T + 1)),
    ];
    park(&store, "e1", &rows).await;
    let first = decision(Approved, Some("once"), "telegram:7");
    assert!(store.approval_decide("a1", &first).await.unwrap().is_some());
    // The revised message is delivered, then later decisions must not touch it again.
    let message = store.outbox_get(&message_key("a1")).await.unwrap().unwrap();
    store
        .outbox_mark(message.id, &OutboxMark::Sent { platform_ids: strings(&["tg-1"]), text: message.text.clone() })
        .await
        .unwrap();

    // (approval id, decision): none of them wins.
    let cases = [
        ("a1", decision(Denied, None, "telegram:8")),
        ("a1", decision(Approved, Some("session"), "telegram:7")),
        ("gone", decision(Approved, Some("once"), "telegram:7")),
        ("nope", decision(Approved, Some("once"), "telegram:7")),
        ("A1", decision(Cancelled, None, "system")),
        ("", decision(Expired, None, "system")),
    ];
    let keys: Vec<String> = ["a1", "a2", "gone"].iter().map(|id| message_key(id)).collect();
    let approvals_before = [store.approval_get("a1").await.unwrap(), store.approval_get("gone").await.unwrap()];
    let outbox_before = outbox_rows(&store, &keys).await;
    for (id, d) in &cases {
        assert_eq!(store.approval_decide(id, d).await.unwrap(), None, "{id:?} {:?}", d.status);
    }
    // Deciding back to pending is refused.
    match store.approval_decide("a2", &decision(Pending, None, "telegram:7")).await {
        Err(StoreError::Conflict(_)) => {}
        other => panic!("a decision to pending must be refused, got {other:?}"),
    }
    assert_eq!([store.approval_get("a1").await.unwrap(), store.approval_get("gone").await.unwrap()], approvals_before);
    assert_eq!(outbox_rows(&store, &keys).await, outbox_before, "no message changed");
    assert_eq!(ids(&store.approvals_pending("s1").await.unwrap()), ["a2"]);
}

pub async fn due_order_and_edge(store: Arc<dyn Store>) {
    use ApprovalStatus::{Denied, Expired, Pending};
    open_sessions(&store, &["s1", "s2"]).await;
    // (id, session, status, created, expires)
    let rows = [
        ("late", "s1", Pending, T, T + 30),
        ("edge", "s2", Pending, T + 5, T + 20),
        ("tie_new", "s1", Pending, T + 2, T + 10),
        ("tie_old", "s2", Pending, T + 1, T + 10),
        ("first", "s1", Pending, T + 9, T + 5),
        ("denied", "s1", Denied, T, T + 1),
        ("expired", "s2", Expired, T, T + 1),
        ("future", "s1", Pending, T, T + 21),
    ];
    let rows: Vec<ApprovalRow> = rows
        .iter()
        .map(|(id, s, status, created, expires)| given(id, s, "shell", *status, None, (*created, *expires)))
        .collect();
    park(&store, "e1", &rows).await;

    // (now, limit, expected ids: earliest expiry first, then oldest)
    let cases: [(i64, usize, &[&str]); 8] = [
        (T, 10, &[]),
        (T + 4, 10, &[]),
        (T + 5, 10, &["first"]),
        (T + 10, 10, &["first", "tie_old", "tie_new"]),
        (T + 20, 10, &["first", "tie_old", "tie_new", "edge"]),
        (T + 20, 2, &["first", "tie_old"]),
        (T + 30, 10, &["first", "tie_old", "tie_new", "edge", "future", "late"]),
        (T + 30, 0, &[]),
    ];
    for (now, limit, want) in cases {
        let got = store.approvals_due(now, limit).await.unwrap();
        assert_eq!(ids(&got), want, "now T+{}, limit {limit}", now - T);
    }
    assert_eq!(store.approvals_due(T + 5, 1).await.unwrap(), [rows[4].clone()], "rows round-trip");

    // Once expired (decided), a row is no longer due.
    let expire = decision(Expired, None, "system");
    store.approval_decide("first", &expire).await.unwrap().expect("expired");
    assert_eq!(ids(&store.approvals_due(T + 10, 10).await.unwrap()), ["tie_old", "tie_new"]);
}

pub async fn pending_per_session(store: Arc<dyn Store>) {
    use ApprovalStatus::{Cancelled, Pending};
    open_sessions(&store, &["s1", "s2", "s3"]).await;
    // (id, session, status, created), inserted in this order.
    let rows = [
        ("b", "s1", Pending, T + 2),
        ("a", "s1", Pending, T + 1),
        ("c", "s1", Pending, T + 3),
        ("x", "s1", Cancelled, T),
        ("f", "s2", Pending, T + 5),
        ("e", "s2", Pending, T + 5),
        ("d", "s2", Pending, T + 4),
    ];
    let rows: Vec<ApprovalRow> = rows
        .iter()
        .map(|(id, s, status, created)| given(id, s, "shell", *status, None, (*created, T + HOUR)))
        .collect();
    park(&store, "e1", &rows).await;
    store.approval_decide("c", &decision(ApprovalStatus::Denied, None, "telegram:7")).await.unwrap().expect("c");

    // (session, expected ids: oldest first, equal times by id)
    let cases: [(&str, &[&str]); 4] = [("s1", &["a", "b"]), ("s2", &["d", "e", "f"]), ("s3", &[]), ("nope", &[])];
    for (session_id, want) in cases {
        assert_eq!(ids(&store.approvals_pending(session_id).await.unwrap()), want, "{session_id}");
    }
    assert_eq!(store.approvals_pending("s1").await.unwrap()[0], rows[1], "rows round-trip");
}

pub async fn granted_only_for_session_scope(store: Arc<dyn Store>) {
    use ApprovalStatus::{Approved, Cancelled, Denied, Expired, Pending};
    open_sessions(&store, &["s1", "s2", "s3"]).await;
    // (id, session, tool, status, scope)
    let rows = [
        ("g1", "s1", "write_file", Approved, Some("session")),
        ("g2", "s1", "shell", Approved, Some("once")),
        ("g3", "s1", "email", Denied, Some("session")),
        ("g4", "s1", "delete", Pending, None),
        ("g5", "s2", "shell", Approved, Some("session")),
        ("g6", "s1", "fetch", Expired, Some("session")),
        ("g7", "s1", "fetch", Cancelled, Some("session")),
    ];
    let rows: Vec<ApprovalRow> =
        rows.iter().map(|(id, s, tool, status, scope)| given(id, s, tool, *status, *scope, (T, T + HOUR))).collect();
    park(&store, "e1", &rows).await;

    // (session, tool, granted)
    let cases = [
        ("s1", "write_file", true),
        ("s1", "shell", false),
        ("s2", "shell", true),
        ("s2", "write_file", false),
        ("s3", "write_file", false),
        ("s1", "email", false),
        ("s1", "delete", false),
        ("s1", "fetch", false),
        ("s1", "Write_File", false),
        ("s1", "write", false),
    ];
    for (session_id, tool, want) in cases {
        assert_eq!(store.approval_granted(session_id, tool).await.unwrap(), want, "{session_id} {tool}");
    }

    // Deciding "always in this session" grants; "once" does not.
    store.approval_decide("g4", &decision(Approved, Some("session"), "telegram:7")).await.unwrap().expect("g4");
    assert!(store.approval_granted("s1", "delete").await.unwrap());
    assert!(!store.approval_granted("s2", "delete").await.unwrap());
    park(&store, "e2", &[approval("g8", "s3", "shell", T, T + HOUR)]).await;
    store.approval_decide("g8", &decision(Approved, Some("once"), "telegram:7")).await.unwrap().expect("g8");
    assert!(!store.approval_granted("s3", "shell").await.unwrap());
}
