//! Running the real `butler` binary in tests: a config file in a temp dir, a free port, start,
//! wait for readiness, SIGTERM or SIGKILL, and reading what it logged.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

pub fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_butler")
}

/// A free loopback port (bound and released; fine for tests).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A test deployment: its directory, config file and port.
pub struct Deployment {
    pub dir: tempfile::TempDir,
    pub port: u16,
    pub config: PathBuf,
}

impl Deployment {
    /// Writes `config/butler.toml` with a SQLite database in the temp dir, the given port and
    /// `extra` TOML appended (e.g. an `[llm]` section).
    pub fn new(extra: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let db = dir.path().join("butler.db");
        let config = dir.path().join("butler.toml");
        let text = format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\nshutdown_grace_secs = 10\n\n[database]\nurl = \"sqlite://{}\"\n\n\
             [memory]\narchivist = false\n\n{extra}\n",
            db.display()
        );
        std::fs::write(&config, text).unwrap();
        Self { dir, port, config }
    }

    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn db_url(&self) -> String {
        format!("sqlite://{}", self.dir.path().join("butler.db").display())
    }

    /// `butler <args> --config <file>` with a clean environment; output goes to log files.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = clean_command(self.dir.path());
        cmd.args(args).arg("--config").arg(&self.config);
        cmd
    }

    /// Starts `butler serve` with `vars` added to its clean environment (e.g. a canary secret
    /// exported the README way) and waits until /readyz answers 200.
    pub async fn serve_with_env(&self, vars: &[(&str, &str)]) -> Server {
        let log = self.dir.path().join("serve-env.log");
        let mut cmd = self.command(&["serve"]);
        cmd.envs(vars.iter().copied());
        Server::start(cmd, log, &self.base()).await
    }

    /// Starts `butler serve` and waits until /readyz answers 200.
    pub async fn serve(&self) -> Server {
        let n = std::fs::read_dir(self.dir.path()).map(|d| d.count()).unwrap_or(0);
        let log = self.dir.path().join(format!("serve-{n}.log"));
        Server::start(self.command(&["serve"]), log, &self.base()).await
    }
}

/// A command for the binary with only PATH, HOME and a quiet log level in its environment.
pub fn clean_command(cwd: &Path) -> Command {
    let mut cmd = Command::new(binary());
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", cwd)
        .env("RUST_LOG", std::env::var("BUTLER_TEST_CHILD_LOG").unwrap_or_else(|_| "info,sqlx=warn".into()))
        .current_dir(cwd);
    cmd
}

pub struct Server {
    pub child: Child,
    pub log: PathBuf,
}

impl Server {
    /// Spawns `cmd` (a `serve` command) with stdout discarded and stderr in `log`, and waits
    /// until `base`/readyz answers 200.
    pub async fn start(mut cmd: Command, log: PathBuf, base: &str) -> Self {
        cmd.stdout(Stdio::null()).stderr(std::fs::File::create(&log).unwrap());
        let mut server = Server { child: cmd.spawn().expect("spawn butler serve"), log };
        server.wait_ready(base).await;
        server
    }

    pub async fn wait_ready(&mut self, base: &str) {
        let client = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "butler exited with {status} before it was ready; log {}:\n{}",
                    self.log.display(),
                    self.log_text()
                );
            }
            if let Ok(r) = client.get(format!("{base}/readyz")).send().await {
                if r.status() == 200 {
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("butler did not become ready; log {}:\n{}", self.log.display(), self.log_text());
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGKILL: no chance to clean up.
    pub fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// SIGTERM, then wait up to `within` for the exit status.
    pub async fn terminate(self, within: Duration) -> ExitStatus {
        signal(self.child.id(), "TERM");
        self.wait_exit(within).await
    }

    /// Waits up to `within` for the process to exit on its own.
    pub async fn wait_exit(mut self, within: Duration) -> ExitStatus {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() > deadline {
                let log = self.log_text();
                let _ = self.child.kill();
                panic!("butler did not exit within {within:?}; log:\n{log}");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends a signal (`TERM`, `INT`, `KILL`) to a process.
pub fn signal(pid: u32, name: &str) {
    let ok = Command::new("kill").arg(format!("-{name}")).arg(pid.to_string()).status().unwrap().success();
    assert!(ok, "kill -{name} {pid} failed");
}

/// `text` without ANSI colour sequences (`ESC [ ... <letter>`), for reading logs.
pub fn without_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A TCP listener on 127.0.0.1 that accepts and counts connections (for network probes);
/// returns its port and the count.
pub async fn counting_listener() -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = std::sync::Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((_socket, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
        }
    });
    (port, accepted)
}
