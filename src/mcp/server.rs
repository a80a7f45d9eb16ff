//! One MCP server: a supervisor task that starts it (a stdio child in its own process group,
//! or a streamable HTTP connection), lists its tools, follows `notifications/tools/list_changed`,
//! restarts it with backoff when it crashes or stops answering, and on stop shuts down the
//! whole process group; plus [`McpServer::call`], one tool call with a timeout that is
//! cancelled (the server is sent `notifications/cancelled`) when it times out, the turn is
//! stopped or the call is dropped.
//!
//! This must never block Butler on a server (start-up runs in the background, every wait has a
//! bound), never pass Butler's environment to a child (only PATH, HOME, LANG and the server's
//! `env`), never leave a process of a server's group or tree running after [`McpServer::stop`]
//! or a drop, and never log an `env` or `headers` value. A stdio server runs in its sandbox
//! ([`super::jail`]) and is restarted when it has more than `max_processes` processes.

use super::config::offered;
use crate::config::McpServerConfig;
use crate::tools::limits::{over_processes, tree, WATCH_SERVER};
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, ClientRequest, JsonObject};
use rmcp::service::{NotificationContext, Peer, RoleClient, ServiceError};
use rmcp::ClientHandler;
use serde_json::Value;
use std::ffi::OsStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, Notify};
use tokio_util::sync::CancellationToken;

/// First wait before a restart; it doubles per failure up to [`MAX_BACKOFF`].
pub const FIRST_BACKOFF: Duration = Duration::from_millis(500);
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How long a server may take to answer a ping after one of its calls timed out.
const PING_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a stdio server gets to exit after its stdin closes, and again after SIGTERM.
const EXIT_GRACE: Duration = Duration::from_secs(2);
/// Processes of a server's tree looked at when it stops.
const MAX_TREE: usize = 4096;

/// One tool as the server lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct RemoteTool {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub schema: Value,
}

/// Where a server stands, for logs, `/tools` and `butler doctor`.
#[derive(Clone, Debug, PartialEq)]
pub enum Status {
    Starting,
    Ready {
        tools: usize,
        round_trip: Duration,
    },
    /// It failed (`why`) and is started again after `retry_in`; `failures` in a row.
    Failed {
        why: String,
        failures: u32,
        retry_in: Duration,
    },
    Stopped,
}

/// Why a call gave no result.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("MCP server `{server}` is not ready: {why}")]
    NotReady { server: String, why: String },
    #[error("MCP server `{server}` did not answer `{tool}` within {secs} s (the call was cancelled)")]
    Timeout { server: String, tool: String, secs: u64 },
    #[error("MCP server `{server}` stopped during `{tool}`; it is being restarted")]
    Crashed { server: String, tool: String },
    #[error("the call of `{tool}` on MCP server `{server}` was stopped")]
    Cancelled { server: String, tool: String },
    #[error("MCP server `{server}` failed `{tool}`: {why}")]
    Protocol { server: String, tool: String, why: String },
}

struct Shared {
    name: String,
    peer: Mutex<Option<Peer<RoleClient>>>,
    tools: Mutex<Arc<[RemoteTool]>>,
    status: Mutex<Status>,
    /// Bumped whenever `tools` changes.
    generation: AtomicU64,
    stop: CancellationToken,
    /// A call timed out: ping the server and restart it if it does not answer.
    suspect: Notify,
    /// Resolves `secret:NAME` in `env` and `headers`; cuts secrets out of results.
    vault: Arc<crate::secrets::Vault>,
}

/// A configured server and its supervisor task.
pub struct McpServer {
    cfg: Arc<McpServerConfig>,
    shared: Arc<Shared>,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl McpServer {
    /// Starts the supervisor in the background and returns at once.
    pub fn start(cfg: McpServerConfig) -> Arc<Self> {
        Self::start_with(cfg, Arc::default())
    }

    /// [`McpServer::start`] with the secrets its `env` and `headers` may name.
    pub fn start_with(cfg: McpServerConfig, vault: Arc<crate::secrets::Vault>) -> Arc<Self> {
        let shared = Arc::new(Shared {
            name: cfg.name.clone(),
            peer: Mutex::new(None),
            tools: Mutex::new(Arc::from(Vec::new())),
            status: Mutex::new(Status::Starting),
            generation: AtomicU64::new(0),
            stop: CancellationToken::new(),
            suspect: Notify::new(),
            vault,
        });
        let cfg = Arc::new(cfg);
        let task = tokio::spawn(supervise(cfg.clone(), shared.clone()));
        Arc::new(Self { cfg, shared, task: Mutex::new(Some(task)) })
    }

    pub fn name(&self) -> &str {
        &self.shared.name
    }

    pub fn config(&self) -> &McpServerConfig {
        &self.cfg
    }

    /// What its results are redacted with.
    pub fn vault(&self) -> &crate::secrets::Vault {
        &self.shared.vault
    }

    pub fn status(&self) -> Status {
        lock(&self.shared.status).clone()
    }

    /// The offered tools (after `tools` / `exclude`) of the current connection.
    pub fn tools(&self) -> Arc<[RemoteTool]> {
        lock(&self.shared.tools).clone()
    }

    /// Changes whenever the tool list does (a reconnect or `list_changed`).
    pub fn generation(&self) -> u64 {
        self.shared.generation.load(Ordering::SeqCst)
    }

    /// Calls `tool` with `args`, bounded by `timeout_secs`; gives up when `cancel` fires.
    /// Timing out, cancelling or dropping the returned future sends `notifications/cancelled`.
    pub async fn call(
        &self,
        tool: &str,
        args: JsonObject,
        cancel: &CancellationToken,
    ) -> Result<CallToolResult, CallError> {
        let server = self.shared.name.clone();
        let peer = lock(&self.shared.peer).clone();
        let Some(peer) = peer.filter(|p| !p.is_transport_closed()) else {
            return Err(CallError::NotReady { server, why: describe(&self.status()) });
        };
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(args);
        let secs = self.cfg.timeout_secs;
        let call = tokio::time::timeout(Duration::from_secs(secs), peer.call_tool_once(params));
        let tool = tool.to_string();
        tokio::select! {
            r = call => match r {
                Err(_) => {
                    self.shared.suspect.notify_one();
                    Err(CallError::Timeout { server, tool, secs })
                }
                Ok(Ok(CallToolResponse::Complete(result))) => Ok(result),
                Ok(Ok(_)) => Err(CallError::Protocol {
                    server,
                    tool,
                    why: "it asked for input or started a task, which Butler does not support yet".into(),
                }),
                Ok(Err(ServiceError::TransportClosed)) => Err(CallError::Crashed { server, tool }),
                Ok(Err(e)) => Err(CallError::Protocol { server, tool, why: e.to_string() }),
            },
            _ = cancel.cancelled() => Err(CallError::Cancelled { server, tool }),
        }
    }

    /// Stops the server (closes the connection; for stdio, the whole process group: stdin
    /// closed, then SIGTERM, then SIGKILL) and waits for the supervisor to end.
    pub async fn stop(&self) {
        self.shared.stop.cancel();
        let task = lock(&self.task).take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }
}

impl Drop for McpServer {
    fn drop(&mut self) {
        // The supervisor sees this and shuts the connection down; its process guard kills
        // the group even if the runtime drops the task before that.
        self.shared.stop.cancel();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A status in words, for errors the model sees.
pub fn describe(s: &Status) -> String {
    match s {
        Status::Starting => "it is still starting".into(),
        Status::Ready { tools, .. } => format!("it is ready with {tools} tools"),
        Status::Failed { why, retry_in, .. } => format!("{why}; next start in {} ms", retry_in.as_millis()),
        Status::Stopped => "it was stopped".into(),
    }
}

/// The wait before the `failures`-th restart in a row.
pub fn backoff(failures: u32) -> Duration {
    let factor = 2u32.saturating_pow(failures.saturating_sub(1).min(16));
    FIRST_BACKOFF.saturating_mul(factor).min(MAX_BACKOFF)
}

#[derive(Clone)]
struct Handler {
    changed: mpsc::Sender<()>,
}

impl ClientHandler for Handler {
    fn on_tool_list_changed(
        &self,
        _ctx: NotificationContext<RoleClient>,
    ) -> impl std::future::Future<Output = ()> + Send + '_ {
        // One pending refresh is enough: it reads the whole list.
        let _ = self.changed.try_send(());
        std::future::ready(())
    }
}

/// The process group of a stdio server; dropping it kills the whole group.
struct Group {
    pgid: i32,
    child: tokio::process::Child,
}

impl Group {
    fn signal(&self, sig: i32) {
        if self.pgid > 0 {
            // SAFETY: kill(2) with a negative pid signals that process group and nothing else.
            unsafe {
                libc::kill(-self.pgid, sig);
            }
        }
    }

    /// stdin is already closed: wait, SIGTERM the group, wait, SIGKILL the group and every
    /// process that was in its tree when the shutdown began (one that left the group with
    /// `setsid` too; in bubblewrap the whole PID namespace ends with the group anyway).
    async fn shut_down(mut self, tree_at_stop: Vec<u32>) {
        if tokio::time::timeout(EXIT_GRACE, self.child.wait()).await.is_err() {
            self.signal(libc::SIGTERM);
            let _ = tokio::time::timeout(EXIT_GRACE, self.child.wait()).await;
        }
        // The leader may be gone while others of its group are not.
        self.signal(libc::SIGKILL);
        for pid in tree_at_stop.into_iter().filter(|p| *p as i32 != self.pgid) {
            // SAFETY: kill(2) only sends a signal; a pid that is gone gives ESRCH.
            unsafe {
                libc::kill(pid as i32, libc::SIGKILL);
            }
        }
        let _ = tokio::time::timeout(EXIT_GRACE, self.child.wait()).await;
        // SIGKILL takes effect asynchronously: wait (bounded) until nothing of the group is left.
        let deadline = Instant::now() + EXIT_GRACE;
        while self.alive() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Whether any process of the group is left that is not a zombie.
    fn alive(&self) -> bool {
        // SAFETY: signal 0 only checks that the group exists and may be signalled.
        if self.pgid <= 0 || unsafe { libc::kill(-self.pgid, 0) } != 0 {
            return false;
        }
        group_has_live_member(self.pgid)
    }
}

/// Whether `/proc` shows a process of group `pgid` that is not a zombie (on systems without
/// `/proc`, whether the group exists at all).
fn group_has_live_member(pgid: i32) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else { return true };
    dir.flatten().any(|entry| {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { return false };
        // pid (comm) state ppid pgrp ...: comm may hold spaces, so split after the last ')'.
        let fields: Vec<&str> = stat.rsplit_once(") ").map(|(_, r)| r.split_whitespace().collect()).unwrap_or_default();
        fields.len() > 2 && fields[0] != "Z" && fields[2].parse::<i32>().ok() == Some(pgid)
    })
}

impl Drop for Group {
    fn drop(&mut self) {
        self.signal(libc::SIGKILL);
    }
}

struct Conn {
    service: rmcp::service::RunningService<RoleClient, Handler>,
    group: Option<Group>,
    ct: CancellationToken,
}

enum Ended {
    Stopped,
    Failed(String),
}

async fn supervise(cfg: Arc<McpServerConfig>, shared: Arc<Shared>) {
    let mut failures = 0u32;
    loop {
        if shared.stop.is_cancelled() {
            break;
        }
        let (changed_tx, changed_rx) = mpsc::channel(1);
        let connect_timeout = Duration::from_secs(cfg.connect_timeout_secs);
        let connected = tokio::select! {
            r = tokio::time::timeout(connect_timeout, connect(&cfg, &shared.vault, Handler { changed: changed_tx })) => r,
            _ = shared.stop.cancelled() => break,
        };
        let ended = match connected {
            Err(_) => {
                Ended::Failed(format!("did not start within {} s (connect_timeout_secs)", cfg.connect_timeout_secs))
            }
            Ok(Err(why)) => Ended::Failed(why),
            Ok(Ok(conn)) => run(&cfg, &shared, conn, changed_rx, &mut failures).await,
        };
        *lock(&shared.peer) = None;
        let why = match ended {
            Ended::Stopped => break,
            Ended::Failed(why) => why,
        };
        failures += 1;
        let retry_in = backoff(failures);
        tracing::warn!(server = %shared.name, error = %why, failures, retry_in_ms = retry_in.as_millis() as u64, "mcp server failed");
        *lock(&shared.status) = Status::Failed { why, failures, retry_in };
        tokio::select! {
            _ = tokio::time::sleep(retry_in) => {}
            _ = shared.stop.cancelled() => break,
        }
    }
    *lock(&shared.peer) = None;
    *lock(&shared.status) = Status::Stopped;
}

/// Serves one connection until it ends; lists the tools first and again on each change.
async fn run(
    cfg: &McpServerConfig,
    shared: &Shared,
    conn: Conn,
    mut changed: mpsc::Receiver<()>,
    failures: &mut u32,
) -> Ended {
    let Conn { service, mut group, ct } = conn;
    let peer = service.peer().clone();
    let waiting = service.waiting();
    tokio::pin!(waiting);
    let crowded = too_many(cfg, group.as_ref().map(|g| g.pgid));
    tokio::pin!(crowded);
    let limit = Duration::from_secs(cfg.connect_timeout_secs);
    let first = tokio::select! {
        r = refresh(cfg, shared, &peer, limit) => r,
        _ = &mut waiting => Err("it closed the connection before listing its tools".into()),
        why = exited(&mut group) => Err(why),
        why = &mut crowded => Err(why),
        _ = shared.stop.cancelled() => Err(String::new()),
    };
    let ended = match first {
        Err(_) if shared.stop.is_cancelled() => Ended::Stopped,
        Err(why) => Ended::Failed(why),
        Ok(()) => {
            *failures = 0;
            *lock(&shared.peer) = Some(peer.clone());
            tracing::info!(server = %shared.name, tools = shared.tools.lock().map(|t| t.len()).unwrap_or(0), "mcp server ready");
            loop {
                tokio::select! {
                    _ = shared.stop.cancelled() => break Ended::Stopped,
                    _ = &mut waiting => break Ended::Failed("it closed the connection (exited or crashed)".into()),
                    // Its stdout may outlive it (a child of its own holds the pipe).
                    why = exited(&mut group) => break Ended::Failed(why),
                    why = &mut crowded => break Ended::Failed(why),
                    Some(()) = changed.recv() => {
                        if let Err(why) = refresh(cfg, shared, &peer, limit).await {
                            break Ended::Failed(why);
                        }
                    }
                    _ = shared.suspect.notified() => {
                        let ping = peer.send_request(ClientRequest::PingRequest(Default::default()));
                        if !matches!(tokio::time::timeout(PING_TIMEOUT, ping).await, Ok(Ok(_))) {
                            break Ended::Failed(format!(
                                "a call timed out and it did not answer a ping within {} s",
                                PING_TIMEOUT.as_secs()
                            ));
                        }
                    }
                }
            }
        }
    };
    *lock(&shared.peer) = None;
    // Taken before anything dies: a child that left the group is still in the tree now.
    let tree_at_stop = group.as_ref().map(|g| tree(g.pgid as u32, MAX_TREE)).unwrap_or_default();
    ct.cancel();
    let _ = tokio::time::timeout(EXIT_GRACE, &mut waiting).await;
    if let Some(group) = group {
        group.shut_down(tree_at_stop).await;
    }
    ended
}

/// Resolves (after killing the server's group) when the stdio server has more live processes
/// than `max_processes`; never for HTTP.
async fn too_many(cfg: &McpServerConfig, pgid: Option<i32>) -> String {
    match pgid.filter(|p| *p > 0) {
        Some(pid) => {
            let seen = over_processes(pid as u32, cfg.max_processes, WATCH_SERVER).await;
            format!(
                "it had more than {} live processes ({seen} seen; max_processes), so it was stopped",
                cfg.max_processes
            )
        }
        None => std::future::pending().await,
    }
}

/// Resolves when the stdio child has exited (never for HTTP), saying how.
async fn exited(group: &mut Option<Group>) -> String {
    match group.as_mut() {
        Some(g) => match g.child.wait().await {
            Ok(status) => format!("it exited ({status})"),
            Err(e) => format!("waiting for it failed: {e}"),
        },
        None => std::future::pending().await,
    }
}

/// Lists the tools (bounded by `limit`) and publishes the offered ones.
async fn refresh(
    cfg: &McpServerConfig,
    shared: &Shared,
    peer: &Peer<RoleClient>,
    limit: Duration,
) -> Result<(), String> {
    let started = Instant::now();
    let listed = match tokio::time::timeout(limit, peer.list_all_tools()).await {
        Err(_) => return Err(format!("did not list its tools within {} s", limit.as_secs())),
        Ok(Err(e)) => return Err(format!("listing its tools failed: {e}")),
        Ok(Ok(tools)) => tools,
    };
    let round_trip = started.elapsed();
    let tools: Vec<RemoteTool> = listed
        .into_iter()
        .filter(|t| offered(cfg, &t.name))
        .map(|t| RemoteTool {
            name: t.name.to_string(),
            description: t.description.map(|d| d.to_string()).unwrap_or_default(),
            schema: Value::Object((*t.input_schema).clone()),
        })
        .collect();
    let count = tools.len();
    *lock(&shared.tools) = Arc::from(tools);
    shared.generation.fetch_add(1, Ordering::SeqCst);
    *lock(&shared.status) = Status::Ready { tools: count, round_trip };
    Ok(())
}

async fn connect(cfg: &McpServerConfig, vault: &crate::secrets::Vault, handler: Handler) -> Result<Conn, String> {
    let ct = CancellationToken::new();
    match (&cfg.command, &cfg.url) {
        (Some(command), _) => {
            let mut group = spawn(cfg, command, vault)?;
            let stdin = group.child.stdin.take().ok_or("no stdin")?;
            let stdout = group.child.stdout.take().ok_or("no stdout")?;
            if let Some(stderr) = group.child.stderr.take() {
                tokio::spawn(drain_stderr(cfg.name.clone(), stderr));
            }
            let service = rmcp::service::serve_client_with_ct(handler, (stdout, stdin), ct.clone())
                .await
                .map_err(|e| format!("the MCP handshake failed: {e}"))?;
            Ok(Conn { service, group: Some(group), ct })
        }
        (None, Some(url)) => {
            use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
            use rmcp::transport::StreamableHttpClientTransport;
            let mut headers = std::collections::HashMap::new();
            for (name, value) in &cfg.headers {
                let name = axum::http::HeaderName::from_bytes(name.as_bytes())
                    .map_err(|_| format!("header `{name}` is not a valid name"))?;
                let value = vault.resolve(value.expose()).map_err(|e| e.to_string())?;
                let value = axum::http::HeaderValue::from_str(&value)
                    .map_err(|_| format!("the value of header `{name}` is not valid in HTTP"))?;
                headers.insert(name, value);
            }
            // rmcp's reqwest 0.13 client builds a rustls config: it needs the process provider.
            let _ = rustls::crypto::ring::default_provider().install_default();
            let config = StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(headers);
            let transport = StreamableHttpClientTransport::from_config(config);
            let service = rmcp::service::serve_client_with_ct(handler, transport, ct.clone())
                .await
                .map_err(|e| format!("connecting failed: {e}"))?;
            Ok(Conn { service, group: None, ct })
        }
        (None, None) => Err("neither `command` nor `url` is set".into()),
    }
}

/// The stdio child: in its sandbox and folder (see [`super::jail`]), with a cleared
/// environment, its own process group, stdin and stdout piped.
fn spawn(cfg: &McpServerConfig, command: &str, vault: &crate::secrets::Vault) -> Result<Group, String> {
    let start = super::jail::prepare(cfg, command, vault)?;
    let env_refs: Vec<(&str, &OsStr)> = start.env.iter().map(|(k, v)| (k.as_str(), v.as_os_str())).collect();
    let args: Vec<&OsStr> = cfg.args.iter().map(OsStr::new).collect();
    let mut cmd = start.sandbox.command(&start.program, &args, &start.workdir, &env_refs);
    cmd.stdin(std::process::Stdio::piped());
    let child = cmd.spawn().map_err(|e| format!("`{command}` could not be started: {e}"))?;
    let pgid = child.id().map(|id| id as i32).unwrap_or(0);
    Ok(Group { pgid, child })
}

async fn drain_stderr(server: String, stderr: tokio::process::ChildStderr) {
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::debug!(server = %server, line = %line.chars().take(500).collect::<String>(), "mcp server stderr");
    }
}
