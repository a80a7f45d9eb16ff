//! Sandboxed command hooks (`[[hooks]] sandbox = true`): which isolation each command hook gets,
//! the scratch directory a sandboxed hook works in, the start-up refusal when `bwrap` is missing
//! and the `doctor` check. The sandbox itself is the shell's (`crate::tools::sandbox`).
//!
//! This file must never let a hook with `sandbox = true` run unsandboxed (without `bwrap` it
//! fails instead), and never give a sandboxed hook any host directory but its own fresh, empty
//! scratch directory: never Butler's working directory, config file, database or data directory.

use crate::config::{HookConfig, HookKind, SandboxMode, ShellConfig};
use crate::tools::sandbox::{Sandbox, SAFE_PATH};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How one command hook is started.
pub(super) enum Isolation {
    /// As the operator's own command: a cleared environment and a process group, no sandbox.
    None,
    /// In bubblewrap.
    Bwrap(Sandbox),
    /// `sandbox = true` but `bwrap` is not on PATH: the hook fails every time.
    Missing,
}

impl Isolation {
    pub(super) fn for_hook(cfg: &HookConfig) -> Self {
        if !cfg.sandbox || cfg.kind != HookKind::Command {
            return Isolation::None;
        }
        let shell = ShellConfig { sandbox: SandboxMode::Bwrap, network: cfg.network, ..ShellConfig::default() };
        match Sandbox::from_config(&shell) {
            Ok(sandbox) if sandbox.bwrap().is_some() => Isolation::Bwrap(sandbox),
            _ => Isolation::Missing,
        }
    }
}

/// Why the configured hooks cannot run.
#[derive(Debug, thiserror::Error)]
pub enum HooksError {
    #[error(
        "hooks[{index}].sandbox = true but bubblewrap (`bwrap`) is not on PATH; install it (Debian/Ubuntu: \
         apt-get install bubblewrap) or set hooks[{index}].sandbox = false to run that hook without isolation"
    )]
    BwrapMissing { index: usize },
}

/// A fresh, empty directory (mode 0700) under the system's temp directory, removed with what
/// is in it when dropped: a sandboxed hook's working directory and `HOME`.
pub(super) struct Scratch {
    path: PathBuf,
}

static SCRATCH_SEQ: AtomicU64 = AtomicU64::new(0);

impl Scratch {
    pub(super) fn new() -> std::io::Result<Self> {
        use std::os::unix::fs::DirBuilderExt;
        let base = std::env::temp_dir();
        let mut last = None;
        for _ in 0..16 {
            let n = SCRATCH_SEQ.fetch_add(1, Ordering::Relaxed);
            let path = base.join(format!("butler-hook-{}-{n}", std::process::id()));
            // `create`, not `create_all`: an existing entry (a leftover, a planted link) is never reused.
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => return Ok(Self { path }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| std::io::Error::other("no free scratch directory name")))
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.path) {
            tracing::debug!(path = %self.path.display(), error = %e, "could not remove a hook's scratch directory");
        }
    }
}

/// The environment of a sandboxed hook: the safe PATH, HOME = the scratch directory, Butler's
/// LANG, and the event and tool. The payload is on stdin only: in the environment it would be
/// on `bwrap`'s command line, which every local user can read.
pub(super) fn sandbox_env<'a>(
    scratch: &'a Path,
    event: &'a str,
    tool: &'a str,
    lang: Option<&'a OsStr>,
) -> Vec<(&'a str, &'a OsStr)> {
    let mut env = vec![("PATH", OsStr::new(SAFE_PATH)), ("HOME", scratch.as_os_str())];
    if let Some(lang) = lang {
        env.push(("LANG", lang));
    }
    env.push(("BUTLER_HOOK_EVENT", OsStr::new(event)));
    env.push(("BUTLER_HOOK_TOOL", OsStr::new(tool)));
    env
}

/// The first sandboxed hook whose sandbox is missing, as the error `butler serve` stops with.
pub(super) fn check(cfg: &[HookConfig]) -> Result<(), HooksError> {
    for (index, hook) in cfg.iter().enumerate() {
        if let Isolation::Missing = Isolation::for_hook(hook) {
            return Err(HooksError::BwrapMissing { index });
        }
    }
    Ok(())
}

/// `butler doctor`'s "hook sandbox" check: `None` when no hook is sandboxed; otherwise the detail
/// of a pass, or the problem and what to do. Starts `/bin/sh -c true` in the sandbox once.
pub async fn doctor(cfg: &[HookConfig]) -> Option<Result<String, (String, String)>> {
    let first = cfg.iter().position(|h| h.sandbox && h.kind == HookKind::Command)?;
    let count = cfg.iter().filter(|h| h.sandbox && h.kind == HookKind::Command).count();
    if let Err(e) = check(cfg) {
        let fix = "install bubblewrap (apt-get install bubblewrap), or set sandbox = false on that hook to run it \
                   with Butler's access to files and processes";
        return Some(Err((e.to_string(), fix.into())));
    }
    let Isolation::Bwrap(sandbox) = Isolation::for_hook(&cfg[first]) else {
        return Some(Err(("the sandbox could not be set up".into(), "check bubblewrap".into())));
    };
    let bwrap = sandbox.bwrap().map(|p| p.display().to_string()).unwrap_or_default();
    let scratch = match Scratch::new() {
        Ok(scratch) => scratch,
        Err(e) => return Some(Err((format!("no scratch directory for sandboxed hooks: {e}"), "check TMPDIR".into()))),
    };
    let env = sandbox_env(scratch.path(), "doctor", "", None);
    let args = [OsStr::new("-c"), OsStr::new("true")];
    let probe = sandbox.command("/bin/sh", &args, scratch.path(), &env).output();
    let result = match tokio::time::timeout(Duration::from_secs(10), probe).await {
        Ok(Ok(out)) if out.status.success() => Ok(format!("bwrap ({bwrap}) for {count} hook(s)")),
        Ok(Ok(out)) => Err((
            format!("{bwrap} could not start a command: {}", String::from_utf8_lossy(&out.stderr).trim()),
            "bubblewrap needs user namespaces when Butler does not run as root (sysctl \
             kernel.unprivileged_userns_clone=1; in a container allow them), or set sandbox = false on the hook"
                .into(),
        )),
        Ok(Err(e)) => Err((format!("{bwrap} could not be run: {e}"), "reinstall bubblewrap".into())),
        Err(_) => Err((format!("{bwrap} did not finish a test command within 10s"), "check bubblewrap".into())),
    };
    Some(result)
}
