//! The sandbox for programs Butler starts on someone's behalf (the `shell` tool, sandboxed
//! hooks, stdio MCP servers): a `tokio::process::Command` with a cleared environment, its own
//! process group, the [`Limits`] of what it may use and, unless its `sandbox = "none"`, a
//! bubblewrap (`bwrap`) prefix with its own PID, mount, IPC, UTS and (unless `network`) network
//! namespaces. Ending the program's process group ends the sandbox's whole PID namespace
//! (`--die-with-parent`), so nothing it started survives it, not even a `setsid` grandchild.
//!
//! Inside the sandbox only these exist: `/usr` and the host's `/bin`, `/sbin`, `/lib*` links (or
//! directories) read-only, a short list of harmless `/etc` files (never shadow, passwd or keys),
//! a fresh `/tmp`, a minimal `/dev`, a `/proc` of the sandbox's own PID namespace and the working
//! directory, read-write at its own path (plus, for an MCP server, the program itself read-only
//! and the folders its config names). This file must never bind Butler's data directory,
//! config file, database, home or the host's `/proc`, never pass Butler's environment (neither
//! to the command nor to `bwrap` itself, whose environment the sandbox could read in
//! `/proc/1/environ`), and never fall back to running unsandboxed when `bwrap` was asked for.

use super::limits::Limits;
use crate::config::{SandboxMode, ShellConfig};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// The only PATH a sandboxed or shell command gets.
pub const SAFE_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// `/etc` entries bound read-only when present: the dynamic linker cache, `alternatives` (many
/// `/usr/bin` commands are links through it) and the time zone.
const ETC_ALWAYS: [&str; 5] =
    ["/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime"];
/// Added with `network = true`: name resolution and the public CA certificates (not
/// `/etc/ssl/private`).
const ETC_NETWORK: [&str; 7] = [
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/nsswitch.conf",
    "/etc/host.conf",
    "/etc/gai.conf",
    "/etc/ssl/certs",
    "/etc/ca-certificates",
];
/// Top-level entries of the system that may be links into `/usr` (merged /usr) or directories.
const SYSTEM_ROOTS: [&str; 6] = ["/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"];

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error(
        "[tools.shell] sandbox = \"bwrap\" but bubblewrap (`bwrap`) is not on PATH; install it (Debian/Ubuntu: \
         apt-get install bubblewrap) or set [tools.shell] sandbox = \"none\" to run shell commands without isolation"
    )]
    BwrapMissing,
    #[error(
        "mcp.servers[{index}] runs in bubblewrap (sandbox = \"bwrap\", the default) but `bwrap` is not on PATH; \
         install it (Debian/Ubuntu: apt-get install bubblewrap) or set mcp.servers[{index}].sandbox = \"none\" to \
         run that server without isolation"
    )]
    ServerBwrapMissing { index: usize },
}

/// How one top-level system entry appears on the host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RootEntry {
    /// A symbolic link (`/bin -> usr/bin`): the same link inside.
    Link(PathBuf),
    /// A real directory: bound read-only.
    Dir,
}

/// What of the host system the sandbox shows, probed once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SystemLayout {
    /// Present entries of [`SYSTEM_ROOTS`].
    pub roots: Vec<(PathBuf, RootEntry)>,
}

impl SystemLayout {
    /// The host's layout (entries that do not exist are left out).
    pub fn probe() -> Self {
        let mut roots = Vec::new();
        for root in SYSTEM_ROOTS {
            let path = Path::new(root);
            match std::fs::symlink_metadata(path) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    if let Ok(target) = std::fs::read_link(path) {
                        roots.push((path.to_path_buf(), RootEntry::Link(target)));
                    }
                }
                Ok(meta) if meta.is_dir() => roots.push((path.to_path_buf(), RootEntry::Dir)),
                _ => {}
            }
        }
        Self { roots }
    }
}

/// How commands are started: with `bwrap` (its absolute path) or without isolation.
#[derive(Clone, Debug)]
pub struct Sandbox {
    bwrap: Option<PathBuf>,
    network: bool,
    layout: SystemLayout,
    /// Host paths shown read-only and read-write at their own place (bwrap only).
    binds: Binds,
    limits: Limits,
}

/// Host paths a sandbox shows besides the working directory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Binds {
    pub read_only: Vec<PathBuf>,
    pub read_write: Vec<PathBuf>,
}

impl Sandbox {
    /// The sandbox `[tools.shell]` asks for, with its limits; an error when it is `bwrap` and
    /// `bwrap` is missing.
    pub fn from_config(cfg: &ShellConfig) -> Result<Self, SandboxError> {
        let limits = Limits {
            processes: cfg.max_processes,
            memory_mb: cfg.max_memory_mb,
            cpu_secs: cfg.max_cpu_secs,
            file_mb: 0,
        };
        Ok(Self::new(cfg.sandbox, cfg.network).ok_or(SandboxError::BwrapMissing)?.with_limits(limits))
    }

    /// A sandbox of `mode`; `None` when it is `bwrap` and `bwrap` is missing.
    pub fn new(mode: SandboxMode, network: bool) -> Option<Self> {
        match mode {
            SandboxMode::None => Some(Self::none()),
            SandboxMode::Bwrap => Some(Self {
                bwrap: Some(find_bwrap()?),
                network,
                layout: SystemLayout::probe(),
                binds: Binds::default(),
                limits: Limits::default(),
            }),
        }
    }

    /// No isolation: only the cleared environment, the process group and the limits.
    pub fn none() -> Self {
        Self {
            bwrap: None,
            network: true,
            layout: SystemLayout::default(),
            binds: Binds::default(),
            limits: Limits::default(),
        }
    }

    /// This sandbox also showing `binds`.
    pub fn with_binds(mut self, binds: Binds) -> Self {
        self.binds = binds;
        self
    }

    /// This sandbox with `limits` for what it starts.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The limits of what it starts (the process count is the caller's to watch).
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The same limits with `file_mb` as the largest file one process may write.
    pub fn with_file_limit(mut self, file_mb: u64) -> Self {
        self.limits.file_mb = file_mb;
        self
    }

    /// The `bwrap` binary in use, or `None` when unsandboxed.
    pub fn bwrap(&self) -> Option<&Path> {
        self.bwrap.as_deref()
    }

    /// A command running `program args` in `workdir` with exactly `env` as its environment,
    /// stdin null, stdout and stderr piped, in a process group of its own, killed on drop.
    /// Sandboxed, `workdir` is the only writable host directory and `program` must be an
    /// absolute path inside the sandbox's system (e.g. `/bin/sh`).
    pub fn command(
        &self,
        program: &str,
        args: &[&OsStr],
        workdir: &Path,
        env: &[(&str, &OsStr)],
    ) -> tokio::process::Command {
        let mut cmd = match &self.bwrap {
            Some(bwrap) => {
                let mut cmd = tokio::process::Command::new(bwrap);
                // bwrap's own working directory does not matter (`--chdir` sets the command's).
                let place = Place { workdir, network: self.network, binds: &self.binds };
                cmd.args(bwrap_args(&self.layout, &place, env, program, args)).current_dir("/");
                cmd
            }
            None => {
                let mut cmd = tokio::process::Command::new(program);
                cmd.args(args).current_dir(workdir);
                cmd
            }
        };
        // Nothing of Butler's environment: not for the command and not for bwrap, whose
        // environment the sandbox's PID 1 keeps (readable in /proc/1/environ).
        cmd.env_clear();
        if self.bwrap.is_none() {
            cmd.envs(env.iter().copied());
        }
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0).kill_on_drop(true);
        self.limits.apply(&mut cmd);
        cmd
    }
}

/// `bwrap` on Butler's PATH (absolute), if any.
pub fn find_bwrap() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join("bwrap")).find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.is_absolute() && std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Where a sandboxed program works: its working directory (read-write), whether it has the
/// network, and the other host paths it sees.
pub struct Place<'a> {
    pub workdir: &'a Path,
    pub network: bool,
    pub binds: &'a Binds,
}

/// The arguments after `bwrap`: namespaces, the read-only system, `/etc` pieces, fresh `/tmp`,
/// `/dev` and `/proc`, the extra binds, the workspace read-write, the environment, then
/// `-- program args`.
pub fn bwrap_args(
    layout: &SystemLayout,
    place: &Place<'_>,
    env: &[(&str, &OsStr)],
    program: &str,
    args: &[&OsStr],
) -> Vec<OsString> {
    let (workdir, network) = (place.workdir, place.network);
    let mut out: Vec<OsString> = Vec::new();
    let mut push = |items: &[&OsStr]| out.extend(items.iter().map(|s| s.to_os_string()));
    let os = |s: &'static str| OsStr::new(s);
    push(&[os("--unshare-pid"), os("--unshare-ipc"), os("--unshare-uts"), os("--unshare-cgroup-try")]);
    if !network {
        push(&[os("--unshare-net")]);
    }
    push(&[os("--die-with-parent"), os("--new-session"), os("--cap-drop"), os("ALL")]);
    push(&[os("--ro-bind"), os("/usr"), os("/usr")]);
    for (path, entry) in &layout.roots {
        match entry {
            RootEntry::Link(target) => push(&[os("--symlink"), target.as_os_str(), path.as_os_str()]),
            RootEntry::Dir => push(&[os("--ro-bind"), path.as_os_str(), path.as_os_str()]),
        }
    }
    let etc: Vec<&str> = ETC_ALWAYS.iter().chain(if network { &ETC_NETWORK[..] } else { &[] }).copied().collect();
    for path in etc {
        push(&[os("--ro-bind-try"), os(path), os(path)]);
    }
    push(&[os("--tmpfs"), os("/tmp"), os("--dev"), os("/dev"), os("--proc"), os("/proc")]);
    for path in &place.binds.read_only {
        push(&[os("--ro-bind"), path.as_os_str(), path.as_os_str()]);
    }
    for path in &place.binds.read_write {
        push(&[os("--bind"), path.as_os_str(), path.as_os_str()]);
    }
    push(&[os("--bind"), workdir.as_os_str(), workdir.as_os_str(), os("--chdir"), workdir.as_os_str()]);
    push(&[os("--clearenv")]);
    for (key, value) in env {
        push(&[os("--setenv"), OsStr::new(key), value]);
    }
    push(&[os("--"), OsStr::new(program)]);
    push(args);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn merged() -> SystemLayout {
        SystemLayout {
            roots: vec![
                ("/bin".into(), RootEntry::Link("usr/bin".into())),
                ("/lib".into(), RootEntry::Link("usr/lib".into())),
            ],
        }
    }

    fn split() -> SystemLayout {
        SystemLayout { roots: vec![("/bin".into(), RootEntry::Dir), ("/lib64".into(), RootEntry::Dir)] }
    }

    fn joined(args: &[OsString]) -> String {
        args.iter().map(|a| a.to_string_lossy().into_owned()).collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn bwrap_arguments() {
        let env = [("PATH", OsStr::new(SAFE_PATH)), ("HOME", OsStr::new("/w/u1"))];
        let sh = [OsStr::new("-c"), OsStr::new("echo hi")];
        // (layout, network, must contain, must not contain)
        let cases: [(SystemLayout, bool, &[&str], &[&str]); 3] = [
            (
                merged(),
                false,
                &[
                    "--unshare-pid --unshare-ipc --unshare-uts",
                    "--unshare-net",
                    "--die-with-parent --new-session --cap-drop ALL",
                    "--ro-bind /usr /usr",
                    "--symlink usr/bin /bin",
                    "--symlink usr/lib /lib",
                    "--ro-bind-try /etc/ld.so.cache /etc/ld.so.cache",
                    "--tmpfs /tmp --dev /dev --proc /proc",
                    "--bind /w/u1 /w/u1 --chdir /w/u1",
                    "--clearenv --setenv PATH /usr/local/bin:/usr/bin:/bin --setenv HOME /w/u1 -- /bin/sh -c echo hi",
                ],
                &["/etc/resolv.conf", "/etc/ssl", "/etc/passwd", "/etc/shadow", "--ro-bind /etc ", "--bind / "],
            ),
            (
                split(),
                false,
                &["--ro-bind /bin /bin", "--ro-bind /lib64 /lib64", "--unshare-net"],
                &["--symlink", "/etc/hosts"],
            ),
            (
                merged(),
                true,
                &[
                    "--ro-bind-try /etc/resolv.conf /etc/resolv.conf",
                    "--ro-bind-try /etc/ssl/certs /etc/ssl/certs",
                    "--ro-bind-try /etc/hosts /etc/hosts",
                ],
                &["--unshare-net", "/etc/ssl/private", "/etc/shadow"],
            ),
        ];
        for (layout, network, present, absent) in cases {
            let binds = Binds { read_only: vec!["/opt/srv/bin".into()], read_write: vec!["/srv/notes".into()] };
            let place = Place { workdir: Path::new("/w/u1"), network, binds: &binds };
            let args = joined(&bwrap_args(&layout, &place, &env, "/bin/sh", &sh));
            assert!(
                args.contains("--ro-bind /opt/srv/bin /opt/srv/bin --bind /srv/notes /srv/notes --bind /w/u1"),
                "{args}"
            );
            for want in present {
                assert!(args.contains(want), "network={network}: `{want}` missing from {args}");
            }
            for unwanted in absent {
                assert!(!args.contains(unwanted), "network={network}: `{unwanted}` in {args}");
            }
            assert!(args.ends_with("-- /bin/sh -c echo hi"), "{args}");
        }
    }

    #[test]
    fn none_mode_needs_no_bwrap() {
        let cfg = ShellConfig { sandbox: SandboxMode::None, ..ShellConfig::default() };
        assert!(Sandbox::from_config(&cfg).unwrap().bwrap().is_none());
    }
}
