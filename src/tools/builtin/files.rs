//! `file_read`, `file_list`, `file_write`, `file_edit`: files inside the user's own workspace.
//!
//! Paths are relative to the workspace. These tools must never read, list or write anything
//! outside it: absolute paths, `..` components and NUL bytes are refused, every symlink on the
//! way is resolved and must stay inside the canonical workspace, and a write never follows a
//! symlink out (it goes through a temporary file and a rename, which replaces rather than
//! follows). Sizes are capped by `[tools.files]`. What a write or an edit would change is shown
//! to the person approving it (`file_detail.rs`).

use super::confine::{relative, resolve};
use super::file_detail::{edit_detail, write_detail};
use super::plain::{lexical_path, mask_text, preview, str_arg};
use crate::config::FilesConfig;
use crate::tools::{parse_args, Action, Tool, ToolCtx, ToolError, ToolSpec};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Value};
use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Most entries `file_list` shows.
const MAX_LIST: usize = 500;

/// The four file tools with the limits of `cfg` and the workspace quota (MB, 0: none).
pub fn file_tools(cfg: &FilesConfig, quota_mb: u64) -> Vec<Arc<dyn Tool>> {
    let limits = Limits { read: cfg.max_read_bytes, write: cfg.max_write_bytes, quota_mb };
    vec![
        Arc::new(FileRead { spec: read_spec(), limits }),
        Arc::new(FileList { spec: list_spec() }),
        Arc::new(FileWrite { spec: write_spec(), limits }),
        Arc::new(FileEdit { spec: edit_spec(), limits }),
    ]
}

#[derive(Clone, Copy)]
struct Limits {
    read: usize,
    write: usize,
    /// `[tools] workspace_quota_mb`: a full workspace refuses writes and edits.
    quota_mb: u64,
}

pub struct FileRead {
    spec: ToolSpec,
    limits: Limits,
}
pub struct FileList {
    spec: ToolSpec,
}
pub struct FileWrite {
    spec: ToolSpec,
    limits: Limits,
}
pub struct FileEdit {
    spec: ToolSpec,
    limits: Limits,
}

fn spec(name: &str, description: &str, parameters: Value, read_only: bool) -> ToolSpec {
    ToolSpec { name: name.into(), description: description.into(), parameters, read_only }
}

fn read_spec() -> ToolSpec {
    spec(
        "file_read",
        "Read a text file from the user's workspace. `path` is relative to the workspace; `offset` is \
         the first line to show (1-based) and `limit` the number of lines.",
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "file path relative to the workspace"},
                "offset": {"type": "integer", "description": "first line to return, from 1"},
                "limit": {"type": "integer", "description": "most lines to return"}
            },
            "required": ["path"],
            "additionalProperties": false
        }),
        true,
    )
}

fn list_spec() -> ToolSpec {
    spec(
        "file_list",
        "List a directory of the user's workspace (default: the workspace itself).",
        json!({
            "type": "object",
            "properties": {"path": {"type": "string", "description": "directory relative to the workspace"}},
            "additionalProperties": false
        }),
        true,
    )
}

fn write_spec() -> ToolSpec {
    spec(
        "file_write",
        "Create or overwrite a file in the user's workspace with `content` (parent directories are \
         created).",
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "file path relative to the workspace"},
                "content": {"type": "string", "description": "the whole new content"}
            },
            "required": ["path", "content"],
            "additionalProperties": false
        }),
        false,
    )
}

fn edit_spec() -> ToolSpec {
    spec(
        "file_edit",
        "Replace an exact piece of text in a file of the user's workspace. `old` must occur exactly \
         once unless `replace_all` is true.",
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "file path relative to the workspace"},
                "old": {"type": "string", "description": "the exact text to replace"},
                "new": {"type": "string", "description": "the replacement"},
                "replace_all": {"type": "boolean", "description": "replace every occurrence"}
            },
            "required": ["path", "old", "new"],
            "additionalProperties": false
        }),
        false,
    )
}

/// The canonical workspace root, created if it does not exist yet.
fn root(workspace: &Path) -> Result<PathBuf, ToolError> {
    std::fs::create_dir_all(workspace)
        .and_then(|_| std::fs::canonicalize(workspace))
        .map_err(|e| ToolError::Failed(format!("your workspace is not available: {e}")))
}

/// Checks `path`, then resolves it inside `ctx`'s workspace (on a blocking thread) and runs `f`.
pub(super) async fn in_workspace<T, F>(ctx: &ToolCtx, path: &str, f: F) -> Result<T, ToolError>
where
    T: Send + 'static,
    F: FnOnce(&Path, PathBuf) -> Result<T, ToolError> + Send + 'static,
{
    let rel = relative(path)?;
    let workspace = ctx.workspace.clone();
    let shown = path.to_string();
    tokio::task::spawn_blocking(move || {
        let root = root(&workspace)?;
        let full = resolve(&root, &rel, &shown)?;
        f(&root, full)
    })
    .await
    .map_err(|e| ToolError::Failed(format!("file operation failed: {e}")))?
}

pub(super) fn io_err(path: &str) -> impl Fn(std::io::Error) -> ToolError + '_ {
    move |e| match e.kind() {
        std::io::ErrorKind::NotFound => ToolError::Failed(format!("`{path}` does not exist in your workspace")),
        _ => ToolError::Failed(format!("`{path}`: {e}")),
    }
}

/// Writes `content` to `full` through a temporary file in the same directory and a rename, so
/// a symlink put at `full` meanwhile is replaced, never followed. Keeps the old file's mode.
fn write_atomic(full: &Path, content: &[u8], shown: &str) -> Result<(), ToolError> {
    let parent = full.parent().ok_or_else(|| ToolError::Failed(format!("`{shown}` is not a file path")))?;
    let name = full.file_name().ok_or_else(|| ToolError::Failed(format!("`{shown}` is not a file path")))?;
    std::fs::create_dir_all(parent).map_err(io_err(shown))?;
    let tmp = parent.join(format!(".{}.butler-{:08x}.tmp", name.to_string_lossy(), rand::random::<u32>()));
    let result = (|| {
        let mut file = std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        if let Ok(meta) = std::fs::metadata(full) {
            file.set_permissions(meta.permissions())?;
        }
        file.write_all(content)?;
        file.sync_all()?;
        std::fs::rename(&tmp, full)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(io_err(shown))
}

#[derive(Deserialize)]
struct ReadArgs {
    path: String,
    offset: Option<usize>,
    limit: Option<usize>,
}

#[async_trait]
impl Tool for FileRead {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn untrusted_output(&self) -> bool {
        true
    }

    fn action(&self, ctx: &ToolCtx, args: &Value) -> Action {
        let path = str_arg(args, "path");
        Action {
            summary: format!("read {path} from your workspace"),
            paths: vec![lexical_path(&ctx.workspace, path)],
            ..Action::default()
        }
    }

    async fn call(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let args: ReadArgs = parse_args(args)?;
        let max = self.limits.read;
        let shown = args.path.clone();
        in_workspace(ctx, &args.path, move |_, full| {
            let meta = std::fs::metadata(&full).map_err(io_err(&shown))?;
            if meta.is_dir() {
                return Err(ToolError::Failed(format!("`{shown}` is a directory; use file_list")));
            }
            if !meta.is_file() {
                return Err(ToolError::Failed(format!("`{shown}` is not a regular file")));
            }
            let file = std::fs::File::open(&full).map_err(io_err(&shown))?;
            let mut reader = std::io::BufReader::new(file);
            if reader.fill_buf().map_err(io_err(&shown))?.iter().take(8192).any(|b| *b == 0) {
                return Ok(format!("`{shown}` is a binary file ({} bytes); not shown", meta.len()));
            }
            let first = args.offset.unwrap_or(1).max(1);
            let limit = args.limit.unwrap_or(usize::MAX);
            let (mut out, mut line_no, mut shown_lines) = (Vec::new(), 0usize, 0usize);
            let mut line = Vec::new();
            let mut cut = None;
            loop {
                if line_no + 1 < first {
                    if reader.skip_until(b'\n').map_err(io_err(&shown))? == 0 {
                        break;
                    }
                    line_no += 1;
                    continue;
                }
                line.clear();
                if reader.by_ref().take(max as u64 + 1).read_until(b'\n', &mut line).map_err(io_err(&shown))? == 0 {
                    break;
                }
                line_no += 1;
                if shown_lines >= limit {
                    cut = Some(format!("[more lines follow; read on with offset={line_no}]"));
                    break;
                }
                if out.len() + line.len() > max {
                    let room = max - out.len();
                    out.extend_from_slice(&line[..room]);
                    cut = Some(format!("[… cut at {max} bytes (files.max_read_bytes); read on with offset={line_no}]"));
                    break;
                }
                out.extend_from_slice(&line);
                shown_lines += 1;
            }
            let mut text = String::from_utf8_lossy(&out).into_owned();
            if text.is_empty() && cut.is_none() {
                text = if line_no == 0 { "(empty file)".into() } else { format!("(the file has {line_no} lines)") };
            }
            if let Some(marker) = cut {
                if !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str(&marker);
            }
            Ok(text)
        })
        .await
    }
}

#[derive(Deserialize)]
struct ListArgs {
    path: Option<String>,
}

#[async_trait]
impl Tool for FileList {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn action(&self, ctx: &ToolCtx, args: &Value) -> Action {
        let path = args.get("path").and_then(Value::as_str).filter(|p| !p.is_empty()).unwrap_or(".");
        let summary = if path == "." {
            "list the files in your workspace".to_string()
        } else {
            format!("list the files in {path} of your workspace")
        };
        Action { summary, paths: vec![lexical_path(&ctx.workspace, path)], ..Action::default() }
    }

    async fn call(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let args: ListArgs = parse_args(args)?;
        let path = args.path.filter(|p| !p.is_empty()).unwrap_or_else(|| ".".into());
        let shown = path.clone();
        in_workspace(ctx, &path, move |_, full| {
            let mut entries: Vec<String> = Vec::new();
            for entry in std::fs::read_dir(&full).map_err(io_err(&shown))? {
                let entry = entry.map_err(io_err(&shown))?;
                let name = entry.file_name().to_string_lossy().into_owned();
                let meta = entry.metadata().map_err(io_err(&shown))?;
                entries.push(if meta.file_type().is_symlink() {
                    let target = std::fs::read_link(entry.path()).unwrap_or_default();
                    format!("{name} -> {}", target.display())
                } else if meta.is_dir() {
                    format!("{name}/")
                } else {
                    format!("{name} ({} bytes)", meta.len())
                });
            }
            entries.sort();
            let total = entries.len();
            if total == 0 {
                return Ok(format!("`{shown}` is empty"));
            }
            entries.truncate(MAX_LIST);
            let mut text = entries.join("\n");
            if total > MAX_LIST {
                text.push_str(&format!("\n[… {} more entries not shown]", total - MAX_LIST));
            }
            Ok(text)
        })
        .await
    }
}

#[derive(Deserialize)]
struct WriteArgs {
    path: String,
    content: String,
}

#[async_trait]
impl Tool for FileWrite {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn action(&self, ctx: &ToolCtx, args: &Value) -> Action {
        let path = str_arg(args, "path");
        let content = str_arg(args, "content");
        Action {
            summary: format!("write {} bytes to {path}", content.len()),
            paths: vec![lexical_path(&ctx.workspace, path)],
            detail: Some(write_detail(content)),
            ..Action::default()
        }
    }

    async fn call(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let args: WriteArgs = parse_args(args)?;
        if args.content.len() > self.limits.write {
            return Err(ToolError::InvalidArgs(format!(
                "the content is {} bytes; at most {} may be written (files.max_write_bytes)",
                args.content.len(),
                self.limits.write
            )));
        }
        let shown = args.path.clone();
        let quota_mb = self.limits.quota_mb;
        in_workspace(ctx, &args.path, move |root, full| {
            if full == root || full.is_dir() {
                return Err(ToolError::Failed(format!("`{shown}` is a directory")));
            }
            crate::tools::quota::check(root, quota_mb).map_err(ToolError::Failed)?;
            write_atomic(&full, args.content.as_bytes(), &shown)?;
            Ok(format!("Wrote {} bytes to {shown}.", args.content.len()))
        })
        .await
    }
}

#[derive(Deserialize)]
struct EditArgs {
    path: String,
    old: String,
    new: String,
    #[serde(default)]
    replace_all: bool,
}

#[async_trait]
impl Tool for FileEdit {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn action(&self, ctx: &ToolCtx, args: &Value) -> Action {
        let path = str_arg(args, "path");
        let all = args.get("replace_all").and_then(Value::as_bool) == Some(true);
        let (old, new) = (str_arg(args, "old"), str_arg(args, "new"));
        let detail = edit_detail(&ctx.workspace, path, old, new, all, self.limits.read);
        let (old, new) = (mask_text(&preview(old, 60)), mask_text(&preview(new, 60)));
        Action {
            summary: format!("edit {path}: replace {}\"{old}\" with \"{new}\"", if all { "every " } else { "" }),
            paths: vec![lexical_path(&ctx.workspace, path)],
            detail: Some(detail),
            ..Action::default()
        }
    }

    async fn call(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let args: EditArgs = parse_args(args)?;
        if args.old.is_empty() {
            return Err(ToolError::InvalidArgs("`old` is empty; give the exact text to replace".into()));
        }
        let limits = self.limits;
        let shown = args.path.clone();
        in_workspace(ctx, &args.path, move |root, full| {
            let meta = std::fs::metadata(&full).map_err(io_err(&shown))?;
            if meta.is_dir() {
                return Err(ToolError::Failed(format!("`{shown}` is a directory")));
            }
            crate::tools::quota::check(root, limits.quota_mb).map_err(ToolError::Failed)?;
            if meta.len() > limits.read as u64 {
                return Err(ToolError::Failed(format!(
                    "`{shown}` is {} bytes, more than files.max_read_bytes ({}); it cannot be edited here",
                    meta.len(),
                    limits.read
                )));
            }
            let text = std::fs::read_to_string(&full).map_err(|e| match e.kind() {
                std::io::ErrorKind::InvalidData => ToolError::Failed(format!("`{shown}` is not UTF-8 text")),
                _ => io_err(&shown)(e),
            })?;
            let count = text.matches(args.old.as_str()).count();
            if count == 0 {
                return Err(ToolError::Failed(format!(
                    "`old` was not found in {shown}; read the file and copy the text exactly"
                )));
            }
            if count > 1 && !args.replace_all {
                return Err(ToolError::Failed(format!(
                    "`old` occurs {count} times in {shown}; include more surrounding text to make it unique, \
                     or set replace_all"
                )));
            }
            let updated = text.replace(args.old.as_str(), &args.new);
            if updated.len() > limits.write {
                return Err(ToolError::Failed(format!(
                    "the edited file would be {} bytes, more than files.max_write_bytes ({})",
                    updated.len(),
                    limits.write
                )));
            }
            write_atomic(&full, updated.as_bytes(), &shown)?;
            Ok(format!("Replaced {count} occurrence{} in {shown}.", if count == 1 { "" } else { "s" }))
        })
        .await
    }
}
