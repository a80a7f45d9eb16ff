//! The one-process soak (issue 36, point 4): one `butler serve` (the release build under `cargo
//! bench`) on the embedded default SQLite, under a steady mixed load through the web API and
//! every chat platform fake for hours, watched for anything that grows after warm-up.
//!
//! The load, per tick (`BENCH_SOAK_TICK_MS`): a message through the web API in a conversation
//! of its own, the kinds taking turns (a plain message; a file uploaded with `POST
//! /api/v1/files` and attached; a `file_write` that asks, clicked through `/api/v1/actions`; a
//! call of the stdio MCP server's `echo` (this bench binary re-run as the server, in Butler's
//! bubblewrap sandbox); a background `delegate`, whose report starts a turn of its own; the HTTP
//! MCP server's `echo`; a foreground `delegate`); and one of the six platform people (Telegram,
//! Slack, Discord, WhatsApp, Signal, email; `tests/support/platforms.rs`) in turn writes to
//! Butler in their direct conversation if their last message was answered: a plain message, a
//! `file_write` approved through the platform (a button, a 👍 reaction, an APPROVE reply), an MCP
//! call (stdio or HTTP), a helper. Every person's waiting message is looked at every tick. A job
//! scheduled every minute runs throughout. The fake model answers instantly (scripted per message
//! in `soak_one/script.rs`), so the load is Butler's own work. Matrix is left out: Synapse is a
//! second large Python process on a two-core machine, and the matrix-sdk client's own stores
//! would be measured with Butler's.
//!
//! Measured: every message gets each of its answers exactly once (`lost`, `doubled`; after the
//! load stops, up to 3 minutes for the last ones), the scheduled job ran once per minute, no MCP
//! or file tool call failed; and, sampled every `BENCH_SOAK_SAMPLE_SECS` after the warm-up, the
//! process's resident memory (VmRSS, RssAnon), open files, threads, database connections (the
//! descriptors open on the SQLite file), the WAL file's size, and from /metrics the live session
//! actors and the turns and deliveries in flight (`soak_one/sample.rs`; Butler has no tokio task
//! gauge: its tasks belong to those). Each series' least-squares slope per hour is printed, and
//! checked against a bound (`sample::BOUNDS`).
//!
//! The bounds: a healthy process, after the warm-up, holds each series level with noise; a real
//! leak grows with the work done, which at this load is thousands of turns an hour. Resident
//! memory: 24 MiB/h. A leak of 1 MiB a minute (60 MiB/h) fails it by more than twice; a heap that
//! settles wanders a few MiB, under 20 MiB/h over a 20-minute window and far less over 6 hours.
//! Open files 30/h and threads 20/h: one descriptor or thread lost per minute (60/h) fails, one
//! per turn fails by a hundredfold, while sockets and blocking threads that come and go with the
//! load stay within it. Database connections 6/h: the pools are bounded, so any lasting growth is
//! a leak. WAL 16 MiB/h: SQLite reuses the WAL after each checkpoint, so it grows only while
//! checkpoints starve (a reader never letting go), which is the failure to catch. Live sessions
//! 60/h and work in flight 20/h: both follow the load and return to it (`[limits]
//! session_idle_secs` is 60 here, so the population of actors is steady within the warm-up);
//! one actor, turn or delivery left behind each minute fails.
//!
//! Run: `cargo bench --bench soak_one` (needs bubblewrap and Dovecot, as `tests/run` installs).
//! Tunables: BENCH_SOAK_SECS (default 21600 = 6 h), BENCH_SOAK_WARMUP_SECS (default 10% of the
//! run, at least 60), BENCH_SOAK_TICK_MS (default 500), BENCH_SOAK_SAMPLE_SECS (default 10);
//! BENCH_SOAK_CSV names a file to write every sample to (the warm-up's too).
//! `tests/run` runs 20 minutes of it with BUTLER_NIGHTLY=1. Prints one `bench=soak_one` line
//! and a `bench=target` line per bound; exits 1 when a bound is missed or a message was lost or
//! doubled. It must never talk to anything but loopback, and never leave a process behind.

#[path = "../tests/support/mod.rs"]
#[allow(unused_imports)]
mod support;

#[path = "../tests/support/mcp_server.rs"]
#[allow(dead_code)]
mod mcp;

#[path = "soak_one/people.rs"]
mod people;
#[path = "soak_one/report.rs"]
mod report;
#[path = "soak_one/sample.rs"]
mod sample;
#[path = "soak_one/script.rs"]
mod script;
#[path = "soak_one/web.rs"]
mod web;

use people::Person;
use sample::{Sample, Watch};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use support::bench::{bench_config, env_usize, Serve};
use support::fake_llm::FakeLlm;
use support::platforms::Fakes;
use support::proc::free_port;
use tokio_util::sync::CancellationToken;
use web::Web;

/// Messages answered once, not at all, more than once.
#[derive(Clone, Copy, Debug, Default)]
pub struct Tally {
    pub answered: usize,
    pub lost: usize,
    pub doubled: usize,
}

impl std::ops::AddAssign for Tally {
    fn add_assign(&mut self, o: Self) {
        self.answered += o.answered;
        self.lost += o.lost;
        self.doubled += o.doubled;
    }
}

/// The run's shape, from the environment.
pub struct Tunables {
    pub secs: u64,
    pub warmup: u64,
    pub tick: Duration,
    pub sample: Duration,
}

impl Tunables {
    fn from_env() -> Self {
        let secs = env_usize("BENCH_SOAK_SECS", 21_600) as u64;
        let warmup = env_usize("BENCH_SOAK_WARMUP_SECS", (secs / 10).max(60) as usize) as u64;
        Self {
            secs,
            warmup,
            tick: Duration::from_millis(env_usize("BENCH_SOAK_TICK_MS", 500) as u64),
            sample: Duration::from_secs(env_usize("BENCH_SOAK_SAMPLE_SECS", 10).max(1) as u64),
        }
    }
}

/// Butler's config beyond the bench defaults: sessions that retire after a minute idle, the job
/// that runs every minute, both MCP servers (read-only, so they never ask), the platforms.
fn extra_config(mcp_http: &str, sections: &str) -> String {
    let exe = std::env::current_exe().expect("bench binary path");
    format!(
        "[limits]\nsession_idle_secs = 60\n\n\
         [[schedules]]\nname = \"soak\"\ncron = \"* * * * *\"\nprompt = \"sched tick\"\ntarget = \"web:soak-sched\"\n\n\
         [[mcp.servers]]\nname = \"stdio\"\ncommand = \"{exe}\"\nread_only = true\nenv = {{ {role} = \"stdio\" }}\n\n\
         [[mcp.servers]]\nname = \"http\"\nurl = \"{mcp_http}\"\nread_only = true\n\n{sections}\n",
        exe = exe.display(),
        role = mcp::ROLE_VAR,
    )
}

/// Pings through the web API until a model request offers both MCP servers' `echo` (they join
/// after start-up).
async fn wait_for_tools(llm: &FakeLlm, base: &str) {
    let http = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    for i in 0.. {
        let before = llm.request_count();
        let body = serde_json::json!({"conversation": "warmup", "user": "local", "text": format!("ping {i}")});
        let _ = http.post(format!("{base}/api/v1/messages")).json(&body).send().await;
        assert!(llm.wait_for_requests(before + 1, Duration::from_secs(20)).await, "no model request");
        let offered: Vec<String> = llm
            .last_request()
            .map(|r| r.tools().iter().filter_map(|t| t["function"]["name"].as_str().map(String::from)).collect())
            .unwrap_or_default();
        if ["stdio__echo", "http__echo"].iter().all(|t| offered.iter().any(|o| o == t)) {
            return;
        }
        assert!(Instant::now() < deadline, "the MCP tools never reached the model: {offered:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits (60 s at most) until every platform's side of Butler is up.
async fn wait_live(people: &[Person]) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while let Some(p) = people.iter().find(|p| !p.fake.live()) {
        assert!(Instant::now() < deadline, "{} never came up", p.name());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Whole minutes of the clock from `a` to `b` (the scheduled job's fire times between them).
fn minute_marks(a: SystemTime, b: SystemTime) -> u64 {
    let m = |t: SystemTime| t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() / 60);
    m(b).saturating_sub(m(a))
}

/// The GET of `{base}/metrics` as text (empty when it does not answer).
async fn metrics(http: &reqwest::Client, base: &str) -> String {
    match http.get(format!("{base}/metrics")).send().await {
        Ok(r) => r.text().await.unwrap_or_default(),
        Err(_) => String::new(),
    }
}

/// Runs the soak; whether every check held. Everything it started is stopped before it returns.
async fn run(t: Tunables) -> bool {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let llm = FakeLlm::start().await;
    llm.set_record_limit(20);
    script::shared_rules(&llm);
    let ct = CancellationToken::new();
    let mcp_http = format!("http://{}/mcp", mcp::serve_http(ct.clone()).await);
    let fakes = Fakes::start(true).await;
    let sections = fakes.direct().sections();
    let dir = tempfile::tempdir().expect("temp dir");
    let port = free_port();
    let config = bench_config(dir.path(), port, "", &llm.openai_url(), &extra_config(&mcp_http, &sections));
    let (serve, _) = Serve::start_in(dir.path(), &config, port).await;
    let (base, ready_at) = (serve.base.clone(), SystemTime::now());
    // The path as /proc shows what a descriptor points at.
    let db = dir.path().join("butler.db");
    let watch = Watch { pid: serve.child.id(), db: std::fs::canonicalize(&db).unwrap_or(db) };
    let mut people: Vec<Person> = fakes.into_list().into_iter().map(Person::new).collect();
    wait_live(&people).await;
    wait_for_tools(&llm, &base).await;
    let http = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().expect("http client");
    let mut web = Web::new(&base);

    // The load, with a sample every so often.
    let started = Instant::now();
    let mut samples: Vec<Sample> = Vec::new();
    let mut next_sample = started;
    let mut tick = tokio::time::interval(t.tick);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let (mut n, mut ticks) = (0usize, 0usize);
    while started.elapsed() < Duration::from_secs(t.secs) {
        tick.tick().await;
        n += 1;
        web.send(&llm, n, ticks).await;
        web.click(4).await;
        let turn = ticks % people.len();
        for (i, p) in people.iter_mut().enumerate() {
            p.step(&base, &llm, &mut n, i == turn).await;
        }
        ticks += 1;
        if Instant::now() >= next_sample {
            next_sample += t.sample;
            let text = metrics(&http, &base).await;
            samples.push(watch.sample(started.elapsed().as_secs_f64(), &text));
        }
    }
    let load_secs = started.elapsed().as_secs();
    let load_end = SystemTime::now();

    // Everything settles: approvals still to click are clicked, answers still due arrive.
    let deadline = Instant::now() + Duration::from_secs(180);
    let mut unanswered = Some(0);
    while Instant::now() < deadline {
        web.click(16).await;
        for p in people.iter_mut() {
            p.step(&base, &llm, &mut n, false).await;
        }
        if people.iter().all(Person::idle) && web.clicks_waiting() == 0 {
            unanswered = web.all_answered(unanswered.unwrap_or(0)).await;
            if unanswered.is_none() {
                break;
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    // A late double would show by now.
    tokio::time::sleep(Duration::from_secs(5)).await;

    let mut tally = web.tally().await;
    let mut by_channel = vec![format!("web:{}", web.sent())];
    let (mut turns, mut approvals, mut stalls) = (web.sent(), web.approvals, 0);
    for p in &people {
        tally += p.tally();
        by_channel.push(format!("{}:{}", p.name(), p.sent()));
        turns += p.sent();
        approvals += p.approvals;
        stalls += p.stalls;
    }
    let schedule_runs = web.count_answers("soak-sched").await;
    let counted_at = SystemTime::now();
    let last = metrics(&http, &base).await;
    let cpu_secs = support::bench::cpu_secs(watch.pid);
    drop(serve);
    drop(people);
    ct.cancel();

    let facts = report::Facts {
        tunables: &t,
        load_secs,
        turns,
        tally,
        by_channel: by_channel.join(","),
        approvals,
        uploads: web.uploads,
        stalls,
        // At least the minute marks the load spanned; at most those up to the count.
        schedule: (schedule_runs, minute_marks(ready_at, load_end), minute_marks(ready_at, counted_at)),
        metrics: last,
        cpu_secs,
        samples,
    };
    report::print(&facts)
}

fn main() {
    // Started by butler as the stdio MCP server: serve on stdin/stdout, then exit.
    if std::env::var(mcp::ROLE_VAR).as_deref() == Ok("stdio") {
        mcp::serve_stdio_and_exit();
    }
    // `cargo bench` passes `--bench`; nothing else to parse.
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let ok = rt.block_on(run(Tunables::from_env()));
    drop(rt);
    std::process::exit(if ok { 0 } else { 1 });
}
