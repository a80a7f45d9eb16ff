//! The real `butler serve` for benchmarks: started from a config file in its own temp dir,
//! ready when /readyz answers 200, stopped with SIGTERM (SIGKILL after 20 s) when dropped; and
//! its memory as /proc reports it; latency percentiles as the benchmarks print them. It must
//! never leave a process behind.

use super::proc::binary;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Serve {
    pub child: Child,
    pub base: String,
    _dir: tempfile::TempDir,
}

impl Serve {
    /// Starts `butler serve --config <config>` (inside `dir`, which it keeps) listening on
    /// `port`; returns it and the time from spawn to ready.
    pub async fn start(dir: tempfile::TempDir, config: &Path, port: u16) -> (Self, Duration) {
        let client = reqwest::Client::new();
        let base = format!("http://127.0.0.1:{port}");
        let started = Instant::now();
        let child = Command::new(binary())
            .args(["serve", "--config"])
            .arg(config)
            .env("RUST_LOG", "warn")
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn butler serve");
        let serve = Self { child, base, _dir: dir };
        loop {
            if let Ok(r) = client.get(format!("{}/readyz", serve.base)).send().await {
                if r.status() == 200 {
                    break;
                }
            }
            assert!(started.elapsed() < Duration::from_secs(60), "butler did not become ready");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
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
