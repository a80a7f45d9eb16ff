//! `shell`: runs a command with `sh -c` in the user's own workspace directory. Off unless
//! `[tools.shell] enabled = true`; always mutating.
//!
//! The command must never see Butler's environment (API keys, tokens, database URLs), its
//! processes or its files: the environment is cleared and only a fixed PATH, HOME (the
//! workspace), LANG and TERM are set, and the command runs in the bubblewrap sandbox of
//! `crate::tools::sandbox` (unless `[tools.shell] sandbox = "none"`). Words in the command are
//! not what keeps it in: the sandbox is. Without the sandbox it asked for, it never runs.
//! It runs in its own process group, and the whole group is killed on timeout, when the turn is
//! stopped, when the call is dropped, and after the command exits (nothing it started may keep
//! running; with bubblewrap its whole PID namespace goes). It may have at most `max_processes`
//! live processes (more: all are killed, and the result says so), and each has the memory, CPU
//! time and largest-file limits of [`crate::tools::limits`]. A full workspace
//! (`[tools] workspace_quota_mb`) refuses the command before it runs. Output is captured up to
//! `max_output_bytes`.

use super::plain::{mask_lines, mask_text, preview, workspace_abs};
use crate::config::ShellConfig;
use crate::tools::limits::{over_processes, WATCH_COMMAND};
use crate::tools::quota;
use crate::tools::sandbox::{Sandbox, SandboxError};
use crate::tools::{parse_args, Action, Detail, DetailKind, Tool, ToolCtx, ToolError, ToolSpec};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Value};
use std::ffi::OsStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt};

/// Characters of the command in the one-line summary; the approval's detail shows it whole, with
/// the folder it runs in.
const SUMMARY_CHARS: usize = 100;

/// The only PATH a command gets.
pub use crate::tools::sandbox::SAFE_PATH;

pub struct Shell {
    spec: ToolSpec,
    timeout: Duration,
    max_output: usize,
    /// The sandbox, or why it is not available (then every call fails with that).
    sandbox: Result<Sandbox, String>,
    /// `[tools] workspace_quota_mb` (0: none).
    quota_mb: u64,
}

impl Shell {
    pub fn new(cfg: &ShellConfig) -> Self {
        Self {
            spec: ToolSpec {
                name: "shell".into(),
                description: "Run a shell command (sh -c) in the user's workspace directory. No secrets are in its \
                              environment; it is stopped after a timeout. Returns the exit code and the combined \
                              output."
                    .into(),
                parameters: json!({
                    "type": "object",
                    "properties": {"command": {"type": "string", "description": "the command line"}},
                    "required": ["command"],
                    "additionalProperties": false
                }),
                read_only: false,
            },
            timeout: Duration::from_secs(cfg.timeout_secs),
            max_output: cfg.max_output_bytes,
            sandbox: Sandbox::from_config(cfg).map_err(|e: SandboxError| e.to_string()),
            quota_mb: 0,
        }
    }

    /// With the workspace quota: a full workspace refuses commands, and no process of one may
    /// write a file larger than the quota.
    pub fn with_quota(mut self, quota_mb: u64) -> Self {
        self.quota_mb = quota_mb;
        self.sandbox = self.sandbox.map(|s| s.with_file_limit(quota_mb));
        self
    }
}

#[derive(Deserialize)]
struct Args {
    command: String,
}

/// Output of both streams in arrival order, up to a cap; counts what it dropped.
struct Capture {
    buf: Vec<u8>,
    cap: usize,
    total: usize,
}

impl Capture {
    fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len();
        let room = self.cap.saturating_sub(self.buf.len());
        self.buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
    }

    fn render(&self) -> String {
        let mut text = String::from_utf8_lossy(&self.buf).into_owned();
        if self.total > self.buf.len() {
            if !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&format!(
                "[… output cut at {} bytes (shell.max_output_bytes); {} bytes in all]",
                self.cap, self.total
            ));
        }
        text
    }
}

/// Kills the process group when dropped (also when the call's future is dropped mid-way).
struct GroupKiller(Option<i32>);

impl GroupKiller {
    fn kill(&mut self) {
        if let Some(pgid) = self.0 {
            // SAFETY: killpg only sends a signal; a group that no longer exists gives ESRCH.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
    }
}

impl Drop for GroupKiller {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Reads `stream` to its end into `capture` (draining past the cap so the writer never blocks).
async fn drain(mut stream: impl AsyncRead + Unpin, capture: Arc<Mutex<Capture>>) {
    let mut chunk = vec![0u8; 8192];
    while let Ok(n) = stream.read(&mut chunk).await {
        if n == 0 {
            break;
        }
        if let Ok(mut c) = capture.lock() {
            c.push(&chunk[..n]);
        }
    }
}

enum Ending {
    Exited(std::process::ExitStatus),
    TimedOut,
    Stopped,
    /// It had more live processes than `max_processes` (how many were seen).
    TooMany(u32),
}

#[async_trait]
impl Tool for Shell {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn untrusted_output(&self) -> bool {
        true
    }

    fn action(&self, ctx: &ToolCtx, args: &Value) -> Action {
        let command = args.get("command").and_then(Value::as_str).unwrap_or("");
        let folder = workspace_abs(&ctx.workspace);
        let detail = format!("# in {}\n{}", folder.display(), mask_lines(command));
        Action {
            summary: format!("run `{}` in your workspace", mask_text(&preview(command, SUMMARY_CHARS))),
            paths: vec![folder],
            command: Some(command.to_string()),
            url: None,
            detail: Some(Detail::new(DetailKind::Command, detail)),
        }
    }

    async fn call(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let args: Args = parse_args(args)?;
        if args.command.trim().is_empty() {
            return Err(ToolError::InvalidArgs("`command` is empty".into()));
        }
        if args.command.contains('\0') {
            return Err(ToolError::InvalidArgs("`command` contains a NUL byte".into()));
        }
        tokio::fs::create_dir_all(&ctx.workspace)
            .await
            .map_err(|e| ToolError::Failed(format!("your workspace is not available: {e}")))?;
        let workspace = tokio::fs::canonicalize(&ctx.workspace)
            .await
            .map_err(|e| ToolError::Failed(format!("your workspace is not available: {e}")))?;

        let sandbox = self.sandbox.as_ref().map_err(|why| ToolError::Failed(why.clone()))?;
        quota::check_blocking(&workspace, self.quota_mb).await.map_err(ToolError::Failed)?;
        let env = [
            ("PATH", OsStr::new(SAFE_PATH)),
            ("HOME", workspace.as_os_str()),
            ("LANG", OsStr::new("C.UTF-8")),
            ("TERM", OsStr::new("dumb")),
        ];
        let mut cmd = sandbox.command("/bin/sh", &[OsStr::new("-c"), OsStr::new(&args.command)], &workspace, &env);
        let mut child = cmd.spawn().map_err(|e| ToolError::Failed(format!("could not start the shell: {e}")))?;
        let mut killer = GroupKiller(child.id().and_then(|id| i32::try_from(id).ok()));
        let max_processes = sandbox.limits().processes;
        let watched = over_processes(
            child.id().unwrap_or(0),
            if child.id().is_some() { max_processes } else { 0 },
            WATCH_COMMAND,
        );

        let capture = Arc::new(Mutex::new(Capture { buf: Vec::new(), cap: self.max_output, total: 0 }));
        let mut readers = tokio::task::JoinSet::new();
        if let Some(out) = child.stdout.take() {
            readers.spawn(drain(out, capture.clone()));
        }
        if let Some(err) = child.stderr.take() {
            readers.spawn(drain(err, capture.clone()));
        }

        let ending = tokio::select! {
            status = child.wait() => match status {
                Ok(s) => Ending::Exited(s),
                Err(e) => return Err(ToolError::Failed(format!("the shell failed: {e}"))),
            },
            _ = tokio::time::sleep(self.timeout) => Ending::TimedOut,
            _ = ctx.cancel.cancelled() => Ending::Stopped,
            seen = watched => Ending::TooMany(seen),
        };
        // Whatever happened, nothing the command started keeps running.
        killer.kill();
        if !matches!(ending, Ending::Exited(_)) {
            let _ = child.wait().await;
        }
        killer.0 = None;
        // The pipes close once every process holding them is gone; a process that left the
        // group could hold them open, so do not wait for ever.
        let drained =
            tokio::time::timeout(Duration::from_secs(2), async { while readers.join_next().await.is_some() {} }).await;
        if drained.is_err() {
            readers.abort_all();
        }
        let output = capture.lock().map(|c| c.render()).unwrap_or_default();

        match ending {
            Ending::Exited(status) => {
                let signal = std::os::unix::process::ExitStatusExt::signal(&status);
                // bubblewrap passes on a signal death as 128 + the signal.
                let jailed_signal = status.code().filter(|c| sandbox.bwrap().is_some() && *c > 128).map(|c| c - 128);
                let head = match (status.code(), signal.or(jailed_signal)) {
                    (_, Some(libc::SIGXCPU)) => format!(
                        "stopped: it used its {} s of CPU time ([tools.shell] max_cpu_secs)",
                        sandbox.limits().cpu_secs
                    ),
                    (Some(code), _) => format!("exit code: {code}"),
                    (None, Some(sig)) => format!("killed by signal {sig}"),
                    (None, None) => "exit status unknown".to_string(),
                };
                let mut text =
                    if output.is_empty() { format!("{head}\n(no output)") } else { format!("{head}\n{output}") };
                if let Err(full) = quota::check_blocking(&workspace, self.quota_mb).await {
                    text.push_str(&format!("\n[{full}]"));
                }
                Ok(text)
            }
            Ending::TimedOut => Err(ToolError::Failed(format!(
                "timed out after {} s; the command and everything it started were stopped.{}",
                self.timeout.as_secs_f32(),
                if output.is_empty() { String::new() } else { format!(" Output so far:\n{output}") }
            ))),
            Ending::Stopped => Err(ToolError::Failed("stopped; the command was killed".into())),
            Ending::TooMany(seen) => Err(ToolError::Failed(format!(
                "the command started more than {max_processes} processes at once ({seen} seen; [tools.shell] \
                 max_processes), so it and everything it started were stopped.{}",
                if output.is_empty() { String::new() } else { format!(" Output so far:\n{output}") }
            ))),
        }
    }
}
