//! Command hooks: `/bin/sh -c <command>` in a process group of its own, with the payload on stdin
//! (and, unsandboxed, in `BUTLER_HOOK_PAYLOAD`) and a scrubbed environment; with `sandbox = true`
//! inside bubblewrap, in a fresh scratch directory. This file must never pass Butler's
//! environment beyond PATH, HOME and LANG, never run a hook that asked for the sandbox without
//! it, never wait past the timeout, and never leave a timed-out or abandoned hook's processes
//! running: their whole group is killed.

use super::sandbox::{sandbox_env, Isolation, Scratch};
use super::verdict::{cap_reason, explicit_block, first_line, HookResult, Payload, Verdict, OUTPUT_CAP};
use std::ffi::OsStr;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};

/// The payload goes into the environment only up to this size (Linux refuses a single
/// environment string over 128 KiB; stdin always carries all of it).
const ENV_PAYLOAD_MAX: usize = 64 * 1024;
/// Variables a hook gets from Butler's environment; nothing else is passed on.
const PASSED_ON: [&str; 3] = ["PATH", "HOME", "LANG"];
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";
/// How long to wait for the killed hook's shell to be collected.
const KILL_WAIT: Duration = Duration::from_secs(2);

/// Runs one command hook to its end or its timeout.
pub(super) async fn run(
    command: &str,
    label: &str,
    timeout: Duration,
    payload: &Payload,
    isolation: &Isolation,
) -> HookResult {
    // Declared before the child's group, so dropped after it: the directory goes once the
    // processes that use it are killed.
    let scratch;
    let mut cmd = match isolation {
        Isolation::None => unsandboxed(command, payload),
        Isolation::Bwrap(sandbox) => {
            scratch = Scratch::new()
                .map_err(|e| format!("{label} could not start: no scratch directory for its sandbox: {e}"))?;
            let lang = std::env::var_os("LANG");
            let tool = payload.tool.as_deref().unwrap_or_default();
            let env = sandbox_env(scratch.path(), payload.event.as_str(), tool, lang.as_deref());
            sandbox.command("/bin/sh", &[OsStr::new("-c"), OsStr::new(command)], scratch.path(), &env)
        }
        Isolation::Missing => {
            return Err(format!(
                "{label} could not start: it has sandbox = true but bubblewrap (`bwrap`) is not on PATH \
                 (it never runs unsandboxed)"
            ))
        }
    };
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0).kill_on_drop(true);
    let child = cmd.spawn().map_err(|e| format!("{label} could not start: {e}"))?;
    let mut group = Group::new(child);
    let (stdin, stdout, stderr) = (group.child.stdin.take(), group.child.stdout.take(), group.child.stderr.take());
    let feed = async {
        if let Some(mut stdin) = stdin {
            // A hook that does not read stdin makes this fail (broken pipe): that is fine.
            let _ = stdin.write_all(payload.json.as_bytes()).await;
            let _ = stdin.shutdown().await;
        }
    };
    let finished = async {
        let (_, out, err, status) = tokio::join!(feed, read_capped(stdout), read_capped(stderr), group.child.wait());
        (out, err, status)
    };
    let ended = tokio::time::timeout(timeout, finished).await;
    match ended {
        Ok((out, err, Ok(status))) => {
            group.disarm();
            interpret(label, status, &out, &err)
        }
        Ok((_, _, Err(e))) => {
            group.kill().await;
            Err(format!("{label} could not be waited for: {e}"))
        }
        Err(_) => {
            group.kill().await;
            Err(format!("{label} timed out after {}s", timeout.as_secs()))
        }
    }
}

/// `/bin/sh -c command` in Butler's working directory with PATH, HOME and LANG of Butler's
/// environment and the hook variables.
fn unsandboxed(command: &str, payload: &Payload) -> Command {
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c").arg(command).env_clear();
    for key in PASSED_ON {
        if let Some(value) = std::env::var_os(key) {
            cmd.env(key, value);
        }
    }
    if std::env::var_os("PATH").is_none() {
        cmd.env("PATH", DEFAULT_PATH);
    }
    cmd.env("BUTLER_HOOK_EVENT", payload.event.as_str())
        .env("BUTLER_HOOK_TOOL", payload.tool.as_deref().unwrap_or_default());
    if payload.json.len() <= ENV_PAYLOAD_MAX {
        cmd.env("BUTLER_HOOK_PAYLOAD", &payload.json);
    }
    cmd
}

/// What an exit status and the output mean; see the module documentation of `hooks`.
fn interpret(label: &str, status: std::process::ExitStatus, stdout: &[u8], stderr: &[u8]) -> HookResult {
    use std::os::unix::process::ExitStatusExt;
    match status.code() {
        Some(0) => Ok(match explicit_block(stdout) {
            Some(reason) => Verdict::Block(reason.unwrap_or_else(|| format!("{label} blocked the call"))),
            None => Verdict::Ok,
        }),
        Some(2) => {
            let said = String::from_utf8_lossy(stderr);
            let reason = Some(said.trim()).filter(|s| !s.is_empty()).map(cap_reason);
            let reason = reason.or_else(|| explicit_block(stdout).flatten());
            Ok(Verdict::Block(reason.unwrap_or_else(|| format!("{label} blocked the call (exit code 2)"))))
        }
        Some(code) => {
            let what = if code == 127 { " (command not found)" } else { "" };
            Err(format!("{label} exited with code {code}{what}{}", quoted(stderr)))
        }
        None => match status.signal() {
            Some(signal) => Err(format!("{label} was killed by signal {signal}{}", quoted(stderr))),
            None => Err(format!("{label} ended without an exit code{}", quoted(stderr))),
        },
    }
}

/// `: <first line of stderr>`, or nothing when stderr is empty.
fn quoted(stderr: &[u8]) -> String {
    let line = first_line(stderr);
    if line.is_empty() {
        line
    } else {
        format!(": {line}")
    }
}

/// Reads to the end (so the hook never blocks on a full pipe) and keeps the first
/// [`OUTPUT_CAP`] bytes.
async fn read_capped(reader: Option<impl AsyncRead + Unpin>) -> Vec<u8> {
    let mut kept = Vec::new();
    let Some(mut reader) = reader else { return kept };
    let mut chunk = [0u8; 4096];
    loop {
        match reader.read(&mut chunk).await {
            Ok(0) | Err(_) => return kept,
            Ok(n) => {
                let room = OUTPUT_CAP.saturating_sub(kept.len());
                kept.extend_from_slice(&chunk[..n.min(room)]);
            }
        }
    }
}

/// A hook's child process and its process group (the child leads it). Unless disarmed, the
/// group is killed when this is dropped: that is what happens to a hook whose task is aborted.
struct Group {
    child: Child,
    /// The process group id (the child's pid) while the group may still need killing.
    pgid: Option<u32>,
}

impl Group {
    fn new(child: Child) -> Self {
        let pgid = child.id();
        Self { child, pgid }
    }

    /// The hook ended by itself: leave whatever it started in the background alone.
    fn disarm(&mut self) {
        self.pgid = None;
    }

    /// SIGKILL to the whole group, then the child is collected (bounded in time). The child is
    /// not collected before the group is signalled, so the group id cannot have been reused.
    async fn kill(&mut self) {
        self.kill_group();
        let _ = self.child.start_kill();
        let _ = tokio::time::timeout(KILL_WAIT, self.child.wait()).await;
    }

    fn kill_group(&mut self) {
        let Some(pgid) = self.pgid.take() else { return };
        let Ok(pgid) = libc::pid_t::try_from(pgid) else { return };
        // SAFETY: killpg only sends a signal. `pgid` is the group our child leads; the id stays
        // the group's while the child is uncollected or any member of the group lives (once
        // the group is empty the call fails with ESRCH).
        if unsafe { libc::killpg(pgid, libc::SIGKILL) } != 0 {
            let error = std::io::Error::last_os_error();
            if error.raw_os_error() != Some(libc::ESRCH) {
                tracing::warn!(pgid, error = %error, "could not kill a hook's process group; killing its shell only");
            }
        }
    }
}

impl Drop for Group {
    /// An aborted hook task: kill the group here; `kill_on_drop` then kills and collects the
    /// child itself.
    fn drop(&mut self) {
        self.kill_group();
    }
}
