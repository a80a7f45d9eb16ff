//! What a file write or edit would change, for the approval request ([`Detail`]): a write shows
//! the content it puts; an edit shows a unified diff of the file as it is now against the file
//! as the edit would leave it, or, when the file cannot be read (missing, not text, too large,
//! behind a link out of the workspace, or the text to replace not found once), the old and new
//! text as `-`/`+` lines.
//!
//! It only reads, and only inside the workspace: the path goes through the file tools' own guard
//! (relative, every symlink on the way resolved and kept inside the canonical workspace, the
//! last component opened without following a link), and nothing is created. Every line shown is
//! masked like the summaries (`mask_text`).

use super::confine::{relative, resolve};
use super::plain::mask_lines;
use crate::tools::diff::unified;
use crate::tools::{Detail, DetailKind};
use std::io::Read;
use std::path::Path;

/// Lines of context around each change of an edit's diff.
const CONTEXT: usize = 3;

/// The content a write would put, masked.
pub(super) fn write_detail(content: &str) -> Detail {
    Detail::new(DetailKind::Content, mask_lines(content))
}

/// What replacing `old` with `new` in `path` (every occurrence with `all`) would change.
pub(super) fn edit_detail(workspace: &Path, path: &str, old: &str, new: &str, all: bool, max_read: usize) -> Detail {
    let names = (format!("a/{path}"), format!("b/{path}"));
    let diff = current_text(workspace, path, max_read)
        .filter(|text| match text.matches(old).count() {
            0 => false,
            1 => true,
            _ => all,
        })
        .filter(|_| !old.is_empty())
        .map(|text| {
            let edited = if all { text.replace(old, new) } else { text.replacen(old, new, 1) };
            unified(&text, &edited, &names.0, &names.1, CONTEXT)
        });
    let text = diff.unwrap_or_else(|| {
        let mut out = format!("--- {}\n+++ {}\n", names.0, names.1);
        old.lines().for_each(|l| out.push_str(&format!("-{l}\n")));
        new.lines().for_each(|l| out.push_str(&format!("+{l}\n")));
        out
    });
    Detail::new(DetailKind::Diff, mask_lines(&text))
}

/// The text of `path` in the workspace now, if it is a UTF-8 regular file of at most `max`
/// bytes reached without leaving the workspace.
fn current_text(workspace: &Path, path: &str, max: usize) -> Option<String> {
    use std::os::unix::fs::OpenOptionsExt;
    let rel = relative(path).ok()?;
    let root = std::fs::canonicalize(workspace).ok()?;
    let full = resolve(&root, &rel, path).ok()?;
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(&full).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() > max as u64 {
        return None;
    }
    let mut text = String::new();
    file.take(max as u64 + 1).read_to_string(&mut text).ok()?;
    (text.len() <= max).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_details_table() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(ws.join("notes")).unwrap();
        std::fs::write(ws.join("notes/todo.md"), "- tea\n- milk\n- bread\n").unwrap();
        std::fs::write(ws.join("twice.txt"), "a\nb\na\n").unwrap();
        std::fs::write(dir.path().join("outside.txt"), "- tea\n").unwrap();
        std::os::unix::fs::symlink(dir.path().join("outside.txt"), ws.join("link.txt")).unwrap();
        std::os::unix::fs::symlink(ws.join("notes/todo.md"), ws.join("inside.md")).unwrap();
        std::fs::write(ws.join("big.txt"), "x\n".repeat(100)).unwrap();
        let fallback = "--- a/{p}\n+++ b/{p}\n-- tea\n+- green tea\n+- token=***\n";
        // (path, old, new, all, detail)
        let cases: Vec<(&str, &str, &str, bool, String)> = vec![
            (
                "notes/todo.md",
                "- tea\n",
                "- green tea\n- token=s3cret\n",
                false,
                "--- a/notes/todo.md\n+++ b/notes/todo.md\n@@ -1,3 +1,4 @@\n-- tea\n+- green tea\n+- token=***\n \
                 - milk\n - bread\n"
                    .into(),
            ),
            (
                "inside.md",
                "- milk",
                "- oat milk",
                false,
                "--- a/inside.md\n+++ b/inside.md\n@@ -1,3 +1,3 @@\n - tea\n-- milk\n+- oat milk\n - bread\n".into(),
            ),
            (
                "twice.txt",
                "a",
                "z",
                true,
                "--- a/twice.txt\n+++ b/twice.txt\n@@ -1,3 +1,3 @@\n-a\n+z\n b\n-a\n+z\n".into(),
            ),
            ("twice.txt", "a", "z", false, "--- a/twice.txt\n+++ b/twice.txt\n-a\n+z\n".into()),
            ("link.txt", "- tea\n", "- green tea\n- token=s3cret\n", false, fallback.replace("{p}", "link.txt")),
            ("missing.md", "- tea\n", "- green tea\n- token=s3cret\n", false, fallback.replace("{p}", "missing.md")),
            (
                "../outside.txt",
                "- tea\n",
                "- green tea\n- token=s3cret\n",
                false,
                fallback.replace("{p}", "../outside.txt"),
            ),
            ("notes", "- tea\n", "- green tea\n- token=s3cret\n", false, fallback.replace("{p}", "notes")),
            ("big.txt", "x", "y", true, "--- a/big.txt\n+++ b/big.txt\n-x\n+y\n".into()),
            (
                "notes/todo.md",
                "- coffee",
                "- tea",
                false,
                "--- a/notes/todo.md\n+++ b/notes/todo.md\n-- coffee\n+- tea\n".into(),
            ),
        ];
        for (path, old, new, all, want) in cases {
            let got = edit_detail(&ws, path, old, new, all, 100);
            assert_eq!(got, Detail::new(DetailKind::Diff, want), "{path} {old:?}");
        }
        assert_eq!(std::fs::read_to_string(dir.path().join("outside.txt")).unwrap(), "- tea\n", "nothing written");
        let content = write_detail("API_KEY=sk-1\nhello Bearer abc\n");
        assert_eq!(content, Detail::new(DetailKind::Content, "API_KEY=***\nhello Bearer ***\n"));
    }
}
