//! The real `butler serve` for benchmarks: started from a config file in its own temp dir,
//! ready when /readyz answers 200, stopped with SIGTERM (SIGKILL after 20 s) when dropped; and
//! its memory as /proc reports it; latency percentiles as the benchmarks print them. It must
//! never leave a process behind.

use super::proc::binary;
use futures::StreamExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A number from the environment, or `default` when unset or not a number.
pub fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Writes the benchmarks' `butler.toml` into `dir`: listening on `port`, the database at
/// `db_url` (a SQLite file in `dir` when empty), the OpenAI protocol at `llm_url`, the archivist
/// off, and `extra` TOML appended. Returns its path.
pub fn bench_config(dir: &Path, port: u16, db_url: &str, llm_url: &str, extra: &str) -> std::path::PathBuf {
    let url = if db_url.is_empty() { format!("sqlite://{}", dir.join("butler.db").display()) } else { db_url.into() };
    // BENCH_DB_CONNECTIONS: `[database] max_connections` (default 8).
    let connections = env_usize("BENCH_DB_CONNECTIONS", 8);
    let config = dir.join("butler.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\n[database]\nurl = \"{url}\"\nmax_connections = {connections}\n\
             [llm]\nbase_url = \"{llm_url}\"\nmodel = \"bench\"\nmax_retries = 0\n\
             [memory]\narchivist = false\n{extra}"
        ),
    )
    .unwrap();
    config
}

/// Waits until `{base}/readyz` answers 200, asking every `every`; panics after `limit`.
pub async fn wait_ready(base: &str, limit: Duration, every: Duration) {
    let client = reqwest::Client::new();
    let started = Instant::now();
    loop {
        if let Ok(r) = client.get(format!("{base}/readyz")).send().await {
            if r.status() == 200 {
                return;
            }
        }
        assert!(started.elapsed() < limit, "butler did not become ready within {limit:?}");
        tokio::time::sleep(every).await;
    }
}

pub struct Serve {
    pub child: Child,
    pub base: String,
    /// The folder it runs in, removed on drop unless the caller keeps it ([`Serve::start_in`]).
    _dir: Option<tempfile::TempDir>,
}

impl Serve {
    /// Starts `butler serve` on a fresh SQLite database in its own temp dir, with the OpenAI
    /// protocol at `llm_url`, the archivist off, and `extra` TOML appended (`{dir}` in it is
    /// the temp dir).
    pub async fn sqlite(llm_url: &str, extra: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let port = super::proc::free_port();
        let config = dir.path().join("butler.toml");
        let text = format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\n[database]\nurl = \"sqlite://{db}\"\nmax_connections = 8\n\
             [llm]\nprovider = \"openai\"\nbase_url = \"{llm_url}\"\nmodel = \"bench\"\nmax_retries = 0\n\
             [memory]\narchivist = false\n{extra}\n",
            db = dir.path().join("butler.db").display(),
            extra = extra.replace("{dir}", &dir.path().display().to_string()),
        );
        std::fs::write(&config, text).unwrap();
        Self::start(dir, &config, port).await.0
    }

    /// Starts `butler serve --config <config>` (inside `dir`, which it keeps) listening on
    /// `port`; returns it and the time from spawn to ready.
    pub async fn start(dir: tempfile::TempDir, config: &Path, port: u16) -> (Self, Duration) {
        let (mut serve, ready) = Self::start_in(dir.path(), config, port).await;
        serve._dir = Some(dir);
        (serve, ready)
    }

    /// [`Serve::start`] in a folder the caller keeps (a database that outlives the process).
    pub async fn start_in(dir: &Path, config: &Path, port: u16) -> (Self, Duration) {
        let base = format!("http://127.0.0.1:{port}");
        let started = Instant::now();
        // BENCH_BINARY: another build of `butler` to measure (an older one, to compare).
        let program = std::env::var("BENCH_BINARY").unwrap_or_else(|_| binary().to_string());
        let child = Command::new(program)
            .args(["serve", "--config"])
            .arg(config)
            .env("RUST_LOG", "warn")
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn butler serve");
        let serve = Self { child, base, _dir: None };
        wait_ready(&serve.base, Duration::from_secs(60), Duration::from_millis(1)).await;
        (serve, started.elapsed())
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status();
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A field of /proc/<pid>/status in MiB (VmRSS now, VmHWM the peak); 0 if unreadable.
pub fn proc_mib(pid: u32, field: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field).and_then(|r| r.trim_start_matches(':').split_whitespace().next()))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// The `p` quantile (0.0 to 1.0, nearest rank) of `sorted` latencies, in milliseconds; 0 when
/// there are none.
pub fn percentile_ms(sorted: &[std::time::Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

/// CPU time (user + system) a process has used, from /proc/<pid>/stat (clock ticks of 10 ms).
pub fn cpu_secs(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may contain spaces) start at field 3.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

/// One conversation: `turns` messages, each waited for until its final reply arrives on the
/// conversation's event stream. Returns the per-turn latencies.
pub async fn web_conversation(client: reqwest::Client, base: String, conv: String, turns: usize) -> Vec<Duration> {
    let post = |text: String| {
        client
            .post(format!("{base}/api/v1/messages"))
            .json(&serde_json::json!({"conversation": conv, "user": "local", "text": text}))
            .send()
    };
    // Create the conversation, then listen to it.
    assert_eq!(post("hello".into()).await.unwrap().status(), 202);
    let resp = client.get(format!("{base}/api/v1/conversations/{conv}/stream")).send().await.unwrap();
    let mut body = resp.bytes_stream();
    let mut buf = String::new();
    let mut finals = 0usize;
    let mut latencies = Vec::with_capacity(turns);
    // The greeting's reply may arrive before or after the stream opened: count replies by id.
    let mut seen = std::collections::HashSet::new();
    let mut pending: Option<Instant> = None;
    let mut sent = 0;
    loop {
        if pending.is_none() {
            if sent == turns {
                break;
            }
            sent += 1;
            pending = Some(Instant::now());
            assert_eq!(post(format!("message {sent}")).await.unwrap().status(), 202);
        }
        let chunk = tokio::time::timeout(Duration::from_secs(30), body.next()).await.expect("reply within 30s");
        let chunk = chunk.expect("stream open").expect("stream chunk");
        buf.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buf.find("\n\n") {
            let block: String = buf.drain(..end + 2).collect();
            let data: String = block.lines().filter_map(|l| l.strip_prefix("data: ")).collect();
            let Ok(v) = serde_json::from_str::<serde_json::Value>(&data) else { continue };
            let is_final = v["role"] == "assistant"
                && v.get("draft").is_none()
                && v["buttons"].as_array().is_some_and(|b| b.is_empty());
            if is_final && seen.insert(v["id"].as_i64().unwrap_or(-1)) {
                finals += 1;
                // Reply number `finals - 1` answers message number `finals - 1` (0 = greeting).
                if finals > 1 && finals - 1 == sent {
                    if let Some(t0) = pending.take() {
                        latencies.push(t0.elapsed());
                    }
                }
            }
        }
    }
    latencies
}

/// Least-squares slope of `(seconds, value)` points, per hour (0 with fewer than 3 points).
pub fn slope_per_hour(points: &[(f64, f64)]) -> f64 {
    let points: Vec<(f64, f64)> = points.iter().copied().filter(|(_, y)| y.is_finite()).collect();
    let n = points.len() as f64;
    if n < 3.0 {
        return 0.0;
    }
    let (sx, sy) = points.iter().fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
    let (mx, my) = (sx / n, sy / n);
    let (num, den) = points.iter().fold((0.0, 0.0), |(a, b), (x, y)| (a + (x - mx) * (y - my), b + (x - mx).powi(2)));
    if den == 0.0 {
        0.0
    } else {
        num / den * 3600.0
    }
}
