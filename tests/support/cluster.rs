//! Several real `butler serve` replicas on one Postgres database and one Redis: a private
//! `redis-server` per test (so it can be restarted without touching anyone else's), a TCP
//! proxy in front of Postgres that a test can cut and restore (a database outage without
//! stopping the shared server), and the replicas themselves, each with its own port and log.
//!
//! It must never stop or reconfigure the machine's shared Postgres or Redis.

use super::db::PgTestDb;
use super::proc::{clean_command, free_port, signal, Server};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::task::AbortHandle;

/// A private `redis-server` on a free port that keeps nothing on disk.
pub struct RedisServer {
    pub port: u16,
    child: Option<Child>,
    dir: tempfile::TempDir,
}

impl RedisServer {
    pub async fn start() -> Self {
        let mut me = Self { port: free_port(), child: None, dir: tempfile::tempdir().unwrap() };
        me.spawn().await;
        me
    }

    async fn spawn(&mut self) {
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .current_dir(self.dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server (apt-get install redis-server)");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while tokio::net::TcpStream::connect(("127.0.0.1", self.port)).await.is_err() {
            assert!(Instant::now() < deadline, "redis-server did not start on {}", self.port);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Kills the server (its data is gone: it keeps nothing on disk).
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts it again on the same port, empty.
    pub async fn restart(&mut self) {
        self.stop();
        self.spawn().await;
    }

    /// A command connection for the test's own reads.
    pub async fn conn(&self) -> redis::aio::MultiplexedConnection {
        let client = redis::Client::open(self.url()).unwrap();
        client.get_multiplexed_async_connection().await.unwrap()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A TCP proxy on a free port to `target`; `cut` closes every connection and refuses new ones
/// until `restore`.
pub struct TcpProxy {
    pub port: u16,
    up: Arc<AtomicBool>,
    conns: Arc<Mutex<Vec<AbortHandle>>>,
    accept: AbortHandle,
}

impl TcpProxy {
    pub async fn start(target: (&'static str, u16)) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let up = Arc::new(AtomicBool::new(true));
        let conns: Arc<Mutex<Vec<AbortHandle>>> = Arc::default();
        let (up2, conns2) = (up.clone(), conns.clone());
        let accept = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                if !up2.load(Ordering::SeqCst) {
                    drop(inbound);
                    continue;
                }
                let task = tokio::spawn(async move {
                    if let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                conns2.lock().unwrap().push(task.abort_handle());
            }
        })
        .abort_handle();
        Self { port, up, conns, accept }
    }

    pub fn cut(&self) {
        self.up.store(false, Ordering::SeqCst);
        for c in self.conns.lock().unwrap().drain(..) {
            c.abort();
        }
    }

    pub fn restore(&self) {
        self.up.store(true, Ordering::SeqCst);
    }
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.cut();
    }
}

/// One replica: its config and, while it runs, its process.
pub struct Replica {
    pub port: u16,
    pub config: PathBuf,
    pub server: Option<Server>,
    starts: usize,
}

impl Replica {
    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn pid(&self) -> Option<u32> {
        self.server.as_ref().map(|s| s.child.id())
    }
}

/// Replicas sharing one database (through a proxy) and one private Redis.
pub struct Replicas {
    pub db: PgTestDb,
    pub redis: RedisServer,
    pub proxy: TcpProxy,
    pub dir: tempfile::TempDir,
    pub nodes: Vec<Replica>,
}

impl Replicas {
    /// `n` replicas; `extra` is appended to each config (an `[llm]` section, channels). The
    /// lease is short (`lease_ms`) so takeovers happen within a test.
    pub async fn new(n: usize, lease_ms: u64, extra: &str) -> Self {
        Self::build(n, lease_ms, extra, true).await
    }

    /// [`Replicas::new`] with the replicas connected to Postgres directly (the proxy exists
    /// but carries nothing), for benchmarks: the proxy runs in the test's own runtime.
    pub async fn direct(n: usize, lease_ms: u64, extra: &str) -> Self {
        Self::build(n, lease_ms, extra, false).await
    }

    async fn build(n: usize, lease_ms: u64, extra: &str, through_proxy: bool) -> Self {
        let db = PgTestDb::create().await;
        let redis = RedisServer::start().await;
        let proxy = TcpProxy::start(("127.0.0.1", 5432)).await;
        let dir = tempfile::tempdir().unwrap();
        let db_url = if through_proxy { proxied(&db.url, proxy.port) } else { db.url.clone() };
        let nodes = (0..n)
            .map(|i| {
                let port = free_port();
                let config = dir.path().join(format!("replica-{i}.toml"));
                let text = format!(
                    "[server]\nlisten = \"127.0.0.1:{port}\"\nshutdown_grace_secs = 10\n\n\
                     [database]\nurl = \"{db_url}\"\n\n[redis]\nurl = \"{}\"\nlease_ms = {lease_ms}\n\n\
                     [memory]\narchivist = false\n\n{extra}\n",
                    redis.url()
                );
                std::fs::write(&config, text).unwrap();
                Replica { port, config, server: None, starts: 0 }
            })
            .collect();
        Self { db, redis, proxy, dir, nodes }
    }

    /// Starts replica `i` and waits until it is ready.
    pub async fn start(&mut self, i: usize) {
        let node = &mut self.nodes[i];
        let log = self.dir.path().join(format!("replica-{i}-{}.log", node.starts));
        node.starts += 1;
        let mut cmd = clean_command(self.dir.path());
        cmd.arg("serve").arg("--config").arg(&node.config);
        node.server = Some(Server::start(cmd, log, &node.base()).await);
    }

    pub async fn start_all(&mut self) {
        for i in 0..self.nodes.len() {
            self.start(i).await;
        }
    }

    /// SIGKILL replica `i`.
    pub fn kill(&mut self, i: usize) {
        if let Some(s) = self.nodes[i].server.take() {
            s.kill();
        }
    }

    /// SIGSTOP / SIGCONT replica `i`.
    pub fn pause(&self, i: usize) {
        signal(self.nodes[i].pid().expect("running"), "STOP");
    }

    pub fn resume(&self, i: usize) {
        signal(self.nodes[i].pid().expect("running"), "CONT");
    }

    /// The replica whose process id starts the worker id `worker` (`<pid>-<random>`).
    pub fn by_worker(&self, worker: &str) -> Option<usize> {
        let pid: u32 = worker.split('-').next()?.parse().ok()?;
        self.nodes.iter().position(|n| n.pid() == Some(pid))
    }

    /// The replica holding lease `name` (`session:<key>`, `receiver:telegram`, `reaper`).
    pub async fn holder(&self, name: &str) -> Option<usize> {
        let mut c = self.redis.conn().await;
        let worker: Option<String> =
            redis::cmd("GET").arg(format!("butler:lease:{name}")).query_async(&mut c).await.ok()?;
        self.by_worker(&worker?)
    }

    /// Every replica's log so far, for failure messages.
    pub fn logs(&self) -> String {
        let mut out = String::new();
        for e in std::fs::read_dir(self.dir.path()).unwrap().flatten() {
            if e.path().extension().is_some_and(|x| x == "log") {
                let text = std::fs::read_to_string(e.path()).unwrap_or_default();
                let tail: Vec<&str> = text.lines().rev().take(60).collect();
                out.push_str(&format!("--- {}\n", e.path().display()));
                for l in tail.into_iter().rev() {
                    out.push_str(l);
                    out.push('\n');
                }
            }
        }
        out
    }
}

/// `url` pointed at 127.0.0.1:`port` instead of its host and port.
pub fn proxied(url: &str, port: u16) -> String {
    let (scheme, rest) = url.split_once("://").unwrap();
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let creds = authority.rsplit_once('@').map(|(c, _)| format!("{c}@")).unwrap_or_default();
    format!("{scheme}://{creds}127.0.0.1:{port}/{path}")
}
