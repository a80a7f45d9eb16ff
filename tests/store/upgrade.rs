//! Upgrades keep everything: for every earlier schema version of each backend, a database is
//! built migration by migration with real rows written at the version that made their tables
//! (a user and their identity, a session and its transcript, an inbox event, replies, usage,
//! memories, the web log, pairing codes and decisions, approvals and the audit, schedules and
//! their runs, summaries, web conversations, delegations, fences), then migrated to this
//! build's schema by the store itself. Every seeded row must read back unchanged, and the
//! store's own reads find the old user, memory and web messages. Migrations are forward-only:
//! the test also checks that no migration file has a down script.
//!
//! The previous release's schema is the last start version (all migrations but the newest).

use crate::support::db::{PgTestDb, SqliteTestDb};
use butler::channel::Identity;
use butler::store::{MemoryScope, TranscriptScope};
use sqlx::migrate::Migrator;
use sqlx::{Column, Row};
use std::path::Path;

/// Rows written right after the migration named `after` (its description), and the tables
/// (with the seeded columns and an order) that must read back the same after the upgrade.
struct Seed {
    after: &'static str,
    sql: &'static [&'static str],
    check: &'static [(&'static str, &'static str)],
}

const SEEDS: &[Seed] = &[
    Seed {
        after: "core",
        sql: &[
            "INSERT INTO users (id, display_name, role, timezone, created_ms) VALUES ('u-old', 'Ada', 'owner', 'Europe/Lisbon', 1000)",
            "INSERT INTO identities (channel, platform_user_id, user_id, created_ms) VALUES ('telegram', '4242', 'u-old', 1000)",
            "INSERT INTO conversations (id, kind, owner, created_ms) VALUES ('telegram:4242', 'direct', 'telegram:4242', 1000)",
            "INSERT INTO sessions (id, key, user_id, conversation, system_prompt, version, last_seq, created_ms, updated_ms) \
             VALUES ('s-old', 'telegram:4242', 'u-old', 'telegram:4242', 'You are Butler.', 2, 2, 1000, 2000)",
            "INSERT INTO messages (session_id, seq, role, content, event_id, created_ms) VALUES \
             ('s-old', 1, 'user', 'my bike is blue', 'telegram:update:1', 1000), \
             ('s-old', 2, 'assistant', 'Noted: a blue bike.', 'telegram:update:1', 1001)",
            "INSERT INTO outbox (key, channel, conversation, text, status, created_ms, updated_ms) \
             VALUES ('telegram:update:1', 'telegram', 'telegram:4242', 'Noted: a blue bike.', 'sent', 1001, 1001)",
            "INSERT INTO usage (user_id, session_id, event_id, model, input_tokens, output_tokens, cost_usd, iterations, created_ms) \
             VALUES ('u-old', 's-old', 'telegram:update:1', 'gpt-4o', 100, 20, 0.5, 1, 1001)",
            "INSERT INTO memories (user_id, text, source, created_ms, updated_ms) \
             VALUES ('u-old', 'Ada rides a blue bicycle to work', 'remember', 1000, 1000)",
            "INSERT INTO web_messages (conversation, key, role, author, text, created_ms, updated_ms) \
             VALUES ('web:c1', 'web:c1:m1', 'user', 'local', 'hello from the old days', 1000, 1000)",
            "INSERT INTO inbox (id, channel, conversation, event, status, attempts, error, created_ms, updated_ms) \
             VALUES ('telegram:update:9', 'telegram', 'telegram:4242', '{}', 'failed', 2, 'boom', 1000, 1000)",
        ],
        check: &[
            ("users", "id, display_name, role, timezone, created_ms"),
            ("identities", "channel, platform_user_id, user_id"),
            ("conversations", "id, kind, owner"),
            ("sessions", "id, key, user_id, conversation, system_prompt, version, last_seq"),
            ("messages", "session_id, seq, role, content, event_id"),
            ("outbox", "key, channel, conversation, text, status"),
            ("usage", "user_id, session_id, model, input_tokens, output_tokens, cost_usd"),
            ("memories", "user_id, text, source"),
            ("web_messages", "conversation, key, role, author, text"),
            ("inbox", "id, channel, conversation, status, attempts, error"),
        ],
    },
    Seed {
        after: "access",
        sql: &[
            "INSERT INTO codes (kind, code, identity, conversation, created_ms, expires_ms) \
             VALUES ('pair', 'K7Q2', 'telegram:777', 'telegram:777', 1000, 9999999999999)",
            "INSERT INTO decisions (at_ms, event_id, actor, conversation, decision, reason) \
             VALUES (1000, 'telegram:update:2', 'telegram:777', 'telegram:777', 'pairing', 'unknown user')",
        ],
        check: &[("codes", "kind, code, identity"), ("decisions", "event_id, actor, decision, reason")],
    },
    Seed {
        after: "approvals",
        sql: &[
            "INSERT INTO approvals (id, session_id, session_key, conversation, event_id, tool_call_id, tool, args_hash, summary, \
             requester, requester_user, approvers, status, created_ms, expires_ms) VALUES ('ap-old', 's-old', 'telegram:4242', \
             'telegram:4242', 'telegram:update:3', 'call-1', 'file_write', 'h1', 'write notes.md', 'telegram:4242', 'u-old', \
             '[\"telegram:4242\"]', 'pending', 1000, 9999999999999)",
            "INSERT INTO audit (at_ms, actor, user_id, session_id, tool, args_hash, outcome, reason) \
             VALUES (1000, 'telegram:4242', 'u-old', 's-old', 'file_write', 'h1', 'asked', 'write tools ask')",
        ],
        check: &[("approvals", "id, tool, summary, status, approvers"), ("audit", "tool, outcome, reason")],
    },
    Seed {
        after: "schedules",
        sql: &[
            "INSERT INTO schedules (scope, name, source, owner, owner_user, cron, tz, prompt, target, mode, missed, grace_ms, \
             next_fire_ms, created_ms, updated_ms) VALUES ('user:u-old', 'morning', 'tool', 'telegram:4242', 'u-old', \
             '0 7 * * *', 'Europe/Lisbon', 'brief me', 'telegram:4242', 'always', 'skip', 600000, 5000, 1000, 1000)",
            "INSERT INTO schedule_runs (schedule_id, fire_at_ms, kind, event_id, outbox_key, status, started_ms) \
             SELECT id, 4000, 'scheduled', 'schedule:1:4000', 'schedule:1:4000', 'done', 4000 FROM schedules WHERE name = 'morning'",
        ],
        check: &[("schedules", "scope, name, cron, tz, prompt, target"), ("schedule_runs", "fire_at_ms, kind, status")],
    },
    Seed {
        after: "context",
        sql: &["INSERT INTO summaries (session_id, up_to_seq, text, created_ms) VALUES ('s-old', 2, 'Ada has a blue bike.', 1500)"],
        check: &[("summaries", "session_id, up_to_seq, text")],
    },
    Seed {
        after: "web conversations",
        sql: &["INSERT INTO web_conversations (conversation, title) VALUES ('web:c1', 'Old times')"],
        check: &[("web_conversations", "conversation, title")],
    },
    Seed {
        after: "delegations",
        sql: &[
            "INSERT INTO delegations (id, parent_session_id, parent_call_id, child_session_id, root_session_id, user_id, \
             requester, conversation, group_chat, depth, tier, model, tools, task, background, status, created_ms) VALUES \
             ('d-old', 's-old', 'call-9', 's-child', 's-old', 'u-old', 'telegram:4242', 'telegram:4242', FALSE, 1, 'worker', \
             'gpt-4o-mini', '[]', 'find the bike shop', TRUE, 'done', 1000)",
        ],
        check: &[("delegations", "id, task, status, depth")],
    },
    Seed {
        after: "replicas",
        sql: &["INSERT INTO session_fences (key, token) VALUES ('telegram:4242', 3)"],
        check: &[("session_fences", "key, token")],
    },
    Seed {
        after: "memory pins",
        sql: &["INSERT INTO memory_pins (memory_id, user_id, created_ms) VALUES (7, 'u-old', 1000)"],
        check: &[("memory_pins", "memory_id, user_id")],
    },
    // A direct conversation written before transcripts were indexed: the upgrade indexes it.
    Seed {
        after: "memory pins",
        sql: &[
            "INSERT INTO sessions (id, key, user_id, conversation, system_prompt, version, last_seq, created_ms, updated_ms, \
             closed_ms) VALUES ('s-dm', 'dm:telegram:4242:4242', 'u-old', 'telegram:4242', 'You are Butler.', 1, 3, 1000, \
             3000, 3000)",
            "INSERT INTO messages (session_id, seq, role, content, created_ms) VALUES \
             ('s-dm', 1, 'user', 'my kayak is yellow', 1000), \
             ('s-dm', 2, 'tool', 'kayak shop listing', 2000), \
             ('s-dm', 3, 'assistant', 'A yellow kayak, noted.', 3000)",
        ],
        check: &[("sessions", "id, key, user_id, closed_ms"), ("messages", "session_id, seq, role, content")],
    },
    Seed {
        after: "embeddings",
        // `vec` is never read back here (its bytes differ by backend: a portable literal).
        sql: &[
            "INSERT INTO memory_vectors (memory_id, user_id, scope, model, vec, created_ms) \
             VALUES (7, 'u-old', '', 'old-model', CAST('ab' AS BYTEA), 1000)",
            "INSERT INTO message_vectors (session_id, seq, model, vec, created_ms) \
             VALUES ('s-old', 1, 'old-model', CAST('ab' AS BYTEA), 1000)",
            "INSERT INTO embed_queue (ref, attempts, next_ms, error) VALUES ('m:7', 2, 5000, 'HTTP 500')",
            "INSERT INTO embed_models (model, queued_ms) VALUES ('old-model', 1000)",
        ],
        check: &[
            ("memory_vectors", "memory_id, user_id, scope, model"),
            ("message_vectors", "session_id, seq, model"),
            ("embed_queue", "ref, attempts, next_ms, error"),
            ("embed_models", "model, queued_ms"),
        ],
    },
    // A receiver's read position (a Matrix sync token) survives later upgrades.
    Seed {
        after: "channel cursors",
        sql: &["INSERT INTO channel_cursors (name, token, updated_ms) VALUES ('matrix:@b:x', '{\"token\":\"s1\"}', 1000)"],
        check: &[("channel_cursors", "name, token, updated_ms")],
    },
    // The answer links' key survives later upgrades (links already mailed keep working).
    Seed {
        after: "server keys",
        sql: &["INSERT INTO server_keys (name, secret, created_ms) VALUES ('answer_links', 'k1', 1000)"],
        check: &[("server_keys", "name, secret, created_ms")],
    },
];

/// A row as text, whatever the column types.
fn render<R: Row>(row: &R) -> Vec<String>
where
    for<'a> Option<String>: sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    for<'a> Option<i64>: sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    for<'a> Option<i32>: sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    for<'a> Option<f64>: sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    for<'a> Option<bool>: sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    usize: sqlx::ColumnIndex<R>,
{
    (0..row.columns().len())
        .map(|i| {
            row.try_get::<Option<String>, _>(i)
                .map(|v| v.unwrap_or_else(|| "NULL".into()))
                .or_else(|_| row.try_get::<Option<i64>, _>(i).map(|v| format!("{v:?}")))
                .or_else(|_| row.try_get::<Option<i32>, _>(i).map(|v| format!("{:?}", v.map(i64::from))))
                .or_else(|_| row.try_get::<Option<f64>, _>(i).map(|v| format!("{v:?}")))
                .or_else(|_| row.try_get::<Option<bool>, _>(i).map(|v| format!("{v:?}")))
                .unwrap_or_else(|e| panic!("column {}: {e}", row.columns()[i].name()))
        })
        .collect()
}

fn select(table: &str, cols: &str) -> sqlx::AssertSqlSafe<String> {
    sqlx::AssertSqlSafe(format!("SELECT {cols} FROM {table} ORDER BY {cols}"))
}

/// The database a test upgrades, on one backend.
enum Db {
    Sqlite(sqlx::SqlitePool),
    Postgres(sqlx::PgPool),
}

impl Db {
    async fn run_to(&self, m: &Migrator, version: i64) {
        match self {
            Db::Sqlite(p) => m.run_to(version, p).await.unwrap(),
            Db::Postgres(p) => m.run_to(version, p).await.unwrap(),
        }
    }

    async fn exec(&self, sql: &'static str) {
        match self {
            Db::Sqlite(p) => sqlx::query(sql).execute(p).await.map(|_| ()),
            Db::Postgres(p) => sqlx::query(sql).execute(p).await.map(|_| ()),
        }
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    async fn rows(&self, table: &str, cols: &str) -> Vec<Vec<String>> {
        match self {
            Db::Sqlite(p) => sqlx::query(select(table, cols)).fetch_all(p).await.unwrap().iter().map(render).collect(),
            Db::Postgres(p) => {
                sqlx::query(select(table, cols)).fetch_all(p).await.unwrap().iter().map(render).collect()
            }
        }
    }

    async fn close(self) {
        match self {
            Db::Sqlite(p) => p.close().await,
            Db::Postgres(p) => p.close().await,
        }
    }
}

/// Builds the schema up to (and including) migration number `start` with the seeds of each
/// migration on the way, upgrades with the store, and checks every seeded row and the reads.
async fn upgrade_from(backend: &str, url: &str, start: usize) {
    let migrator = Migrator::new(Path::new(&format!("migrations/{backend}"))).await.unwrap();
    let steps: Vec<(i64, String)> = migrator.iter().map(|m| (m.version, m.description.to_string())).collect();
    let db = match backend {
        "sqlite" => Db::Sqlite(sqlx::SqlitePool::connect(&format!("{url}?mode=rwc")).await.unwrap()),
        _ => Db::Postgres(sqlx::PgPool::connect(url).await.unwrap()),
    };
    let mut seeded = Vec::new();
    for (version, description) in &steps[..start] {
        db.run_to(&migrator, *version).await;
        for seed in SEEDS.iter().filter(|s| s.after == description) {
            for sql in seed.sql {
                db.exec(sql).await;
            }
            seeded.push(seed);
        }
    }
    let mut before = Vec::new();
    for seed in &seeded {
        for (table, cols) in seed.check {
            before.push(((*table, *cols), db.rows(table, cols).await));
        }
    }
    db.close().await;

    let store = butler::store::connect(url, 2).await.unwrap();
    store.migrate().await.unwrap_or_else(|e| panic!("{backend} from {}: {e}", steps[start - 1].1));
    let db = match backend {
        "sqlite" => Db::Sqlite(sqlx::SqlitePool::connect(url).await.unwrap()),
        _ => Db::Postgres(sqlx::PgPool::connect(url).await.unwrap()),
    };
    let from = &steps[start - 1].1;
    for ((table, cols), rows) in before {
        assert!(!rows.is_empty(), "{backend} from `{from}`: {table} was seeded");
        assert_eq!(db.rows(table, cols).await, rows, "{backend} from `{from}`: {table} after the upgrade");
    }
    db.close().await;
    // The store's own reads find the old data.
    let user = store.identity_user(&Identity::new("telegram", "4242")).await.unwrap().expect("the old user");
    assert_eq!(user.id, "u-old");
    let found = store.memory_search(&MemoryScope::personal("u-old"), "bicycle", 5).await.unwrap();
    assert_eq!(found.len(), 1, "{backend} from `{from}`: the old memory is found by search");
    let web = store.web_list("web:c1", 0, 10).await.unwrap();
    assert_eq!(web.iter().map(|m| m.text.as_str()).collect::<Vec<_>>(), ["hello from the old days"]);
    if seeded.iter().any(|s| s.sql.iter().any(|q| q.contains("'s-dm'"))) {
        // Transcripts written before their index are found (user and assistant text only).
        let hits = store.transcript_search("u-old", &TranscriptScope::Private, "kayak", None, 10).await.unwrap();
        let seqs: Vec<i64> = hits.iter().map(|h| h.seq).collect();
        assert_eq!(seqs, [3, 1], "{backend} from `{from}`: the old conversation is indexed");
        assert_eq!(store.sessions_recent("u-old", 10).await.unwrap()[0].title.as_deref(), Some("my kayak is yellow"));
    }
    store.close().await;
}

/// Every start version but the newest (which is "already upgraded").
async fn every_version(backend: &str) {
    let migrator = Migrator::new(Path::new(&format!("migrations/{backend}"))).await.unwrap();
    let n = migrator.iter().count();
    assert!(migrator.iter().all(|m| !m.migration_type.is_down_migration()), "migrations are forward-only");
    for start in 1..n {
        match backend {
            "sqlite" => {
                let db = SqliteTestDb::new();
                std::fs::create_dir_all(db.dir.path().join("data")).unwrap();
                upgrade_from(backend, &db.url, start).await;
            }
            _ => {
                let db = PgTestDb::create().await;
                upgrade_from(backend, &db.url, start).await;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_upgrades_from_every_earlier_schema_keep_every_row() {
    every_version("sqlite").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_upgrades_from_every_earlier_schema_keep_every_row() {
    every_version("postgres").await;
}

#[test]
fn every_migration_file_has_seeds_or_changes_no_table_of_its_own() {
    // A new migration that creates a table must bring a seed here, so the next upgrade test
    // covers its rows: (backend, description of each migration creating a table).
    for backend in ["sqlite", "postgres"] {
        for entry in std::fs::read_dir(format!("migrations/{backend}")).unwrap() {
            let path = entry.unwrap().path();
            let sql = std::fs::read_to_string(&path).unwrap();
            let name = path.file_stem().unwrap().to_string_lossy().to_string();
            let description = name.split_once('_').map(|(_, d)| d.replace('_', " ")).unwrap();
            if sql.contains("CREATE TABLE") {
                assert!(
                    SEEDS.iter().any(|s| s.after == description),
                    "{backend}/{name} creates a table: add a Seed for `{description}` in tests/store/upgrade.rs"
                );
            }
        }
    }
}
