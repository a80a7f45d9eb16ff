//! How a stdio MCP server is started: in the sandbox its config asks for (bubblewrap unless
//! `sandbox = "none"`), in a folder of its own that is also its HOME, with only the environment
//! it is given and within its limits. Sandboxed, it sees the system's programs, its folder,
//! its own program file and the `paths` its config names, and nothing of Butler: not its
//! working directory, config file, database, data directory, environment or processes.
//!
//! This must never show a sandboxed server a host path its config did not name, and never
//! start it unsandboxed when bubblewrap was asked for and is missing (it fails instead).

use crate::config::{McpServerConfig, SandboxMode};
use crate::secrets::Vault;
use crate::tools::limits::Limits;
use crate::tools::sandbox::{Binds, Sandbox, SAFE_PATH};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Everything a start needs.
pub(super) struct Start {
    pub sandbox: Sandbox,
    pub workdir: PathBuf,
    /// The program, an absolute path when sandboxed.
    pub program: String,
    pub env: Vec<(String, OsString)>,
}

/// The folder a sandboxed server without `cwd` works in, below `root` (the workspace folder).
pub fn home_of(root: &Path, server: &str) -> PathBuf {
    root.join(".mcp").join(server)
}

/// How to start `cfg`'s `command`.
pub(super) fn prepare(cfg: &McpServerConfig, command: &str, vault: &Vault) -> Result<Start, String> {
    let limits = Limits { processes: cfg.max_processes, memory_mb: cfg.max_memory_mb, cpu_secs: 0, file_mb: 0 };
    let mut env: Vec<(String, OsString)> = vec![("PATH".into(), SAFE_PATH.into())];
    for key in ["LANG", "LC_ALL", "TZ"] {
        if let Some(v) = std::env::var_os(key) {
            env.push((key.into(), v));
        }
    }
    let start = match cfg.sandbox {
        SandboxMode::None => {
            let workdir = match &cfg.cwd {
                Some(dir) => PathBuf::from(dir),
                None => std::env::current_dir().map_err(|e| format!("no working directory: {e}"))?,
            };
            if let Some(home) = std::env::var_os("HOME") {
                env.push(("HOME".into(), home));
            }
            Start { sandbox: Sandbox::none().with_limits(limits), workdir, program: command.to_string(), env }
        }
        SandboxMode::Bwrap => {
            let sandbox = Sandbox::new(SandboxMode::Bwrap, cfg.network).ok_or(
                "it runs in bubblewrap (sandbox = \"bwrap\") but `bwrap` is not on PATH; install bubblewrap or set \
                 sandbox = \"none\" for this server",
            )?;
            let workdir = match &cfg.cwd {
                Some(dir) => std::path::absolute(dir).map_err(|e| format!("cwd `{dir}`: {e}"))?,
                None => home_of(&std::env::temp_dir().join("butler-mcp"), &cfg.name),
            };
            make_private_dir(&workdir)?;
            env.push(("HOME".into(), workdir.clone().into_os_string()));
            let program = locate(command).ok_or_else(|| {
                let place = if command.contains('/') { "" } else { " on PATH" };
                format!("`{command}` could not be started: no such program{place}")
            })?;
            let paths: Vec<PathBuf> = cfg.paths.iter().map(PathBuf::from).collect();
            let shown =
                |p: &Path| p.starts_with("/usr") || p.starts_with(&workdir) || paths.iter().any(|d| p.starts_with(d));
            let read_only = if shown(&program) { vec![] } else { vec![program.clone()] };
            let binds = Binds { read_only, read_write: paths.clone() };
            let program = program.display().to_string();
            Start { sandbox: sandbox.with_binds(binds).with_limits(limits), workdir, program, env }
        }
    };
    let mut start = start;
    for (k, v) in &cfg.env {
        start.env.retain(|(key, _)| key != k);
        // `secret:NAME` becomes that secret's value here, on the host side, and nowhere else.
        let value = vault.resolve(v.expose()).map_err(|e| format!("env {k}: {e}"))?;
        start.env.push((k.clone(), value.into()));
    }
    Ok(start)
}

/// `command` as an absolute path: itself when it names a file (made absolute), else the first
/// match on Butler's PATH, then on the sandbox's.
fn locate(command: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    if command.contains('/') {
        return std::path::absolute(command).ok().filter(|p| runnable(p));
    }
    let host = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&host)
        .chain(std::env::split_paths(SAFE_PATH))
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(command))
        .find(|p| runnable(p))
}

/// Creates `dir` (and its parents) private to Butler's user.
fn make_private_dir(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("its folder {} could not be made: {e}", dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sandboxed_server_gets_its_folder_its_program_and_named_paths_only() {
        if crate::tools::sandbox::find_bwrap().is_none() {
            // The start refuses without bwrap; that refusal is the other case below.
            let cfg = McpServerConfig { name: "x".into(), ..Default::default() };
            assert!(prepare(&cfg, "sh", &Vault::default()).err().unwrap().contains("bwrap"));
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("bin/server");
        std::fs::create_dir_all(exe.parent().unwrap()).unwrap();
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&exe, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let home = home_of(dir.path(), "notes");
        let mut cfg = McpServerConfig {
            name: "notes".into(),
            cwd: Some(home.display().to_string()),
            paths: vec!["/srv/notes".into()],
            ..Default::default()
        };
        cfg.env.insert("HOME".into(), crate::config::Secret::new("/elsewhere"));
        let start = prepare(&cfg, &exe.display().to_string(), &Vault::default()).unwrap();
        assert_eq!(start.workdir, home);
        assert!(home.is_dir(), "its folder is made");
        assert_eq!(start.program, exe.display().to_string());
        let env: Vec<(&str, String)> =
            start.env.iter().map(|(k, v)| (k.as_str(), v.to_string_lossy().into_owned())).collect();
        assert!(env.contains(&("HOME", "/elsewhere".into())), "the server's env wins: {env:?}");
        assert!(env.contains(&("PATH", SAFE_PATH.into())), "{env:?}");
        assert!(!env.iter().any(|(k, _)| *k == "BUTLER_DATA_DIR" || *k == "OPENAI_API_KEY"), "{env:?}");
        // A program on the system's PATH needs no bind of its own.
        assert!(prepare(&cfg, "sh", &Vault::default()).unwrap().program.starts_with('/'));
        assert!(prepare(&cfg, "no-such-program-xyz", &Vault::default())
            .err()
            .unwrap()
            .contains("could not be started: no such program on PATH"));
    }
}
