//! Scheduler benchmark: 100,000 active jobs (crons from every-six-hours to monthly, in eight time
//! zones) on SQLite and on Postgres, the real tick (`Schedules::tick`, driven like
//! `Schedules::run`: every second, or sooner when a job is due sooner) with the real inbox
//! ingress. BENCH_DUE of the jobs (default 10,000) are moved to fire times in the next 10
//! seconds, in ten bursts that fire at the same instant (as many "0 8 * * *" jobs do), and the
//! loop runs until 3 seconds after the last burst.
//!
//! Measured: this process's CPU time (user + system, `getrusage`; for Postgres the server's own
//! CPU is not included) per tick, over all ticks, over the ticks that fired something and over
//! the idle ones; and the delay from each fire time to its claim and hand-over to the inbox
//! (p50 / p99 / max). Setting the jobs up is not measured.
//!
//! Run: `cargo bench --bench scheduler` (Postgres from BUTLER_TEST_PG_URL, default
//! postgres://postgres:postgres@127.0.0.1:5432/postgres; skip it with BENCH_BACKENDS=sqlite).
//! Tunables: BENCH_SCHEDULES (default 100000), BENCH_DUE (default 10000). Each backend prints
//! one machine-readable summary line starting with `bench=scheduler`.

#[path = "../tests/support/mod.rs"]
#[allow(unused_imports)]
mod support;

use async_trait::async_trait;
use butler::channel::{Accepted, InboundEvent, Ingress, IngressError};
use butler::config::{AccessConfig, Missed, ScheduleMode};
use butler::ingress::InboxIngress;
use butler::schedule::{jobs, sleep_for, JobOwner, JobSpec, Schedules};
use butler::store::{now_ms, ScheduleSource, Store};
use butler::triage::Access;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::bench::env_usize;
use support::db::{PgTestDb, SqliteTestDb};

const PATTERNS: [&str; 10] = [
    "0 */6 * * *",
    "0 7 * * *",
    "30 7 * * 1-5",
    "0 8 * * *",
    "15 9 * * MON",
    "0 0 1 * *",
    "*/15 8-18 * * 1-5",
    "0 12 L * *",
    "45 23 * * 5#L",
    "0 6 * * 0,6",
];
const ZONES: [&str; 8] = [
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "America/Sao_Paulo",
    "Asia/Tokyo",
    "Australia/Sydney",
    "Asia/Kolkata",
    "America/Los_Angeles",
];

/// CPU time (user + system) of this process, in microseconds.
fn cpu_us() -> i64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage only writes into the struct we pass.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    };
    let us = |t: libc::timeval| t.tv_sec * 1_000_000 + t.tv_usec;
    us(usage.ru_utime) + us(usage.ru_stime)
}

/// The real inbox ingress, noting when each event (fire time `at_ms`) was handed over.
struct Timed {
    inner: InboxIngress,
    delays: Mutex<Vec<i64>>,
}

#[async_trait]
impl Ingress for Timed {
    async fn accept(&self, event: InboundEvent) -> Result<Accepted, IngressError> {
        let at = event.at_ms;
        let r = self.inner.accept(event).await;
        self.delays.lock().unwrap().push(now_ms() - at);
        r
    }
}

/// Job number `i` of the mix (a cron in a zone, for one of 50 targets).
fn spec(i: usize) -> JobSpec {
    JobSpec {
        name: Some(format!("job-{i}")),
        cron: Some(PATTERNS[i % PATTERNS.len()].into()),
        at: None,
        tz: ZONES[i % ZONES.len()].into(),
        prompt: format!("Brief me, number {i}."),
        target: format!("web:bench-{}", i % 50),
        mode: if i.is_multiple_of(7) { ScheduleMode::Heartbeat } else { ScheduleMode::Always },
        missed: Missed::RunOnce,
        grace_secs: 3600,
    }
}

/// Stores jobs `range` (with `workers` writers at once); `fire_at(i)` overrides the first fire
/// time of job `i` (the cron still decides every later one).
async fn setup(
    store: Arc<dyn Store>,
    range: std::ops::Range<usize>,
    workers: usize,
    fire_at: Option<Arc<dyn Fn(usize) -> i64 + Send + Sync>>,
) {
    let mut tasks = Vec::new();
    for w in 0..workers {
        let (store, range, fire_at) = (store.clone(), range.clone(), fire_at.clone());
        tasks.push(tokio::spawn(async move {
            let owner = JobOwner { identity: "cli:local".parse().unwrap(), user_id: Some("local".into()) };
            for i in range.skip(w).step_by(workers) {
                let mut new = jobs::build(&spec(i), &owner, ScheduleSource::Cli, now_ms()).expect("valid job");
                if let Some(f) = &fire_at {
                    new.next_fire_ms = Some(f(i));
                }
                store.schedule_put(&new).await.expect("stored");
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

fn percentile(sorted: &[i64], p: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

async fn scenario(backend: &str, url: &str, schedules: usize, due: usize) {
    let store = butler::store::connect(url, 8).await.expect("open the store");
    store.migrate().await.expect("migrate");
    let started = Instant::now();
    let workers = if backend == "sqlite" { 1 } else { 8 };
    let regular = schedules - due;
    setup(store.clone(), 0..regular, workers, None).await;
    // The due jobs are stored last, firing in ten bursts one second apart, the first one 2 s
    // after they are all stored (estimated from how fast the others were stored).
    let per_job_ms = started.elapsed().as_secs_f64() * 1000.0 / regular.max(1) as f64;
    let base = (now_ms() + 2_000 + (per_job_ms * due as f64 * 1.5) as i64) / 1000 * 1000;
    let fire_at: Arc<dyn Fn(usize) -> i64 + Send + Sync> = Arc::new(move |i| base + (i % 10) as i64 * 1000);
    setup(store.clone(), regular..schedules, workers, Some(fire_at)).await;
    let setup_secs = started.elapsed().as_secs_f64();
    let late_at_start = if now_ms() > base { (now_ms() - base) / 1000 + 1 } else { 0 };
    let access = Arc::new(Access::new(&AccessConfig::default(), ["cli:local".parse().unwrap()], "UTC"));
    let sched = Schedules::new(&[], store.clone(), store.clone(), access);
    let ingress = Timed {
        inner: InboxIngress::new(store.clone(), Arc::new(tokio::sync::Notify::new())),
        delays: Mutex::new(vec![]),
    };
    let every = butler::schedule::DEFAULT_TICK;
    // Until 3 s after the last burst.
    let deadline = Instant::now() + Duration::from_millis((base + 12_000 - now_ms()).max(0) as u64);
    let (mut busy, mut idle, mut fired) = (Vec::new(), Vec::new(), 0);
    while Instant::now() < deadline {
        let now = now_ms();
        let cpu0 = cpu_us();
        let report = sched.tick(&ingress, now).await.expect("tick");
        let spent = cpu_us() - cpu0;
        fired += report.fired;
        if report.fired > 0 {
            busy.push(spent)
        } else {
            idle.push(spent)
        }
        tokio::time::sleep(sleep_for(report.next_due_ms, now_ms(), every)).await;
    }
    let mut delays = ingress.delays.lock().unwrap().clone();
    delays.sort_unstable();
    let ticks = busy.len() + idle.len();
    let avg = |v: &[i64]| if v.is_empty() { 0.0 } else { v.iter().sum::<i64>() as f64 / v.len() as f64 / 1000.0 };
    let all: Vec<i64> = busy.iter().chain(idle.iter()).copied().collect();
    println!(
        "bench=scheduler backend={backend} schedules={} due={due} fired={fired} ticks={ticks} busy_ticks={} \
         cpu_ms_per_tick={:.2} cpu_ms_per_busy_tick={:.1} cpu_ms_per_idle_tick={:.3} cpu_us_per_fire={:.0} \
         p50_delay_ms={} p99_delay_ms={} max_delay_ms={} bursts_due_before_start={late_at_start} setup_s={setup_secs:.1}",
        schedules,
        busy.len(),
        avg(&all),
        avg(&busy),
        avg(&idle),
        if fired == 0 { 0.0 } else { busy.iter().sum::<i64>() as f64 / fired as f64 },
        percentile(&delays, 0.5),
        percentile(&delays, 0.99),
        delays.last().copied().unwrap_or(0),
    );
    store.close().await;
}

fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let schedules = env_usize("BENCH_SCHEDULES", 100_000);
    let due = env_usize("BENCH_DUE", 10_000).min(schedules);
    let backends = std::env::var("BENCH_BACKENDS").unwrap_or_else(|_| "sqlite,postgres".into());
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        for backend in backends.split(',').map(str::trim) {
            match backend {
                "sqlite" => {
                    let db = SqliteTestDb::new();
                    scenario("sqlite", &db.url, schedules, due).await;
                }
                "postgres" => {
                    let db = PgTestDb::create().await;
                    scenario("postgres", &db.url, schedules, due).await;
                }
                other => eprintln!("unknown backend `{other}` in BENCH_BACKENDS"),
            }
        }
    });
}
