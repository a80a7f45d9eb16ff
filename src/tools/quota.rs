//! A person's workspace quota (`[tools] workspace_quota_mb`): how much their workspace holds,
//! and the refusal a writing tool gives when it is full. The shell also gets the quota as the
//! largest file one of its processes may write, so one command cannot fill the disk past it.
//!
//! This must never follow a symbolic link out of the workspace while counting, nor count a
//! file twice through a hard link it has seen; it reads sizes only.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// At most this many entries are looked at; a workspace with more counts as full.
const MAX_ENTRIES: usize = 200_000;

/// Bytes the folder `root` holds (allocated blocks, so sparse files count what they use), or
/// `u64::MAX` past [`MAX_ENTRIES`]. A missing folder holds 0.
pub fn usage(root: &Path) -> u64 {
    let mut total = 0u64;
    let mut entries = 0usize;
    let mut seen = HashSet::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(list) = std::fs::read_dir(&dir) else { continue };
        for entry in list.flatten() {
            entries += 1;
            if entries > MAX_ENTRIES {
                return u64::MAX;
            }
            // symlink_metadata: a link counts as itself and is never followed.
            let Ok(meta) = std::fs::symlink_metadata(entry.path()) else { continue };
            if meta.nlink() > 1 && !meta.is_dir() && !seen.insert((meta.dev(), meta.ino())) {
                continue;
            }
            total = total.saturating_add(meta.blocks().saturating_mul(512));
            if meta.is_dir() {
                stack.push(entry.path());
            }
        }
    }
    total
}

/// `Err` with the words a person reads when the workspace at `root` is at or over `quota_mb`
/// (0: no quota).
pub fn check(root: &Path, quota_mb: u64) -> Result<(), String> {
    if quota_mb == 0 {
        return Ok(());
    }
    let used = usage(root);
    let quota = quota_mb.saturating_mul(1024 * 1024);
    if used < quota {
        return Ok(());
    }
    Err(format!(
        "your workspace is full: it holds {} of its {quota_mb} MB ([tools] workspace_quota_mb); delete files \
         (or ask the owner to raise the quota) before writing more",
        shown(used)
    ))
}

/// [`check`] off the async runtime's threads (counting walks a folder).
pub async fn check_blocking(root: &Path, quota_mb: u64) -> Result<(), String> {
    if quota_mb == 0 {
        return Ok(());
    }
    let root = root.to_path_buf();
    tokio::task::spawn_blocking(move || check(&root, quota_mb)).await.unwrap_or(Ok(()))
}

/// A size in MB for people ("more than 200,000 files" past the count limit).
fn shown(bytes: u64) -> String {
    if bytes == u64::MAX {
        format!("more than {MAX_ENTRIES} files")
    } else {
        format!("{:.1} MB", bytes as f64 / 1024.0 / 1024.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_counts_files_once_and_never_follows_links() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/b/one"), vec![1u8; 300_000]).unwrap();
        std::fs::hard_link(root.join("a/b/one"), root.join("two")).unwrap();
        let outside = dir.path().join("big");
        std::fs::write(&outside, vec![1u8; 2_000_000]).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("link")).unwrap();
        let used = usage(&root);
        assert!((300_000..700_000).contains(&used), "one 300 kB file, counted once, and folders: {used}");
        assert_eq!(usage(&dir.path().join("missing")), 0);
        // (quota MB, refused)
        for (quota, refused) in [(0, false), (1, false), (0u64, false)] {
            assert_eq!(check(&root, quota).is_err(), refused, "quota {quota}");
        }
        std::fs::write(root.join("more"), vec![1u8; 1_200_000]).unwrap();
        let e = check(&root, 1).unwrap_err();
        assert!(e.starts_with("your workspace is full: it holds 1.") && e.contains("of its 1 MB"), "{e}");
    }
}
