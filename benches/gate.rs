//! The CPU regression gate: the real `butler serve` (release build) under
//! `valgrind --tool=callgrind`, a fixed workload of web chat turns against an in-process
//! zero-latency fake model, on SQLite and on Postgres. Instruction counts are repeatable on a
//! shared, noisy machine where seconds are not, so the gate compares the instructions Butler
//! executes per turn with the figures committed in `benches/gate-baseline.txt` and fails beyond
//! the tolerance. It also prints the turn's profile from the same run: SQL statements, write
//! transactions, allocations, task polls, wake-ups and log lines per turn.
//!
//! Run: `cargo bench --bench gate` (needs valgrind; `tests/run` runs it when valgrind is there).
//! Tunables: BENCH_GATE_TURNS (measured turns, default 100: a conversation of 200 messages, the most `[limits] history_messages` keeps by default), BENCH_BACKENDS (default
//! `sqlite,postgres`), BENCH_GATE_TOLERANCE (percent, default 10), BENCH_GATE_UPDATE=1 to write
//! the measured figures as the new baseline instead of comparing, BENCH_GATE_BINARY to profile
//! another build of `butler` (an older one, to compare), BENCH_GATE_KEEP=<folder> to keep the measured
//! turns' callgrind dumps there (`callgrind.<backend>.out`). It prints one `bench=gate` and
//! one `bench=turn_profile` line per backend and exits non-zero on a regression.
//! BENCH_GATE_ORDER=<file> instead adds to the link order of the binary's code every function
//! of `butler` that ran and is not listed yet, by its symbol, for `build.rs` to place together
//! (`benches/hot.order`; README, "Code laid out by use", says how to write it for both the
//! release build and this bench's): first, in the file's idle part, what runs when it starts on
//! a database it made before and idles (what an idle process keeps resident); after a marker
//! line, what a first start and the turns add.
//! In its usual mode it checks that placement in the binary it profiles (`bench=hot_code`): the
//! functions the file names, and those of its idle part, must each lie within a span of about
//! their own size; when most of them are gone it says the file is stale (written again with
//! BENCH_GATE_ORDER).
//!
//! It must never compare wall-clock times, and never pass when valgrind or Butler failed.

#[path = "../tests/support/mod.rs"]
#[allow(unused_imports)]
mod support;

#[path = "gate/dump.rs"]
mod dump;
#[path = "gate/order.rs"]
mod order;

use dump::Dump;
use order::{hot_code, order_file, write_order};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::bench::{bench_config, env_usize, wait_ready, web_conversation};
use support::db::PgTestDb;
use support::fake_llm::FakeLlm;
use support::proc::{binary, free_port};

/// How long the idle rate is sampled.
const IDLE_SAMPLE: Duration = Duration::from_secs(5);

const BASELINE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/gate-baseline.txt");

/// `butler serve` under callgrind; killed when dropped.
struct Profiled {
    child: Child,
    base: String,
    out: PathBuf,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Profiled {
    async fn start(db_url: &str, llm_url: &str) -> Self {
        Self::start_in(tempfile::tempdir().unwrap(), db_url, llm_url).await
    }

    /// Starts it in `dir`, on the database there if one is (SQLite).
    async fn start_in(dir: tempfile::TempDir, db_url: &str, llm_url: &str) -> Self {
        let port = free_port();
        let config = bench_config(dir.path(), port, db_url, llm_url, "");
        let out = dir.path().join("callgrind.out");
        let log = dir.path().join("butler.log");
        let child = Command::new("valgrind")
            .args(["--tool=callgrind", "--quiet", "--dump-instr=no", "--dump-line=no"])
            // The link order names functions by their symbols.
            .args(order_file().map(|_| "--demangle=no"))
            .arg(format!("--callgrind-out-file={}", out.display()))
            .arg(profiled_binary())
            .args(["serve", "--config"])
            .arg(&config)
            // The default log level: log lines per turn are part of the profile.
            .env_remove("RUST_LOG")
            // `serve` would start itself again with these (`cli::allocator`), outside callgrind:
            // given as the second start finds them, so the profile (and the link order's idle
            // part) has that start's own path (callgrind has its own allocator anyway).
            .env("GLIBC_TUNABLES", butler::cli::allocator::TUNABLES)
            .env(butler::cli::allocator::MARK, "")
            .current_dir(dir.path())
            .stdout(Stdio::from(std::fs::File::create(&log).unwrap()))
            .stderr(Stdio::from(std::fs::File::options().append(true).open(&log).unwrap()))
            .spawn()
            .expect("valgrind: install it (apt-get install valgrind)");
        let me = Self { child, base: format!("http://127.0.0.1:{port}"), out, log, _dir: dir };
        // Under callgrind start-up takes a hundred times longer.
        wait_ready(&me.base, Duration::from_secs(300), Duration::from_millis(100)).await;
        me
    }

    /// Runs `callgrind_control <flag>` on the process and waits for it.
    fn control(&self, flag: &str) {
        let status = Command::new("callgrind_control")
            .arg(flag)
            .arg(self.child.id().to_string())
            .stdout(Stdio::null())
            .status()
            .expect("callgrind_control (part of valgrind)");
        assert!(status.success(), "callgrind_control {flag} failed");
    }

    fn log_lines(&self) -> usize {
        std::fs::read_to_string(&self.log).unwrap_or_default().lines().count()
    }

    /// The newest dump file callgrind wrote (`callgrind.out.<n>` after a `-d`).
    fn last_dump(&self) -> PathBuf {
        self.dumps().pop().expect("callgrind wrote no dump")
    }

    /// The dump files callgrind wrote so far, oldest first.
    fn dumps(&self) -> Vec<PathBuf> {
        let dir = self.out.parent().unwrap();
        let name = self.out.file_name().unwrap().to_string_lossy().to_string();
        let mut dumps: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let file = e.file_name().to_string_lossy().to_string();
                let n = file.strip_prefix(&name)?.strip_prefix('.')?.parse().ok()?;
                Some((n, e.path()))
            })
            .collect();
        dumps.sort();
        dumps.into_iter().map(|(_, path)| path).collect()
    }
}

impl Drop for Profiled {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Measured {
    /// Instructions per turn, less the idle timers' share over the measured time.
    per_turn: u64,
    raw_per_turn: u64,
    idle_per_sec: u64,
    profile: String,
}

/// Transactions committed in the bench's Postgres database so far (all of Butler's, each
/// statement outside a transaction counting as one), once the server's statistics caught up.
async fn pg_commits(db_url: &str) -> f64 {
    if db_url.is_empty() {
        return 0.0;
    }
    // Backends report their counts at most once a second.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let pool = sqlx::PgPool::connect(db_url).await.unwrap();
    let n: i64 = sqlx::query_scalar("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")
        .fetch_one(&pool)
        .await
        .unwrap();
    pool.close().await;
    // This query's own transaction and connection are not Butler's.
    n as f64
}

async fn measure(backend: &str, db_url: &str, llm_url: &str, turns: usize) -> Measured {
    let server = Profiled::start(db_url, llm_url).await;
    let client = reqwest::Client::new();
    // Warm up: connections, statement caches, SQLite pages, the allocator's arenas.
    web_conversation(client.clone(), server.base.clone(), "warm".into(), 20).await;
    // What Butler's timers cost per second while nothing happens (pollers, sweeps): under
    // callgrind a turn takes a hundred times longer than natively, so this share of the count
    // depends on the machine's speed and is taken out of the per-turn figure.
    let commits_0 = pg_commits(db_url).await;
    if order_file().is_some() {
        // Start-up and the warm-up turns: the first part of the link order.
        server.control("-d");
    }
    server.control("-z");
    let idle_started = Instant::now();
    tokio::time::sleep(IDLE_SAMPLE).await;
    server.control("-d");
    let commits_1 = pg_commits(db_url).await;
    let idle_secs = idle_started.elapsed().as_secs_f64();
    let idle_dump = Dump::read(&server.last_dump());
    let idle = idle_dump.instructions as f64 / idle_secs;
    server.control("-z");
    let lines_before = server.log_lines();
    let started = Instant::now();
    // `turns` turns, one at a time (concurrency would make the count depend on timing); the
    // conversation's greeting is one more.
    web_conversation(client.clone(), server.base.clone(), "gate".into(), turns - 1).await;
    server.control("-d");
    let measured_secs = started.elapsed().as_secs_f64();
    let commits_2 = pg_commits(db_url).await;
    let background = idle * measured_secs;
    let log_lines = server.log_lines() - lines_before;
    let dump = Dump::read(&server.last_dump());
    assert!(dump.instructions > 0, "callgrind dump without totals");
    if let Ok(keep) = std::env::var("BENCH_GATE_KEEP") {
        // For callgrind_annotate: the measured turns' dump, kept after the run.
        std::fs::copy(server.last_dump(), Path::new(&keep).join(format!("callgrind.{backend}.out"))).unwrap();
    }
    if let Some(file) = order_file() {
        // The idle timers' functions join the idle part; the rest follows.
        write_order(&profiled_binary(), &[server.dumps()[1].clone()], &file, true);
        write_order(&profiled_binary(), &server.dumps(), &file, false);
    }
    let t = turns as f64;
    // Calls per turn, less what the idle timers made over the same time.
    let scale = measured_secs / idle_secs;
    let per =
        |name: fn(&str) -> bool| (dump.calls_to(name) as f64 - idle_dump.calls_to(name) as f64 * scale).max(0.0) / t;
    // SQLite: commits of write transactions. Postgres: every committed transaction, less the
    // idle window's rate (the idle window's count includes one of ours per reading).
    let commits = if backend == "sqlite" {
        per(|f| f == "sqlite3PagerCommitPhaseOne.part.0")
    } else {
        let idle_rate = (commits_1 - commits_0 - 1.0) / (idle_secs + 1.5);
        ((commits_2 - commits_1 - 1.0) - idle_rate * (measured_secs + 1.5)).max(0.0) / t
    };
    // SQLite: `sqlite3_step` calls (one per statement, plus one per row returned beyond the
    // first). Postgres: not counted here (its commits are).
    let statements = if backend == "sqlite" { format!("{:.1}", per(|f| f == "sqlite3_step")) } else { "n/a".into() };
    let profile = format!(
        "bench=turn_profile backend={backend} turns={turns} sqlite_steps_per_turn={} prepares_per_turn={:.2} \
         commits_per_turn={:.2} fsyncs_per_turn={:.2} allocations_per_turn={:.0} task_polls_per_turn={:.1} \
         thread_wakeups_per_turn={:.1} epoll_waits_per_turn={:.1} log_lines_per_turn={:.2}",
        statements,
        per(|f| f == "sqlite3_prepare_v3" || f == "sqlite3_prepare_v2"),
        commits,
        per(|f| f == "fsync" || f == "fdatasync"),
        per(|f| f == "malloc" || f == "calloc" || f == "realloc"),
        per(|f| f.starts_with("tokio::runtime::task::raw::poll")),
        per(|f| f.contains("Inner::unpark") || f.contains("futex_wake")),
        per(|f| f == "epoll_wait"),
        log_lines as f64 / t,
    );
    let net = (dump.instructions as f64 - background).max(0.0);
    Measured {
        per_turn: (net / t) as u64,
        raw_per_turn: dump.instructions / turns as u64,
        idle_per_sec: idle as u64,
        profile,
    }
}

/// The `butler` binary profiled: this build's, or BENCH_GATE_BINARY.
fn profiled_binary() -> String {
    std::env::var("BENCH_GATE_BINARY").unwrap_or_else(|_| binary().to_string())
}

/// The first part of the link order: what runs when Butler starts on a database it made
/// before and then idles, as `bench=cold_start` measures it (the database is made by a start
/// outside callgrind).
async fn idle_order(llm_url: &str, file: &Path) {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let config = bench_config(dir.path(), port, "", llm_url, "");
    let mut first = Command::new(profiled_binary())
        .args(["serve", "--config"])
        .arg(&config)
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_ready(&format!("http://127.0.0.1:{port}"), Duration::from_secs(60), Duration::from_millis(20)).await;
    let _ = Command::new("kill").args(["-TERM", &first.id().to_string()]).status();
    assert!(first.wait().unwrap().success(), "the first start did not stop cleanly");
    let server = Profiled::start_in(dir, "", llm_url).await;
    tokio::time::sleep(IDLE_SAMPLE).await;
    server.control("-d");
    write_order(&profiled_binary(), &server.dumps(), file, true);
}

fn read_baseline() -> BTreeMap<String, u64> {
    std::fs::read_to_string(BASELINE)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| {
            let (k, v) = l.split_once('=')?;
            Some((k.trim().to_string(), v.trim().replace('_', "").parse().ok()?))
        })
        .collect()
}

fn write_baseline(figures: &BTreeMap<String, u64>) {
    let mut text = String::from(
        "# Instructions Butler executes per web chat turn under `cargo bench --bench gate`\n\
         # (callgrind, release build, zero-latency fake model). Update with BENCH_GATE_UPDATE=1\n\
         # after a change that is meant to move it, and say why in the commit.\n",
    );
    for (k, v) in figures {
        text.push_str(&format!("{k} = {v}\n"));
    }
    std::fs::write(BASELINE, text).unwrap();
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let failed = rt.block_on(async {
        let llm = FakeLlm::start().await;
        llm.set_record_limit(0);
        let llm_url = llm.openai_url();
        let turns = env_usize("BENCH_GATE_TURNS", 100).max(2);
        let tolerance = env_usize("BENCH_GATE_TOLERANCE", 10) as f64;
        let update = std::env::var("BENCH_GATE_UPDATE").is_ok_and(|v| v == "1");
        let backends = std::env::var("BENCH_BACKENDS").unwrap_or_else(|_| "sqlite,postgres".into());
        let mut baseline = read_baseline();
        let mut failed = false;
        for backend in ["sqlite", "postgres"].into_iter().filter(|b| backends.contains(b)) {
            let db = if backend == "postgres" { Some(PgTestDb::create().await) } else { None };
            let url = db.as_ref().map_or(String::new(), |d| d.url.clone());
            if let Some(file) = order_file().filter(|_| backend == "sqlite") {
                idle_order(&llm_url, &file).await;
            }
            let m = measure(backend, &url, &llm_url, turns).await;
            drop(db);
            if order_file().is_some() {
                // Symbols are not the names the profile counts: no comparison.
                continue;
            }
            // The count depends on glibc's allocator settings (the run gives serve's own), not
            // measurably on the processor: AMD EPYC and Intel Xeon agree within 2%.
            let key = format!("{backend}_instructions_per_turn");
            let base = baseline.get(&key).copied();
            let change = base.map_or(0.0, |b| (m.per_turn as f64 - b as f64) * 100.0 / b as f64);
            println!(
                "bench=gate backend={backend} turns={turns} instructions_per_turn={} baseline={} change_pct={change:+.1} \
                 tolerance_pct={tolerance} raw_instructions_per_turn={} idle_instructions_per_s={}",
                m.per_turn,
                base.map_or("none".to_string(), |b| b.to_string()),
                m.raw_per_turn,
                m.idle_per_sec,
            );
            println!("{}", m.profile);
            if update {
                baseline.insert(key, m.per_turn);
            } else if base.is_none() {
                eprintln!("gate: no baseline for {backend}: run with BENCH_GATE_UPDATE=1 and commit {BASELINE}");
                failed = true;
            } else if change > tolerance {
                eprintln!(
                    "gate: {backend} turns cost {change:+.1}% instructions against the committed baseline \
                     (tolerance {tolerance}%): find the cause, or update the baseline if it is meant"
                );
                failed = true;
            } else if change < -tolerance {
                eprintln!("gate: {backend} is {change:.1}% cheaper than the baseline: update it (BENCH_GATE_UPDATE=1)");
            }
        }
        if update {
            write_baseline(&baseline);
        }
        if order_file().is_none() && !hot_code(&profiled_binary()) {
            failed = true;
        }
        failed
    });
    if failed {
        std::process::exit(1);
    }
}
