//! Several replicas: turns per second through the web API with 1, 2 and 3 `butler serve`
//! replicas (release build) on one Postgres database and one Redis, one load generator spreading
//! conversations over them, with the CPU each turn cost (all replicas together); and the time
//! from SIGKILL of the replica polling Telegram to the answer of a message sent right after.
//!
//! Run: `cargo bench --bench replicas` (Postgres from BUTLER_TEST_PG_URL; `redis-server` on
//! PATH, started privately). Tunables: BENCH_CONVERSATIONS (default 48), BENCH_TURNS (per
//! conversation, default 40), BENCH_TAKEOVERS (default 5), BENCH_LEASE_MS (default 3000).
//! Prints one `bench=` line per scenario; the throughput lines also give what a turn asks of the
//! shared parts (Postgres transactions and rows written, Redis commands), for the scaling figure.

#[path = "../tests/support/mod.rs"]
#[allow(unused_imports)]
mod support;

use std::time::{Duration, Instant};
use support::bench::{cpu_secs, env_usize, percentile_ms, web_conversation as conversation};
use support::cluster::Replicas;
use support::fake_llm::FakeLlm;

async fn throughput(n: usize, conversations: usize, turns: usize, lease_ms: u64) {
    let llm = FakeLlm::start().await;
    let extra = format!("[llm]\nbase_url = \"{}\"\nmodel = \"bench\"\nmax_retries = 0\n", llm.openai_url());
    let mut set = Replicas::direct(n, lease_ms, &extra).await;
    set.start_all().await;
    let client = reqwest::Client::builder().pool_max_idle_per_host(conversations * 2).build().unwrap();
    let bases: Vec<String> = set.nodes.iter().map(|r| r.base()).collect();
    let warm: Vec<_> = (0..conversations.min(12))
        .map(|i| tokio::spawn(conversation(client.clone(), bases[i % n].clone(), format!("warm{i}"), 3)))
        .collect();
    for w in warm {
        w.await.unwrap();
    }
    let pids: Vec<u32> = set.nodes.iter().filter_map(|r| r.pid()).collect();
    let (pg_before, redis_before) = (pg_counts(&set.db.url).await, redis_commands(&set).await);
    let (pg_pids, redis_pid) = (pg_backends(&set.db.url).await, redis_pid(set.redis.port));
    let pg_cpu_before: f64 = pg_pids.iter().map(|p| cpu_secs(*p)).sum();
    let redis_cpu_before = cpu_secs(redis_pid);
    let cpu_before: f64 = pids.iter().map(|p| cpu_secs(*p)).sum();
    let started = Instant::now();
    let tasks: Vec<_> = (0..conversations)
        .map(|i| tokio::spawn(conversation(client.clone(), bases[i % n].clone(), format!("b{i}"), turns)))
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let elapsed = started.elapsed().as_secs_f64();
    let cpu: f64 = pids.iter().map(|p| cpu_secs(*p)).sum::<f64>() - cpu_before;
    let redis_cpu = cpu_secs(redis_pid) - redis_cpu_before;
    let pg_cpu = pg_pids.iter().map(|p| cpu_secs(*p)).sum::<f64>() - pg_cpu_before;
    let (pg_after, redis_after) = (pg_counts(&set.db.url).await, redis_commands(&set).await);
    all.sort();
    let total = all.len() + conversations;
    let t = total as f64;
    // What one turn asks of the shared parts (including the replicas' timers over the run):
    // where the first bottleneck of many replicas on one primary will be.
    println!(
        "bench=replicas_throughput replicas={n} conversations={conversations} turns={total} turns_per_s={:.0} \
         p50_ms={:.2} p99_ms={:.2} cpu_ms_per_turn={:.2} cores=2 pg_transactions_per_turn={:.1} \
         pg_rows_written_per_turn={:.1} redis_commands_per_turn={:.1} pg_backend_cpu_ms_per_turn={:.3} \
         redis_cpu_ms_per_turn={:.3}",
        t / elapsed,
        percentile_ms(&all, 0.50),
        percentile_ms(&all, 0.99),
        cpu * 1000.0 / t,
        (pg_after.0 - pg_before.0) / t,
        (pg_after.1 - pg_before.1) / t,
        (redis_after - redis_before) / t,
        pg_cpu * 1000.0 / t,
        redis_cpu * 1000.0 / t,
    );
}

/// Transactions committed and rows written (inserted, updated, deleted) in the bench's
/// database so far, once the server's statistics caught up.
async fn pg_counts(db_url: &str) -> (f64, f64) {
    // Backends report their counts at most once a second.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let pool = sqlx::PgPool::connect(db_url).await.unwrap();
    let (commits, rows): (i64, i64) = sqlx::query_as(
        "SELECT xact_commit, tup_inserted + tup_updated + tup_deleted FROM pg_stat_database \
         WHERE datname = current_database()",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    pool.close().await;
    (commits as f64, rows as f64)
}

/// The server processes of the connections open to the bench's database (the replicas' pools;
/// Postgres's shared background processes, such as the WAL writer, are not counted).
async fn pg_backends(db_url: &str) -> Vec<u32> {
    let pool = sqlx::PgPool::connect(db_url).await.unwrap();
    let pids: Vec<i32> = sqlx::query_scalar(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    pool.close().await;
    pids.into_iter().map(|p| p as u32).collect()
}

/// The process of the private `redis-server` listening on `port`.
fn redis_pid(port: u16) -> u32 {
    let wanted = port.to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .find(|pid| {
            // Redis rewrites its title to `redis-server 127.0.0.1:<port>`; before that the
            // arguments are `--port <port>`.
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            cmd.contains("redis-server")
                && (cmd.contains(&format!(":{wanted} "))
                    || cmd.trim_end().ends_with(&format!(":{wanted}"))
                    || cmd.contains(&format!("--port {wanted} ")))
        })
        .expect("the private redis-server")
}

/// Commands the replicas' Redis has processed so far (`INFO stats`).
async fn redis_commands(set: &Replicas) -> f64 {
    let mut conn = set.redis.conn().await;
    let info: String = redis::cmd("INFO").arg("stats").query_async(&mut conn).await.unwrap();
    info.lines().find_map(|l| l.strip_prefix("total_commands_processed:")).and_then(|v| v.trim().parse().ok()).unwrap()
}

async fn takeover(rounds: usize, lease_ms: u64) {
    use support::fake_telegram::{updates::dm, FakeTelegram};
    const TOKEN: &str = "4242:bench-token";
    const OWNER: i64 = 4242;
    let tg = FakeTelegram::start(TOKEN).await;
    tg.refuse_concurrent_polls();
    let llm = FakeLlm::start().await;
    let extra = format!(
        "[llm]\nbase_url = \"{}\"\nmodel = \"bench\"\nmax_retries = 0\n\
         [channels.telegram]\ntoken = \"{TOKEN}\"\napi_url = \"{}\"\npoll_timeout_secs = 10\n\
         [access]\nowners = [\"telegram:{OWNER}\"]\n",
        llm.openai_url(),
        tg.api_url()
    );
    let mut set = Replicas::direct(3, lease_ms, &extra).await;
    set.start_all().await;
    let mut times = Vec::new();
    for round in 0..rounds {
        let leader = loop {
            if let Some(l) = set.holder("receiver:telegram").await {
                break l;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        set.kill(leader);
        let killed = Instant::now();
        let text = format!("after kill {round}");
        tg.push(dm(OWNER, 100 + round as i64, &text));
        let want = format!("echo: {text}");
        tg.wait_chat(OWNER, 60, "the answer after the takeover", |m| m.iter().any(|s| s.text == want)).await;
        times.push(killed.elapsed());
        set.start(leader).await;
    }
    times.sort();
    println!(
        "bench=replicas_takeover rounds={rounds} lease_ms={lease_ms} takeover_p50_ms={:.0} takeover_max_ms={:.0} conflicts={}",
        percentile_ms(&times, 0.50),
        percentile_ms(&times, 1.0),
        tg.conflicts()
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let conversations = env_usize("BENCH_CONVERSATIONS", 48);
    let turns = env_usize("BENCH_TURNS", 40);
    let lease_ms = env_usize("BENCH_LEASE_MS", 3000) as u64;
    for n in 1..=3 {
        throughput(n, conversations, turns, lease_ms).await;
    }
    takeover(env_usize("BENCH_TAKEOVERS", 5), lease_ms).await;
}
