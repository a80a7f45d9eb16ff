//! How the file tools stay in a workspace: a path must be relative (no `..`, no NUL, nothing
//! absolute), and every symlink on its way is resolved and must lead to a place inside the
//! canonical workspace. Used by the tools themselves and by what they show before they run
//! (`file_detail.rs`).
//!
//! It only reads metadata and links; it must never create, change or open a file.

use crate::tools::ToolError;
use std::path::{Component, Path, PathBuf};

/// `path` as a workspace-relative path, or why it is refused.
pub(super) fn relative(path: &str) -> Result<PathBuf, ToolError> {
    let refused = |why: &str| Err(ToolError::InvalidArgs(format!("refused path `{path}`: {why}")));
    if path.contains('\0') {
        return refused("it contains a NUL byte");
    }
    let p = Path::new(path);
    if p.is_absolute() || path.starts_with('~') {
        return refused("absolute paths are not allowed; give a path relative to your workspace");
    }
    let mut out = PathBuf::new();
    for comp in p.components() {
        match comp {
            Component::Normal(c) => out.push(c),
            Component::CurDir => {}
            Component::ParentDir => return refused("`..` is not allowed; paths stay inside your workspace"),
            Component::RootDir | Component::Prefix(_) => return refused("absolute paths are not allowed"),
        }
    }
    Ok(out)
}

/// `rel` inside `root` with every existing symlink on the way resolved; refused when one
/// leads outside `root` (or nowhere). Components that do not exist yet are appended as they are.
pub(super) fn resolve(root: &Path, rel: &Path, shown: &str) -> Result<PathBuf, ToolError> {
    let mut cur = root.to_path_buf();
    let comps: Vec<_> = rel.components().collect();
    for (i, comp) in comps.iter().enumerate() {
        let next = cur.join(comp);
        match std::fs::symlink_metadata(&next) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = std::fs::canonicalize(&next).map_err(|_| {
                    ToolError::Failed(format!("refused path `{shown}`: it goes through a symlink that points nowhere"))
                })?;
                if !target.starts_with(root) {
                    return Err(ToolError::Failed(format!(
                        "refused path `{shown}`: it goes through a symlink that leads outside your workspace"
                    )));
                }
                cur = target;
            }
            Ok(_) => cur = next,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                cur.extend(&comps[i..]);
                return Ok(cur);
            }
            Err(e) => return Err(ToolError::Failed(format!("cannot open `{shown}`: {e}"))),
        }
    }
    Ok(cur)
}
