//! Recall benchmark: p50 and p99 latency of `memory_search` over 1,000,000 memories (1,000 users
//! x 1,000 each) on SQLite and on Postgres, by words (the store's full-text search) and hybrid
//! (words and meaning merged, with a 1,536-dimension vector per memory: the query embedded by
//! the fake embedding server over loopback HTTP, then an exact search over the owner's 1,000
//! vectors). The memories and vectors are loaded with bulk SQL (the setup is not what is
//! measured); the searches go through the real store and the real `HybridMemory`.
//!
//! Run: `cargo bench --bench memory` (Postgres from BUTLER_TEST_PG_URL; BENCH_BACKENDS=sqlite to
//! skip it; BENCH_USERS / BENCH_PER_USER / BENCH_QUERIES / BENCH_DIMS to resize). Two lines per
//! backend: `bench=memory_recall` and `bench=memory_hybrid` (with the process's resident memory).

#[path = "../tests/support/mod.rs"]
mod support;

use butler::memory::embed::{encode, Embedder, HybridMemory};
use butler::store::{MemoryScope, MemoryStore, Store};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::db;

/// The model name the bench's vectors are stored under.
const MODEL: &str = "bench-embed";

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

/// A vector for every memory: the fake model's vector of its topic words (the `note N:` prefix
/// left out, so 30 distinct texts are computed once each), stored with bulk SQL.
async fn load_vectors(store: &Arc<dyn Store>, url: &str, users: usize, dims: usize) {
    let mut cache: HashMap<String, Vec<u8>> = HashMap::new();
    let mut vector = |text: &str| {
        let topic = text.split_once(": ").map_or(text, |(_, t)| t).to_string();
        cache.entry(topic.clone()).or_insert_with(|| encode(&support::embedder::embed(MODEL, &topic, dims))).clone()
    };
    let sqlite = url.starts_with("sqlite");
    let (lite, pg) = if sqlite {
        (Some(sqlx::SqlitePool::connect(url).await.unwrap()), None)
    } else {
        (None, Some(sqlx::PgPool::connect(url).await.unwrap()))
    };
    for u in 0..users {
        let owner = MemoryScope::personal(format!("user{u}"));
        let rows = store.memory_list(&owner, usize::MAX).await.unwrap();
        for chunk in rows.chunks(200) {
            let values: Vec<(i64, Vec<u8>)> = chunk.iter().map(|m| (m.id, vector(&m.text))).collect();
            let sql = "INSERT INTO memory_vectors (memory_id, user_id, scope, model, vec, created_ms) ";
            if let Some(pool) = &lite {
                let mut qb = sqlx::QueryBuilder::<sqlx::Sqlite>::new(sql);
                qb.push_values(&values, |mut b, (id, v)| {
                    b.push_bind(*id)
                        .push_bind(&owner.user_id)
                        .push_bind("")
                        .push_bind(MODEL)
                        .push_bind(v)
                        .push_bind(0i64);
                });
                qb.build().execute(pool).await.unwrap();
            } else if let Some(pool) = &pg {
                let mut qb = sqlx::QueryBuilder::<sqlx::Postgres>::new(sql);
                qb.push_values(&values, |mut b, (id, v)| {
                    b.push_bind(*id)
                        .push_bind(&owner.user_id)
                        .push_bind("")
                        .push_bind(MODEL)
                        .push_bind(v)
                        .push_bind(0i64);
                });
                qb.build().execute(pool).await.unwrap();
            }
        }
    }
    if let Some(pool) = pg {
        sqlx::query("ANALYZE memory_vectors").execute(&pool).await.unwrap();
        pool.close().await;
    }
    if let Some(pool) = lite {
        pool.close().await;
    }
}

/// This process's resident memory, in MB (Linux).
fn rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .unwrap_or(0.0);
    kb / 1024.0
}

/// The query of round `q`: two topic words.
fn query(q: usize) -> String {
    format!("{} {}", WORDS[q % WORDS.len()], WORDS[(q * 3 + 1) % WORDS.len()])
}

/// p50/p99 and the average hit count of `queries` searches through `memory`.
async fn measure(memory: &dyn MemoryStore, users: usize, queries: usize) -> (f64, f64, f64) {
    let mut times = Vec::with_capacity(queries);
    let mut hits = 0usize;
    for q in 0..queries {
        let user = (q * 7919) % users;
        let t = Instant::now();
        let found = memory.memory_search(&MemoryScope::personal(format!("user{user}")), &query(q), 8).await.unwrap();
        times.push(t.elapsed());
        hits += found.len();
    }
    times.sort();
    (pct(&times, 0.50), pct(&times, 0.99), hits as f64 / queries as f64)
}

async fn run(backend: &str, url: &str) {
    let (users, per_user, queries) =
        (env("BENCH_USERS", 1000), env("BENCH_PER_USER", 1000), env("BENCH_QUERIES", 2000));
    let store = butler::store::connect(url, 4).await.unwrap();
    store.migrate().await.unwrap();
    let started = Instant::now();
    load(url, users, per_user).await;
    let load_secs = started.elapsed().as_secs_f64();
    let (p50, p99, hits) = measure(&*store, users, queries).await;
    println!(
        "bench=memory_recall backend={backend} memories={} queries={queries} p50_ms={p50:.2} p99_ms={p99:.2} \
         avg_hits={hits:.1} load_s={load_secs:.0}",
        users * per_user,
    );
    let dims = env("BENCH_DIMS", 1536);
    let started = Instant::now();
    load_vectors(&store, url, users, dims).await;
    let vectors_secs = started.elapsed().as_secs_f64();
    let llm = support::fake_llm::FakeLlm::start().await;
    let cfg = butler::config::EmbeddingsConfig {
        base_url: llm.openai_url(),
        model: MODEL.into(),
        dimensions: Some(dims),
        ..Default::default()
    };
    let embedder = Arc::new(Embedder::new(&cfg));
    // The parts of the vector leg alone: embedding the query, reading the owner's vectors,
    // comparing them.
    let (mut embed_t, mut read_t, mut compare_t) = (Vec::new(), Vec::new(), Vec::new());
    for q in 0..queries.min(500) {
        let owner = MemoryScope::personal(format!("user{}", (q * 7919) % users));
        let t = Instant::now();
        let v = encode(&embedder.embed(&[query(q)], None).await.unwrap()[0]);
        embed_t.push(t.elapsed());
        let t = Instant::now();
        let rows = store.memory_vectors(&owner, MODEL).await.unwrap();
        read_t.push(t.elapsed());
        let t = Instant::now();
        std::hint::black_box(butler::memory::embed::nearest(&v, &rows, 0.3, 32));
        compare_t.push(t.elapsed());
    }
    for t in [&mut embed_t, &mut read_t, &mut compare_t] {
        t.sort();
    }
    let hybrid = HybridMemory::new(store.clone(), store.clone(), embedder);
    let (p50, p99, hits) = measure(&hybrid, users, queries).await;
    println!(
        "bench=memory_hybrid backend={backend} memories={} dims={dims} queries={queries} p50_ms={p50:.2} \
         p99_ms={p99:.2} avg_hits={hits:.1} rss_mb={:.0} vectors_load_s={vectors_secs:.0} \
         embed_query_p50_ms={:.2} read_vectors_p50_ms={:.2} compare_p50_ms={:.2}",
        users * per_user,
        rss_mb(),
        pct(&embed_t, 0.5),
        pct(&read_t, 0.5),
        pct(&compare_t, 0.5),
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
