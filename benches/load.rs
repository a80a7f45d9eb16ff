//! Load benchmark: the real `butler serve` binary (release build) under concurrent web chat
//! conversations, with an in-process zero-latency fake LLM, on SQLite and on Postgres; plus cold
//! start to ready and idle memory.
//!
//! Run: `cargo bench --bench load` (Postgres from BUTLER_TEST_PG_URL, default
//! postgres://postgres:postgres@127.0.0.1:5432/postgres; skip it with BENCH_BACKENDS=sqlite).
//! Tunables: BENCH_CONVERSATIONS (default 64), BENCH_TURNS (per conversation, default 150),
//! BENCH_SESSIONS (idle sessions held live for the per-session memory figure, default 20,000).
//! Each scenario prints one machine-readable summary line starting with `bench=`.

#[path = "../tests/support/mod.rs"]
#[allow(unused_imports)]
mod support;

use futures::StreamExt;
use serde_json::json;
use std::time::{Duration, Instant};
use support::bench::{
    bench_config, cpu_secs, env_usize, percentile_ms as percentile, proc_mib, web_conversation as conversation, Serve,
};
use support::db::PgTestDb;
use support::fake_llm::FakeLlm;
use support::proc::free_port;

/// Starts `butler serve` on `db_url`; returns it and the time from spawn to /readyz = 200.
async fn serve(db_url: &str, llm_url: &str) -> (Serve, Duration) {
    serve_with(db_url, llm_url, "").await
}

/// [`serve`] with extra config lines appended.
async fn serve_with(db_url: &str, llm_url: &str, extra: &str) -> (Serve, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let config = bench_config(dir.path(), port, db_url, llm_url, extra);
    Serve::start(dir, &config, port).await
}

async fn load(backend: &str, db_url: &str, llm_url: &str, conversations: usize, turns: usize, bench: &str) {
    let (server, _) = serve(db_url, llm_url).await;
    let pid = server.child.id();
    let client = reqwest::Client::builder().pool_max_idle_per_host(conversations * 2).build().unwrap();
    // Warm up (connections, caches, SQLite pages) before measuring.
    let warm: Vec<_> = (0..conversations.min(16))
        .map(|i| tokio::spawn(conversation(client.clone(), server.base.clone(), format!("warm{i}"), 5)))
        .collect();
    for w in warm {
        w.await.unwrap();
    }
    let cpu_before = cpu_secs(pid);
    let started = Instant::now();
    let tasks: Vec<_> = (0..conversations)
        .map(|i| tokio::spawn(conversation(client.clone(), server.base.clone(), format!("b{i}"), turns)))
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let elapsed = started.elapsed().as_secs_f64();
    let cpu = cpu_secs(pid) - cpu_before;
    all.sort();
    // Each conversation also sent one greeting turn.
    let total = all.len() + conversations;
    println!(
        "bench={bench} backend={backend} conversations={conversations} turns={total} turns_per_s={:.0} \
         p50_ms={:.2} p99_ms={:.2} server_cpu_ms_per_turn={:.3} peak_rss_mib={:.1}",
        total as f64 / elapsed,
        percentile(&all, 0.50),
        percentile(&all, 0.99),
        cpu * 1000.0 / total as f64,
        proc_mib(pid, "VmHWM"),
    );
}

async fn cold_start(llm_url: &str) {
    let mut times = Vec::new();
    let mut idle = 0.0;
    for _ in 0..5 {
        let (server, ready) = serve("", llm_url).await;
        times.push(ready);
        tokio::time::sleep(Duration::from_secs(2)).await;
        idle = proc_mib(server.child.id(), "VmRSS");
    }
    times.sort();
    println!(
        "bench=cold_start backend=sqlite runs=5 ready_ms_median={:.1} ready_ms_max={:.1} idle_rss_mib={idle:.1}",
        times[2].as_secs_f64() * 1000.0,
        times[4].as_secs_f64() * 1000.0
    );
}

/// A number from Butler's /metrics.
async fn metric(client: &reqwest::Client, base: &str, name: &str) -> f64 {
    let text = client.get(format!("{base}/metrics")).send().await.unwrap().text().await.unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(' ')))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0.0)
}

/// One "hello" to each conversation `s<i>` of `range`, 32 at a time.
async fn hellos(client: &reqwest::Client, base: &str, range: std::ops::Range<usize>) {
    futures::stream::iter(range)
        .map(|i| async move {
            let body = json!({"conversation": format!("s{i}"), "user": "local", "text": "hello"});
            let r = client.post(format!("{base}/api/v1/messages")).json(&body).send().await.unwrap();
            assert_eq!(r.status(), 202);
        })
        .buffer_unordered(32)
        .collect::<Vec<()>>()
        .await;
}

/// Memory per idle session: `sessions` web conversations get one turn each and stay live
/// (their actors kept in memory); then a stream is opened and closed on each of them, which
/// must leave nothing behind.
async fn idle_sessions(llm_url: &str, sessions: usize) {
    let (server, _) = serve_with("", llm_url, "[limits]\nsession_idle_secs = 3600\n").await;
    let (pid, base) = (server.child.id(), server.base.clone());
    let client = reqwest::Client::builder().pool_max_idle_per_host(128).build().unwrap();
    let wait_turns = |n: f64| {
        let (client, base) = (client.clone(), base.clone());
        async move {
            let deadline = Instant::now() + Duration::from_secs(600);
            while metric(&client, &base, "butler_turns_total").await < n {
                assert!(Instant::now() < deadline, "turns did not finish");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    };
    // Warm up allocator arenas, connections and caches with a first batch.
    let warm = 500usize;
    hellos(&client, &base, 0..warm).await;
    wait_turns(warm as f64).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = proc_mib(pid, "VmRSS");
    // The measured sessions (conversation names continue after the warm-up's).
    hellos(&client, &base, warm..warm + sessions).await;
    wait_turns((warm + sessions) as f64).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = proc_mib(pid, "VmRSS");
    let live = metric(&client, &base, "butler_sessions_live").await;
    // Open and close an event stream on every conversation.
    futures::stream::iter(0..warm + sessions)
        .map(|i| {
            let (client, base) = (client.clone(), base.clone());
            async move {
                let r = client.get(format!("{base}/api/v1/conversations/s{i}/stream")).send().await.unwrap();
                assert_eq!(r.status(), 200);
                drop(r);
            }
        })
        .buffer_unordered(32)
        .collect::<Vec<()>>()
        .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let streams_left = metric(&client, &base, "butler_web_stream_conversations").await;
    let after_streams = proc_mib(pid, "VmRSS");
    let per_session = (after - before) * 1024.0 * 1024.0 / sessions as f64;
    let per_stream = (after_streams - after) * 1024.0 * 1024.0 / (warm + sessions) as f64;
    println!(
        "bench=idle_sessions backend=sqlite sessions={sessions} live={live} rss_before_mib={before:.1} \
         rss_after_mib={after:.1} bytes_per_idle_session={per_session:.0} rss_after_streams_mib={after_streams:.1} \
         bytes_per_closed_stream={per_stream:.0} stream_entries_left={streams_left}"
    );
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else to parse.
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let llm = FakeLlm::start().await;
        llm.set_record_limit(0);
        let llm_url = llm.openai_url();
        let conversations = env_usize("BENCH_CONVERSATIONS", 64);
        let turns = env_usize("BENCH_TURNS", 150);
        let backends = std::env::var("BENCH_BACKENDS").unwrap_or_else(|_| "sqlite,postgres".into());
        cold_start(&llm_url).await;
        idle_sessions(&llm_url, env_usize("BENCH_SESSIONS", 20_000)).await;
        if backends.contains("sqlite") {
            // Added latency: one conversation at a time, so nothing queues.
            load("sqlite", "", &llm_url, 1, turns * 4, "web_latency").await;
            load("sqlite", "", &llm_url, conversations, turns, "web_throughput").await;
        }
        if backends.contains("postgres") {
            let db = PgTestDb::create().await;
            load("postgres", &db.url, &llm_url, 1, turns * 4, "web_latency").await;
            drop(db);
            let db = PgTestDb::create().await;
            load("postgres", &db.url, &llm_url, conversations, turns, "web_throughput").await;
            drop(db);
        }
    });
}
