//! The plans SQLite picks for the statements that run on every turn or every poll: each must
//! search an index, never read a table through (its cost would grow with the table).

use super::SqliteStore;
use crate::store::Store;

/// `EXPLAIN QUERY PLAN` of `sql` (its `$n` placeholders read as NULL), one line per step.
async fn plan(store: &SqliteStore, sql: &str) -> Vec<String> {
    let mut text = sql.to_string();
    for n in (1..=9).rev() {
        text = text.replace(&format!("${n}"), "NULL");
    }
    let rows: Vec<(i64, i64, i64, String)> = sqlx::query_as(sqlx::AssertSqlSafe(format!("EXPLAIN QUERY PLAN {text}")))
        .fetch_all(&store.reader)
        .await
        .unwrap();
    rows.into_iter().map(|r| r.3).collect()
}

/// (statement, SQL, the (table, index) searches its plan must show)
type Case = (&'static str, &'static str, &'static [(&'static str, &'static str)]);

#[tokio::test]
async fn hot_statements_search_indexes_and_never_scan_a_table() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("plans.db").display());
    let store = SqliteStore::connect(&url, 1).await.unwrap();
    store.migrate().await.unwrap();
    let table: &[Case] = &[
        // The claim: the earlier open event of the same conversation is looked up in that
        // conversation's open events (it read every earlier row of the inbox, once per candidate).
        ("inbox claim", SqliteStore::SQL_INBOX_CLAIM, &[("inbox", "inbox_claim"), ("e", "inbox_open_by_conversation")]),
        ("outbox due", SqliteStore::SQL_OUTBOX_DUE, &[("outbox", "outbox_due")]),
        ("inbox recover", SqliteStore::SQL_INBOX_RECOVER, &[("inbox", "inbox_processing")]),
    ];
    for (name, sql, want) in table {
        let steps = plan(&store, sql).await;
        for (table, index) in *want {
            let found = steps
                .iter()
                .any(|s| s.starts_with(&format!("SEARCH {table} ")) && s.contains(&format!("INDEX {index} ")));
            assert!(found, "{name}: {table} is not searched with {index}: {steps:?}");
        }
        for s in &steps {
            let scans_table = s.starts_with("SCAN ") && !s.contains("json_each");
            let walks_rowids = s.contains("INTEGER PRIMARY KEY (rowid<") || s.contains("INTEGER PRIMARY KEY (rowid>");
            assert!(!scans_table && !walks_rowids, "{name}: `{s}` reads the table through: {steps:?}");
        }
    }
}

/// Both connections that write (sqlx's writer and the writer thread's) checkpoint at the same
/// WAL size, the one a turn's CPU was measured with: one left at SQLite's default would
/// checkpoint four times as often on its commits.
#[tokio::test]
async fn every_writer_checkpoints_at_the_measured_wal_size() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("wal.db").display());
    let store = SqliteStore::connect(&url, 1).await.unwrap();
    let want = super::super::lite::WAL_CHECKPOINT_PAGES;
    let sqlx_writer: i64 = sqlx::query_scalar("PRAGMA wal_autocheckpoint").fetch_one(&store.writer).await.unwrap();
    let thread: i64 = store
        .lite
        .run(|c| c.pragma_query_value(None, "wal_autocheckpoint", |r| r.get(0)).map_err(super::super::error::lite_err))
        .await
        .unwrap();
    assert_eq!((sqlx_writer, thread), (want, want));
    store.close_pools().await;
}
