//! Delegation contract (`delegate`): a row round-trips; a second start for the same parent
//! call returns the first row unchanged (a re-run never makes a second child); updates move
//! only open rows (one winner when two end it at once, an ended row never reopens) and add up
//! costs; rows are found by the parent's call or the child's session and listed by tree, user,
//! openness, kind and chain (originating message), newest first; a background result is handed
//! over once.

use butler::store::{DelegationFilter, DelegationRow, DelegationStatus, DelegationUpdate, Store};
use std::sync::Arc;

fn row(id: &str, parent: &str, call: &str, background: bool, created_ms: i64) -> DelegationRow {
    DelegationRow {
        id: id.into(),
        parent_session_id: parent.into(),
        parent_call_id: call.into(),
        child_session_id: format!("child-{id}"),
        root_session_id: "root".into(),
        user_id: "u1".into(),
        requester: "web:alice".into(),
        conversation: "web:c1".into(),
        group_chat: false,
        depth: 1,
        archetype: Some("researcher".into()),
        tier: "worker".into(),
        model: "small".into(),
        tools: vec!["now".into(), "recall".into()],
        task: format!("task {id}"),
        background,
        status: DelegationStatus::Running,
        result: None,
        reason: None,
        cost_usd: 0.0,
        input_tokens: 0,
        output_tokens: 0,
        created_ms,
        finished_ms: None,
        delivered_ms: None,
        origin: "web:c1:m1".into(),
        worker: "4242-w1".into(),
    }
}

fn update(status: DelegationStatus, result: Option<&str>, cost: f64, tokens: i64) -> DelegationUpdate {
    DelegationUpdate {
        status,
        result: result.map(str::to_string),
        reason: None,
        cost_usd: cost,
        input_tokens: tokens,
        output_tokens: tokens / 10,
    }
}

pub async fn start_update_find_list_deliver(store: Arc<dyn Store>) {
    let a = row("t-a", "root", "call-1", false, 1_000);
    assert_eq!(store.delegation_start(&a).await.unwrap(), a, "round trip");
    // A re-run of the same call gets the first row, not a second child.
    let again = DelegationRow { id: "t-other".into(), task: "other".into(), ..a.clone() };
    assert_eq!(store.delegation_start(&again).await.unwrap(), a);
    assert_eq!(store.delegation_get("t-other").await.unwrap(), None);
    assert_eq!(store.delegation_find("root", Some("call-1")).await.unwrap(), Some(a.clone()));
    assert_eq!(store.delegation_find("child-t-a", None).await.unwrap(), Some(a.clone()));
    assert_eq!(store.delegation_find("root", Some("call-9")).await.unwrap(), None);

    // Costs add up while open; the end records the answer; an ended row never changes again.
    let r = store.delegation_update("t-a", &update(DelegationStatus::Running, None, 0.25, 100)).await.unwrap();
    assert_eq!(r.map(|r| (r.cost_usd, r.input_tokens, r.finished_ms.is_none())), Some((0.25, 100, true)));
    let done = store.delegation_update("t-a", &update(DelegationStatus::Done, Some("42"), 0.5, 50)).await.unwrap();
    let done = done.expect("an open row ends");
    assert_eq!(
        (done.status, done.result.as_deref(), done.cost_usd, done.input_tokens),
        (DelegationStatus::Done, Some("42"), 0.75, 150)
    );
    assert!(done.finished_ms.is_some());
    let late = store.delegation_update("t-a", &update(DelegationStatus::Interrupted, Some("x"), 1.0, 1)).await.unwrap();
    assert_eq!(late, None, "an ended row never reopens");
    assert_eq!(store.delegation_get("t-a").await.unwrap(), Some(done.clone()));

    // Two enders at once: exactly one wins.
    store.delegation_start(&row("t-b", "root", "call-2", true, 2_000)).await.unwrap();
    let (cancel, cut) =
        (update(DelegationStatus::Cancelled, None, 0.0, 0), update(DelegationStatus::Interrupted, None, 0.0, 0));
    let (x, y) = tokio::join!(store.delegation_update("t-b", &cancel), store.delegation_update("t-b", &cut));
    assert_eq!([x.unwrap().is_some(), y.unwrap().is_some()].iter().filter(|w| **w).count(), 1);

    store
        .delegation_start(&DelegationRow {
            user_id: "u2".into(),
            root_session_id: "root2".into(),
            origin: "web:c2:m1".into(),
            ..row("t-c", "root2", "call-3", true, 3_000)
        })
        .await
        .unwrap();
    let ids = |rows: Vec<DelegationRow>| rows.into_iter().map(|r| r.id).collect::<Vec<_>>();
    let cases = [
        (DelegationFilter::default(), vec!["t-c", "t-b", "t-a"]),
        (DelegationFilter { root_session_id: Some("root".into()), ..Default::default() }, vec!["t-b", "t-a"]),
        (DelegationFilter { user_id: Some("u2".into()), ..Default::default() }, vec!["t-c"]),
        (DelegationFilter { open_only: true, ..Default::default() }, vec!["t-c"]),
        (DelegationFilter { background_only: true, user_id: Some("u1".into()), ..Default::default() }, vec!["t-b"]),
        (DelegationFilter { limit: 1, ..Default::default() }, vec!["t-c"]),
        (DelegationFilter { origin: Some("web:c1:m1".into()), ..Default::default() }, vec!["t-b", "t-a"]),
        (DelegationFilter { origin: Some("web:c2:m1".into()), ..Default::default() }, vec!["t-c"]),
    ];
    for (filter, want) in cases {
        let limit = if filter.limit == 0 { 10 } else { filter.limit };
        let got = ids(store.delegations_list(&DelegationFilter { limit, ..filter.clone() }).await.unwrap());
        assert_eq!(got, want, "{filter:?}");
    }

    // A background result is handed over once, whoever tries.
    let (p, q) = tokio::join!(store.delegation_delivered("t-c"), store.delegation_delivered("t-c"));
    assert_eq!([p.unwrap(), q.unwrap()].iter().filter(|w| **w).count(), 1);
    assert!(store.delegation_get("t-c").await.unwrap().unwrap().delivered_ms.is_some());
}
