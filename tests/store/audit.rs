//! Audit contract: decisions and permission audit rows are stored as given and listed most
//! recent first (ties in reverse insertion order); decisions are counted per decision since a
//! time, sorted by decision.

use crate::fixtures::{audit, decision};
use butler::store::Store;
use std::sync::Arc;

pub async fn recent_and_since(store: Arc<dyn Store>) {
    assert!(store.decisions_recent(10).await.unwrap().is_empty());
    assert!(store.decisions_since(0).await.unwrap().is_empty());
    let rows = [
        decision(1_000, "e1", "drop"),
        decision(2_000, "e2", "refused"),
        decision(2_000, "e3", "pairing"),
        decision(3_000, "e4", "drop"),
        decision(3_000, "e5", "notify"),
        decision(3_000, "e6", "not_addressed"),
        decision(500, "e0", "drop"),
    ];
    for row in &rows {
        store.decision_add(row).await.unwrap();
    }

    // (limit, expected event ids)
    let cases: [(usize, &[&str]); 3] =
        [(10, &["e6", "e5", "e4", "e3", "e2", "e1", "e0"]), (2, &["e6", "e5"]), (0, &[])];
    for (limit, want) in cases {
        let got = store.decisions_recent(limit).await.unwrap();
        assert_eq!(got.iter().map(|d| d.event_id.as_str()).collect::<Vec<_>>(), want, "limit {limit}");
    }
    assert_eq!(store.decisions_recent(1).await.unwrap(), [rows[5].clone()], "rows round-trip");

    // (since_ms, expected counts, sorted by decision in byte order)
    let cases: [(i64, &[(&str, i64)]); 4] = [
        (0, &[("drop", 3), ("not_addressed", 1), ("notify", 1), ("pairing", 1), ("refused", 1)]),
        (1_000, &[("drop", 2), ("not_addressed", 1), ("notify", 1), ("pairing", 1), ("refused", 1)]),
        (2_001, &[("drop", 1), ("not_addressed", 1), ("notify", 1)]),
        (3_001, &[]),
    ];
    for (since, want) in cases {
        let want: Vec<(String, i64)> = want.iter().map(|(d, n)| (d.to_string(), *n)).collect();
        assert_eq!(store.decisions_since(since).await.unwrap(), want, "since {since}");
    }
}

pub async fn audit_recent_and_round_trip(store: Arc<dyn Store>) {
    assert!(store.audit_recent(10).await.unwrap().is_empty());
    let rows = [
        audit(1_000, "shell", "asked"),
        audit(2_000, "shell", "approved"),
        audit(2_000, "write_file", "denied"),
        audit(3_000, "email", "blocked"),
        audit(500, "now", "allowed"),
        audit(2_000, "shell", "approved_session"),
    ];
    for row in &rows {
        store.audit_add(row).await.unwrap();
    }
    // Decisions and audit rows are separate records.
    assert!(store.decisions_recent(10).await.unwrap().is_empty());

    // (limit, expected indexes into `rows`)
    let cases: [(usize, &[usize]); 4] = [(10, &[3, 5, 2, 1, 0, 4]), (6, &[3, 5, 2, 1, 0, 4]), (2, &[3, 5]), (0, &[])];
    for (limit, want) in cases {
        let want: Vec<_> = want.iter().map(|&i| rows[i].clone()).collect();
        assert_eq!(store.audit_recent(limit).await.unwrap(), want, "limit {limit}");
    }
}
