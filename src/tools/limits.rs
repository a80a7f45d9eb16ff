//! What one started program (a shell command, a stdio MCP server, a sandboxed hook) may use:
//! live processes, memory and CPU time per process, and the size of one file it writes. The
//! per-process limits are rlimits set in the child before it runs (inherited by everything it
//! starts); the process count is watched from outside, because `RLIMIT_NPROC` counts every
//! process of the user (Butler's own threads too) and does not hold for root at all.
//!
//! This must never limit Butler itself: the rlimits are set only between fork and exec of the
//! child. The watch reads `/proc` only and signals nothing but the process group it was given.

use std::time::Duration;

/// Limits of one started program; 0 means no limit of that kind. With a process limit the
/// program is made a child subreaper, so orphans of its descendants stay in its tree.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// Live processes of the program and everything it started, itself included.
    pub processes: u32,
    /// Writable private memory of each process (`RLIMIT_DATA`: the heap and private mappings;
    /// address space merely reserved, as V8 does, is not counted), in MiB.
    pub memory_mb: u64,
    /// CPU time of each process, in seconds (`RLIMIT_CPU`: SIGXCPU, then SIGKILL).
    pub cpu_secs: u64,
    /// Largest file each process may write, in MiB (`RLIMIT_FSIZE`).
    pub file_mb: u64,
}

impl Limits {
    /// Sets the rlimits in `cmd`'s child between fork and exec.
    pub fn apply(&self, cmd: &mut tokio::process::Command) {
        let mib = |n: u64| n.saturating_mul(1024 * 1024);
        let mut wanted: Vec<(libc::__rlimit_resource_t, u64)> = [
            (libc::RLIMIT_DATA, mib(self.memory_mb)),
            (libc::RLIMIT_CPU, self.cpu_secs),
            (libc::RLIMIT_FSIZE, mib(self.file_mb)),
        ]
        .into_iter()
        .filter(|(_, v)| *v > 0)
        .collect();
        // No core files: one would land in the workspace, holding whatever the process held.
        wanted.push((libc::RLIMIT_CORE, 0));
        let watched = self.processes > 0;
        // SAFETY: the closure runs in the child between fork and exec and only calls setrlimit
        // and prctl, which are async-signal-safe, on values computed before the fork (no
        // allocation).
        unsafe {
            cmd.pre_exec(move || {
                if watched {
                    // The program adopts what its children leave behind (a fork bomb's
                    // processes outlive their parents), so its tree keeps counting them.
                    libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
                }
                for (resource, value) in &wanted {
                    // CPU: SIGXCPU at the soft limit, SIGKILL only a second later, so the
                    // process ends by the signal that says why (equal limits send SIGKILL first).
                    let max = if *resource == libc::RLIMIT_CPU { value.saturating_add(1) } else { *value };
                    let lim = libc::rlimit { rlim_cur: *value, rlim_max: max };
                    if libc::setrlimit(*resource, &lim) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
    }
}

/// How often a shell command's process count is read (a fork bomb doubles in milliseconds).
pub const WATCH_COMMAND: Duration = Duration::from_millis(20);
/// How often a long-running server's is read (it runs for days; its reads should cost nothing).
pub const WATCH_SERVER: Duration = Duration::from_millis(250);

/// Resolves when the program started as `pid` (the leader of process group `pid`) and its
/// descendants number more than `max` live processes (read `every` so often), after killing
/// the whole group (with bubblewrap, the sandbox's PID namespace goes with its parent). Never
/// resolves when `max` is 0 or the count stays within it; a caller races it against the
/// program's end.
pub async fn over_processes(pid: u32, max: u32, every: Duration) -> u32 {
    if max == 0 {
        return std::future::pending().await;
    }
    loop {
        let live = count_tree(pid, max as usize + 1);
        if live > max as usize {
            // SAFETY: kill(2) with a negative pid signals that process group and nothing else.
            unsafe {
                libc::kill(-(pid as i32), libc::SIGKILL);
            }
            return live as u32;
        }
        tokio::time::sleep(every).await;
    }
}

/// Live processes in the tree under `root` (itself included), counting no further than `cap`.
pub fn count_tree(root: u32, cap: usize) -> usize {
    tree(root, cap).len()
}

/// The processes in the tree under `root` (itself first), at most `cap`: each task's
/// `children` file names the processes it started (one whose parent died is adopted by the
/// sandbox's PID 1, so it stays in the tree; without a sandbox it leaves it).
pub fn tree(root: u32, cap: usize) -> Vec<u32> {
    let mut seen = Vec::new();
    let mut stack = vec![root];
    while let Some(pid) = stack.pop() {
        seen.push(pid);
        if seen.len() >= cap {
            break;
        }
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { continue };
        for task in tasks.flatten() {
            let Ok(children) = std::fs::read_to_string(task.path().join("children")) else { continue };
            stack.extend(children.split_whitespace().filter_map(|c| c.parse::<u32>().ok()));
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tree_of_this_process_counts_its_children() {
        let mut kids: Vec<std::process::Child> =
            (0..3).map(|_| std::process::Command::new("sleep").arg("5").spawn().unwrap()).collect();
        let me = std::process::id();
        let counted = count_tree(me, 10_000);
        let capped = count_tree(me, 2);
        for k in &mut kids {
            let _ = k.kill();
            let _ = k.wait();
        }
        assert!(counted >= 4, "this process and its three children: {counted}");
        assert_eq!(capped, 2, "counting stops at the cap");
    }
}
