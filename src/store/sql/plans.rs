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

/// A migrated store in a database of its own (the directory goes with the first value).
async fn migrated(name: &str) -> (tempfile::TempDir, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join(name).display());
    let store = SqliteStore::connect(&url, 1).await.unwrap();
    store.migrate().await.unwrap();
    (dir, store)
}

/// (statement, SQL, the (table, index) searches its plan must show)
type Case = (&'static str, &'static str, &'static [(&'static str, &'static str)]);

#[tokio::test]
async fn hot_statements_search_indexes_and_never_scan_a_table() {
    let (_dir, store) = migrated("plans.db").await;
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

/// Counting the inbox by status (`butler_inbox_pending` on every `/metrics` scrape, dead letters
/// for `doctor` and the status command) reads only that status's partial index: the inbox keeps
/// every event, so reading it through cost more with every message ever received.
#[tokio::test]
async fn inbox_counts_read_only_their_status_index() {
    use crate::store::InboxStatus;
    let (_dir, store) = migrated("counts.db").await;
    let table = [
        (InboxStatus::Pending, "inbox_claim"),
        (InboxStatus::Processing, "inbox_processing"),
        (InboxStatus::Failed, "inbox_failed"),
    ];
    for (status, index) in table {
        let steps = plan(&store, super::super::dead_letter::inbox_count_sql(status)).await;
        let reads_index = |s: &String| s.starts_with("SCAN inbox USING ") && s.ends_with(&format!("INDEX {index}"));
        assert!(steps.len() == 1 && reads_index(&steps[0]), "{status:?} is not counted over {index}: {steps:?}");
    }
}

/// sqlx's writer checkpoints its own commits at the WAL size a turn's CPU was measured with
/// (left at SQLite's default it would checkpoint four times as often); SQLite's writer's
/// connection checkpoints none of its own (its thread does, at the same size: `lite.rs`).
#[tokio::test]
async fn every_writer_checkpoints_at_the_measured_wal_size() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("wal.db").display());
    let store = SqliteStore::connect(&url, 1).await.unwrap();
    let want = i64::from(super::super::lite::WAL_CHECKPOINT_PAGES);
    let sqlx_writer: i64 = sqlx::query_scalar("PRAGMA wal_autocheckpoint").fetch_one(&store.writer).await.unwrap();
    let lite: i64 = store
        .lite
        .run(|c| c.pragma_query_value(None, "wal_autocheckpoint", |r| r.get(0)).map_err(super::super::error::lite_err))
        .await
        .unwrap();
    assert_eq!((sqlx_writer, lite), (want, 0));
    store.close_pools().await;
}

/// The two reads of every message (the question waiting for its sender, the recall search)
/// answer the same through the writer's connection on the caller's thread and through sqlx's
/// readers, where a busy writer leaves them.
#[tokio::test]
async fn the_reads_of_every_message_answer_the_same_on_either_connection() {
    use crate::store::{ApprovalStore, MemoryScope, MemoryStore, Waiting};
    let (_dir, store) = migrated("reads.db").await;
    let owner = MemoryScope { user_id: "u1".into(), scope: String::new() };
    for text in ["the boat is moored at the north pier", "dentist on friday", "the boat needs paint"] {
        store.memory_add(&owner, text, None).await.unwrap();
    }
    sqlx::query(
        "PRAGMA foreign_keys = OFF; INSERT INTO approvals (id, session_id, session_key, conversation, event_id, \
         tool_call_id, tool, args_hash, summary, requester, requester_user, approvers, status, created_ms, \
         expires_ms, kind, options) VALUES ('q1', 's1', 'dm:u1', 'web:c1', 'e1', 'call1', 'ask_user', '', \
         'Which one?', 'web:u1', 'u1', '[\"web:u1\"]', 'pending', 10, 1000, 'question', '[\"A\",\"B\"]'); \
         PRAGMA foreign_keys = ON",
    )
    .execute(&store.writer)
    .await
    .unwrap();
    let reads = || async {
        let found = store.memory_search(&owner, "where is the boat", 5).await.unwrap();
        let question = store.approval_waiting("web:c1", Waiting::QuestionFor("web:u1"), 500).await.unwrap();
        let texts: Vec<String> = found.into_iter().map(|m| m.text).collect();
        (texts, question.map(|q| (q.id, q.options)))
    };
    let here = reads().await;
    let release = store.lite.hold_elsewhere();
    let pooled = reads().await;
    drop(release);
    assert_eq!(here.0.len(), 2, "{here:?}");
    assert_eq!(here.1, Some(("q1".to_string(), vec!["A".to_string(), "B".to_string()])));
    assert_eq!(here, pooled);
    store.close_pools().await;
}

/// The writes SQLite's writer runs on every turn fill no temporary table: the `_WRITE` forms
/// (no `RETURNING`, which costs one on every execution) and the reads that fetch their rows
/// after them.
#[tokio::test]
async fn the_writers_hot_writes_fill_no_temporary_table() {
    use super::super::hot;
    let (_dir, store) = migrated("temp.db").await;
    let table = [
        ("web line", hot::SQL_WEB_INSERT_WRITE),
        ("web line by key", hot::SQL_WEB_BY_KEY),
        ("inbox settle", hot::SQL_INBOX_SETTLE_WRITE),
        ("inbox conversation", hot::SQL_INBOX_CONVERSATION),
        ("session reserve", hot::SQL_SESSION_RESERVE_WRITE),
        ("session last seq", hot::SQL_SESSION_LAST_SEQ),
        ("outbox upsert", hot::SQL_OUTBOX_UPSERT_WRITE),
        ("outbox by key", hot::SQL_OUTBOX_BY_KEY),
        ("outbox sent", hot::SQL_OUTBOX_SENT_WRITE),
        ("outbox failed", hot::SQL_OUTBOX_FAILED_WRITE),
        ("outbox key", hot::SQL_OUTBOX_KEY_OF),
    ];
    for (name, sql) in table {
        let mut text = sql.to_string();
        for n in (1..=12).rev() {
            text = text.replace(&format!("${n}"), "NULL");
        }
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!("EXPLAIN {text}"))).fetch_all(&store.reader).await.unwrap();
        let ops: Vec<String> = rows.iter().map(|r| sqlx::Row::get::<String, _>(r, 1)).collect();
        assert!(ops.iter().any(|o| o == "Halt"), "{name}: not a program: {ops:?}");
        assert!(!ops.iter().any(|o| o == "OpenEphemeral"), "{name} fills a temporary table: {ops:?}");
    }
    store.close_pools().await;
}

/// A turn's messages reach the full-text index (`messages_fts`) as one new segment of it: FTS5
/// writes what it holds at the start of every later write statement of a transaction, so the
/// commit inserts them last and in one statement (one statement per message, before the reply,
/// wrote a segment per message, each to be merged again later).
#[tokio::test]
async fn a_turns_messages_make_one_full_text_segment() {
    use crate::store::{InboxStatus, NewMessage, NewOutbox, NewSession, SessionStore, TurnCommit, TurnStore};
    let (_dir, store) = migrated("fts.db").await;
    let new = NewSession {
        id: "s1".into(),
        key: "dm:u1".into(),
        user_id: "u1".into(),
        conversation: "web:c1".into(),
        system_prompt: String::new(),
    };
    store.session_open(&new).await.unwrap();
    // FTS5 keeps its structure (id 10) and averages (id 1) among the rows of `_data`; each
    // segment adds its pages after them.
    let pages = || async {
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM messages_fts_data WHERE id > 10")
            .fetch_one(&store.reader)
            .await
            .unwrap();
        n
    };
    let before = pages().await;
    for (turn, messages) in [1usize, 2, 5].into_iter().enumerate() {
        let commit = TurnCommit {
            inbox_id: format!("e{turn}"),
            inbox_status: InboxStatus::Done,
            session_id: Some("s1".into()),
            messages: (0..messages)
                .map(|n| match n % 2 {
                    0 => NewMessage::user(format!("question {n} of turn {turn}"), None, None),
                    _ => NewMessage::assistant(format!("answer {n} of turn {turn}"), vec![]),
                })
                .collect(),
            reply: Some(NewOutbox {
                key: format!("reply:e{turn}"),
                private_to: None,
                conversation: "web:c1".into(),
                text: "answer".into(),
                buttons: vec![],
                reply_to: None,
                file: None,
                title: None,
            }),
            usage: None,
            approvals: vec![],
            notices: vec![],
            fence: None,
        };
        store.finish_event(&commit).await.unwrap();
        let added = pages().await - before;
        assert_eq!(added, turn as i64 + 1, "turn {turn} ({messages} messages) wrote {added} segments in all");
    }
    let found: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'answer'")
        .fetch_one(&store.reader)
        .await
        .unwrap();
    assert_eq!(found, 3, "every assistant message is searchable");
    store.close_pools().await;
}
