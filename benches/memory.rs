//! Recall benchmark: p50 and p99 latency of `memory_search` over 1,000,000 memories (1,000 users
//! x 1,000 each) on SQLite and on Postgres. The memories are loaded with bulk SQL (the setup is
//! not what is measured); the searches go through the real store.
//!
//! Run: `cargo bench --bench memory` (Postgres from BUTLER_TEST_PG_URL; BENCH_BACKENDS=sqlite to
//! skip it; BENCH_USERS / BENCH_PER_USER / BENCH_QUERIES to resize). One line per backend.

#[path = "../tests/support/db.rs"]
#[allow(dead_code)]
mod db;

use butler::store::MemoryScope;
use std::time::{Duration, Instant};

const WORDS: &[&str] = &[
    "garden", "tea", "coffee", "porto", "lisbon", "cat", "dog", "bike", "piano", "running", "meeting", "dentist",
    "birthday", "sister", "brother", "project", "deadline", "holiday", "flight", "recipe", "pasta", "budget",
    "invoice", "doctor", "school", "guitar", "novel", "museum", "football", "weather",
];

fn env(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// A pseudo-random memory text for (user, n): four topic words in a sentence.
fn text(user: usize, n: usize) -> String {
    let w = |k: usize| WORDS[(user * 31 + n * 7 + k * 13) % WORDS.len()];
    format!("note {n}: the {} and the {} before the {} with {}", w(0), w(1), w(2), w(3))
}

async fn load(url: &str, users: usize, per_user: usize) {
    let rows_per_stmt = 500;
    if url.starts_with("sqlite") {
        let pool = sqlx::SqlitePool::connect(url).await.unwrap();
        let mut tx = pool.begin().await.unwrap();
        for u in 0..users {
            for chunk in (0..per_user).collect::<Vec<_>>().chunks(rows_per_stmt) {
                let mut qb = sqlx::QueryBuilder::<sqlx::Sqlite>::new(
                    "INSERT INTO memories (user_id, text, source, created_ms, updated_ms, scope) ",
                );
                qb.push_values(chunk, |mut b, n| {
                    b.push_bind(format!("user{u}"))
                        .push_bind(text(u, *n))
                        .push_bind(None::<String>)
                        .push_bind(*n as i64)
                        .push_bind(*n as i64)
                        .push_bind("");
                });
                qb.build().execute(&mut *tx).await.unwrap();
            }
        }
        tx.commit().await.unwrap();
        pool.close().await;
    } else {
        let pool = sqlx::PgPool::connect(url).await.unwrap();
        for u in 0..users {
            for chunk in (0..per_user).collect::<Vec<_>>().chunks(rows_per_stmt) {
                let mut qb = sqlx::QueryBuilder::<sqlx::Postgres>::new(
                    "INSERT INTO memories (user_id, text, source, created_ms, updated_ms, scope) ",
                );
                qb.push_values(chunk, |mut b, n| {
                    b.push_bind(format!("user{u}"))
                        .push_bind(text(u, *n))
                        .push_bind(None::<String>)
                        .push_bind(*n as i64)
                        .push_bind(*n as i64)
                        .push_bind("");
                });
                qb.build().execute(&pool).await.unwrap();
            }
        }
        sqlx::query("ANALYZE memories").execute(&pool).await.unwrap();
        pool.close().await;
    }
}

fn pct(sorted: &[Duration], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize].as_secs_f64() * 1000.0
}

async fn run(backend: &str, url: &str) {
    let (users, per_user, queries) =
        (env("BENCH_USERS", 1000), env("BENCH_PER_USER", 1000), env("BENCH_QUERIES", 2000));
    let store = butler::store::connect(url, 4).await.unwrap();
    store.migrate().await.unwrap();
    let started = Instant::now();
    load(url, users, per_user).await;
    let load_secs = started.elapsed().as_secs_f64();
    let mut times = Vec::with_capacity(queries);
    let mut hits = 0usize;
    for q in 0..queries {
        let user = (q * 7919) % users;
        let query = format!("{} {}", WORDS[q % WORDS.len()], WORDS[(q * 3 + 1) % WORDS.len()]);
        let t = Instant::now();
        let found = store.memory_search(&MemoryScope::personal(format!("user{user}")), &query, 8).await.unwrap();
        times.push(t.elapsed());
        hits += found.len();
    }
    times.sort();
    println!(
        "bench=memory_recall backend={backend} memories={} queries={queries} p50_ms={:.2} p99_ms={:.2} \
         avg_hits={:.1} load_s={load_secs:.0}",
        users * per_user,
        pct(&times, 0.50),
        pct(&times, 0.99),
        hits as f64 / queries as f64,
    );
    store.close().await;
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let backends = std::env::var("BENCH_BACKENDS").unwrap_or_else(|_| "sqlite,postgres".into());
        if backends.contains("sqlite") {
            let dir = tempfile::tempdir().unwrap();
            run("sqlite", &format!("sqlite://{}", dir.path().join("bench.db").display())).await;
        }
        if backends.contains("postgres") {
            let pg = db::PgTestDb::create().await;
            run("postgres", &pg.url).await;
            drop(pg);
        }
    });
}
