//! glibc's allocator settings for `butler serve`: no per-thread caches (tcache) and no fast
//! bins, so that memory freed after a burst of conversations can go back to the system.
//!
//! Why (issue 35, point 4): after 20,000 sessions retire, most of what a trim could not return
//! was free chunks held in the worker threads' tcaches and fast bins, each scattered over the
//! burst's grown heap and keeping its page resident (a heap walk of a stopped process: 531
//! resident pages held by no live chunk, 254 + 277 of them by a tcache chunk). Without those
//! caches the process returns to within 8% of its idle memory instead of 30-40%, for a start
//! 2-5 ms longer and a few percent of CPU at most (README, "Stop 56, memory after a burst").
//!
//! glibc reads these settings only from `GLIBC_TUNABLES` when a program starts, so `serve` sets
//! them and executes itself again, once, before any thread exists. It must never execute
//! itself more than once (the mark below says it already did), never override a
//! `glibc.malloc.*` setting the operator chose, and never leave its settings or its mark to
//! the processes Butler starts (they are put back as they were at once).
//!
//! The deployment files (deploy/Dockerfile, deploy/butler.service) give both variables as the
//! second start finds them, so those deployments start once.

/// What `serve` asks of glibc's allocator.
pub const TUNABLES: &str = "glibc.malloc.tcache_count=0:glibc.malloc.mxfast=0";

/// Set for the second start only: the operator's own `GLIBC_TUNABLES` (empty when unset). A
/// deployment that starts `serve` with `GLIBC_TUNABLES` set to [`TUNABLES`] and this set empty
/// starts once and still keeps both from the processes Butler starts (deploy/Dockerfile).
pub const MARK: &str = "BUTLER_MALLOC_TUNED";
const GLIBC: &str = "GLIBC_TUNABLES";

/// What to do at start, decided from the arguments and the two variables.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Nothing: not `serve`, or the operator set `glibc.malloc.*` settings of their own.
    Keep,
    /// Execute again with `GLIBC_TUNABLES` set to this, the operator's value kept in the mark.
    Exec { tunables: String, mark: String },
    /// The second start: put `GLIBC_TUNABLES` back to this (`None`: remove it), drop the mark.
    Restore(Option<String>),
}

/// Decides the step. `args` are the arguments after the program's name.
pub fn step(args: &[String], glibc: Option<&str>, mark: Option<&str>) -> Step {
    if let Some(original) = mark {
        return Step::Restore((!original.is_empty()).then(|| original.to_string()));
    }
    if !is_serve(args) || glibc.is_some_and(|t| t.contains("glibc.malloc.")) {
        return Step::Keep;
    }
    let original = glibc.unwrap_or("");
    let tunables = if original.is_empty() { TUNABLES.to_string() } else { format!("{original}:{TUNABLES}") };
    Step::Exec { tunables, mark: original.to_string() }
}

/// Whether the command is `serve` (the first argument that is not `--config`'s).
fn is_serve(args: &[String]) -> bool {
    let mut rest = args.iter();
    while let Some(a) = rest.next() {
        match a.as_str() {
            "--config" => {
                rest.next();
            }
            a if a.starts_with("--config=") => {}
            a => return a == "serve",
        }
    }
    false
}

/// [`described`] when the operator's own `GLIBC_TUNABLES` has the allocator's settings.
const OPERATORS: &str = "glibc's, as GLIBC_TUNABLES sets them";

/// What [`tune`] found or did, for `serve`'s start-up log line.
static SETTINGS: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();

/// The allocator settings this process runs with, in words (logged when `serve` starts).
pub fn described() -> &'static str {
    SETTINGS.get().copied().unwrap_or("the system allocator's defaults")
}

/// Applies [`step`] to this process. Call it first in `main`, while the process has one
/// thread (it changes the environment). On success of an exec it does not return; when the
/// exec fails, `serve` goes on with glibc's defaults and a warning.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn tune() {
    use std::os::unix::process::CommandExt;
    let mut all = std::env::args_os();
    let arg0 = all.next().unwrap_or_default();
    let args: Vec<String> = all.map(|a| a.to_string_lossy().into_owned()).collect();
    let glibc = std::env::var(GLIBC).ok();
    let mark = std::env::var(MARK).ok();
    match step(&args, glibc.as_deref(), mark.as_deref()) {
        Step::Keep => {
            if glibc.is_some_and(|t| t.contains("glibc.malloc.")) {
                let _ = SETTINGS.set(OPERATORS);
            }
        }
        Step::Restore(original) => {
            // A deployment giving the mark (deploy/Dockerfile) can be started with other settings.
            let _ = SETTINGS.set(if glibc.is_some_and(|t| t.ends_with(TUNABLES)) {
                "glibc's without per-thread caches and fast bins (freed memory goes back)"
            } else {
                OPERATORS
            });
            std::env::remove_var(MARK);
            match original {
                Some(v) => std::env::set_var(GLIBC, v),
                None => std::env::remove_var(GLIBC),
            }
        }
        Step::Exec { tunables, mark } => {
            let Ok(exe) = std::env::current_exe() else { return };
            // The arguments as given, not as text (a path need not be UTF-8).
            let err = std::process::Command::new(exe)
                .arg0(&arg0)
                .args(std::env::args_os().skip(1))
                .env(GLIBC, &tunables)
                .env(MARK, &mark)
                .exec();
            let _ = SETTINGS.set("glibc's defaults: starting again with the settings failed");
            eprintln!(
                "butler: warning: could not start again with the allocator settings {TUNABLES} ({err}); \
                 memory freed after busy times may stay with the process"
            );
        }
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn tune() {}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn serve_executes_once_with_the_settings_and_gives_the_operators_back() {
        let exec = |t: &str, m: &str| Step::Exec { tunables: t.into(), mark: m.into() };
        // (arguments, GLIBC_TUNABLES, mark) -> step
        let table: &[(&str, Option<&str>, Option<&str>, Step)] = &[
            ("serve", None, None, exec(TUNABLES, "")),
            ("--config b.toml serve", None, None, exec(TUNABLES, "")),
            ("--config=b.toml serve", None, None, exec(TUNABLES, "")),
            // The operator's other tunables are kept, before ours.
            (
                "serve",
                Some("glibc.rtld.nns=2"),
                None,
                exec(&format!("glibc.rtld.nns=2:{TUNABLES}"), "glibc.rtld.nns=2"),
            ),
            // The operator chose allocator settings: theirs stand.
            ("serve", Some("glibc.malloc.tcache_count=7"), None, Step::Keep),
            // Other commands are short: no second start.
            ("chat", None, None, Step::Keep),
            ("doctor", None, None, Step::Keep),
            ("--config serve chat", None, None, Step::Keep),
            ("", None, None, Step::Keep),
            // The second start: whatever the arguments, never again, and the operator's value back.
            ("serve", Some(TUNABLES), Some(""), Step::Restore(None)),
            ("serve", Some("x"), Some("glibc.rtld.nns=2"), Step::Restore(Some("glibc.rtld.nns=2".into()))),
        ];
        for (a, glibc, mark, want) in table {
            assert_eq!(&step(&args(a), *glibc, *mark), want, "args {a:?} glibc {glibc:?} mark {mark:?}");
        }
    }
}
