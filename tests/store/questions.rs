//! Question contract (`ask_user`, approvals of kind `question`): a question's kind, options and
//! answer round-trip (a tool approval keeps kind `tool`, no options, and its detail: what the call
//! would do, multi-line text); deciding a question
//! stores its answer with the same compare-and-swap (one winner, the winner's answer); and
//! `approval_waiting` finds the oldest pending, unexpired question asked of one identity in one
//! conversation - never a tool approval, a decided or expired question, someone else's or
//! another conversation's; and the request delivered as a platform message (a reaction or a
//! numbered reply to it), only while pending, only in its conversation.

use crate::approvals::{open_sessions, park};
use crate::fixtures::{approval, strings};
use butler::store::{
    ApprovalDecision, ApprovalKind, ApprovalRow, ApprovalStatus, Detail, DetailKind, OutboxMark, Store, Waiting,
};
use std::sync::Arc;

const T: i64 = 1_700_000_000_000;
const HOUR: i64 = 3_600_000;

/// A pending question `id` in session `s1`, asked of `requester` in `conversation`.
fn question(id: &str, conversation: &str, requester: &str, options: &[&str], times: (i64, i64)) -> ApprovalRow {
    ApprovalRow {
        conversation: conversation.to_string(),
        summary: format!("question {id}?"),
        requester: requester.to_string(),
        approvers: strings(&[requester]),
        kind: ApprovalKind::Question,
        options: strings(options),
        ..approval(id, "s1", "ask_user", times.0, times.1)
    }
}

fn answer(by: &str, text: &str) -> ApprovalDecision {
    ApprovalDecision {
        status: ApprovalStatus::Approved,
        scope: None,
        decided_by: by.to_string(),
        message: format!("💬 {by}: {text}"),
        answer: Some(text.to_string()),
    }
}

pub async fn round_trip_and_answer_once(store: Arc<dyn Store>) {
    open_sessions(&store, &["s1"]).await;
    let q = question("q1", "telegram:42", "telegram:42", &["Tea", "Coffee"], (T, T + HOUR));
    let open = question("q2", "telegram:42", "telegram:42", &[], (T, T + HOUR));
    let diff = "--- a/todo.md\n+++ b/todo.md\n@@ -1 +1,2 @@\n-tea\n+tea ☕\n+token=***\n";
    let tool =
        ApprovalRow { detail: Some(Detail::new(DetailKind::Diff, diff)), ..approval("a1", "s1", "shell", T, T + HOUR) };
    park(&store, "e1", &[q.clone(), open.clone(), tool.clone()]).await;
    for row in [&q, &open, &tool] {
        assert_eq!(store.approval_get(&row.id).await.unwrap().as_ref(), Some(row), "{} round-trips", row.id);
    }
    assert_eq!(store.approval_get("a1").await.unwrap().unwrap().kind, ApprovalKind::Tool);
    assert_eq!(store.approval_get("q1").await.unwrap().unwrap().detail, None, "a question has no detail");

    // Concurrent answers: one wins, and its answer is the one stored.
    let mut tasks = Vec::new();
    for (i, text) in ["Tea", "Coffee", "water", "Tea"].into_iter().enumerate() {
        let store = store.clone();
        let d = answer(&format!("telegram:{i}"), text);
        tasks.push(tokio::spawn(async move {
            let won = store.approval_decide("q1", &d).await.unwrap();
            (d, won)
        }));
    }
    let mut winners = Vec::new();
    for t in tasks {
        if let (d, Some(row)) = t.await.unwrap() {
            winners.push((d, row));
        }
    }
    assert_eq!(winners.len(), 1, "exactly one answer wins");
    let (d, row) = &winners[0];
    assert_eq!((row.status, row.answer.as_ref()), (ApprovalStatus::Approved, d.answer.as_ref()));
    assert_eq!(store.approval_get("q1").await.unwrap().as_ref(), Some(row), "the winner's answer is stored");
    let unanswered = ApprovalRow {
        status: ApprovalStatus::Pending,
        answer: None,
        decided_by: None,
        decided_ms: None,
        ..row.clone()
    };
    assert_eq!(unanswered, q, "only the decision fields and the answer change");
    assert_eq!(store.outbox_get("approval:q1").await.unwrap().unwrap().text, d.message);

    // An expiry stores no answer.
    let expired = ApprovalDecision { status: ApprovalStatus::Expired, answer: None, ..answer("nobody", "") };
    let row = store.approval_decide("q2", &expired).await.unwrap().unwrap();
    assert_eq!((row.status, row.answer), (ApprovalStatus::Expired, None));
}

pub async fn pending_question_of_one_person_here(store: Arc<dyn Store>) {
    open_sessions(&store, &["s1"]).await;
    let (alice, bob, here, there) = ("telegram:42", "telegram:7", "telegram:-100", "telegram:-200");
    let rows = vec![
        question("q-old", here, alice, &["Yes", "No"], (T, T + HOUR)),
        question("q-new", here, alice, &[], (T + 10, T + 2 * HOUR)),
        question("q-bob", here, bob, &[], (T - 10, T + HOUR)),
        question("q-there", there, alice, &[], (T - 10, T + HOUR)),
        ApprovalRow {
            conversation: here.into(),
            requester: alice.into(),
            ..approval("a-tool", "s1", "shell", T - 20, T + HOUR)
        },
        ApprovalRow {
            status: ApprovalStatus::Approved,
            answer: Some("Yes".into()),
            decided_by: Some(alice.into()),
            decided_ms: Some(T - 5),
            ..question("q-done", here, alice, &["Yes"], (T - 30, T + HOUR))
        },
    ];
    park(&store, "e1", &rows).await;
    // (conversation, identity, now) -> the question their message answers
    let cases = [
        (here, alice, T + 1, Some("q-old")),
        (here, alice, T + HOUR - 1, Some("q-old")),
        (here, alice, T + HOUR, Some("q-new")), // q-old expired (expiry is not "pending" any more)
        (here, alice, T + 2 * HOUR, None),
        (here, bob, T + 1, Some("q-bob")),
        (there, alice, T + 1, Some("q-there")),
        (there, bob, T + 1, None),
        ("web:c1", alice, T + 1, None),
    ];
    for (conversation, who, now, want) in cases {
        let got = store.approval_waiting(conversation, Waiting::QuestionFor(who), now).await.unwrap();
        assert_eq!(got.as_ref().map(|r| r.id.as_str()), want, "{conversation} {who} at {}", now - T);
    }
    let found = store.approval_waiting(here, Waiting::QuestionFor(alice), T + 1).await.unwrap().unwrap();
    assert_eq!((found.kind, found.options.clone()), (ApprovalKind::Question, strings(&["Yes", "No"])));
    // Once answered it is no longer pending.
    store.approval_decide("q-old", &answer(alice, "No")).await.unwrap().unwrap();
    let next = store.approval_waiting(here, Waiting::QuestionFor(alice), T + 1).await.unwrap();
    assert_eq!(next.map(|r| r.id), Some("q-new".to_string()));
}

pub async fn request_delivered_as_a_message(store: Arc<dyn Store>) {
    open_sessions(&store, &["s1"]).await;
    let here = "telegram:42";
    let tool = ApprovalRow { conversation: here.into(), ..approval("a-tool", "s1", "shell", T, T + HOUR) };
    let quiz = question("q-1", here, "telegram:42", &["Tea", "Coffee"], (T + 1, T + HOUR));
    park(&store, "e1", &[tool, quiz]).await;
    // Delivered: a-tool as two chunks, q-1 as one; ids with LIKE's wildcards stay literal.
    for (key, ids) in [("approval:a-tool", vec!["100:+1", "wamid.A_b%"]), ("approval:q-1", vec!["200:+1"])] {
        let row = store.outbox_get(key).await.unwrap().unwrap();
        let ids: Vec<String> = ids.into_iter().map(String::from).collect();
        store.outbox_mark(row.id, &OutboxMark::Sent { platform_ids: ids, text: row.text.clone() }).await.unwrap();
    }
    // (conversation, platform id, now) -> the request delivered as it
    let cases = [
        (here, "100:+1", T + 2, Some("a-tool")),
        (here, "wamid.A_b%", T + 2, Some("a-tool")),
        (here, "wamid.AXbY", T + 2, None),
        (here, "00:+", T + 2, None),
        (here, "200:+1", T + 2, Some("q-1")),
        ("telegram:43", "100:+1", T + 2, None),
        (here, "100:+1", T + HOUR, None),
    ];
    for (conversation, id, now, want) in cases {
        let got = store.approval_waiting(conversation, Waiting::Message(id), now).await.unwrap();
        assert_eq!(got.as_ref().map(|r| r.id.as_str()), want, "{conversation} {id} at {}", now - T);
    }
    store.approval_decide("a-tool", &answer("telegram:42", "yes")).await.unwrap().unwrap();
    let decided = store.approval_waiting(here, Waiting::Message("100:+1"), T + 2).await.unwrap();
    assert_eq!(decided, None, "a decided request answers nothing");
}
