//! `skill {name, file?}`: loads a skill's instructions (its SKILL.md body) with the list of the
//! other files of its folder, or, with `file`, one of those files.
//!
//! Read-only. It must never read outside the skill's own folder: `file` is relative, `..`,
//! absolute paths and NUL bytes are refused, and the resolved path (symlinks followed) must stay
//! inside the canonical folder. Sizes and listings are capped.

use super::catalog::{Skill, Skills};
use super::prompt::SKILL_TOOL;
use crate::tools::{parse_args, Action, Tool, ToolCtx, ToolError, ToolSpec};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Value};
use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// Largest file `file` returns, in bytes.
pub const MAX_FILE_BYTES: usize = 256 * 1024;
/// Most files listed for one skill.
pub const MAX_LISTED: usize = 200;
/// Deepest subfolder listed.
const MAX_DEPTH: usize = 4;

pub struct SkillTool {
    spec: ToolSpec,
    skills: Arc<Skills>,
}

impl SkillTool {
    pub fn new(skills: Arc<Skills>) -> Self {
        let spec = ToolSpec {
            name: SKILL_TOOL.into(),
            description: "Load a skill (see Skills in your instructions): returns its instructions and the list of \
                          its other files. With `file`, returns one of those files instead."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "the skill's name"},
                    "file": {"type": "string", "description": "a file of the skill's folder, as listed (e.g. `reference.md`)"}
                },
                "required": ["name"],
                "additionalProperties": false
            }),
            read_only: true,
        };
        Self { spec, skills }
    }
}

#[derive(Deserialize)]
struct Args {
    name: String,
    file: Option<String>,
}

#[async_trait]
impl Tool for SkillTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn action(&self, _ctx: &ToolCtx, args: &Value) -> Action {
        let name = args.get("name").and_then(Value::as_str).unwrap_or("");
        let file = args.get("file").and_then(Value::as_str);
        let mut action = Action { summary: format!("read the skill `{name}`"), ..Action::default() };
        if let Some(file) = file {
            action.summary = format!("read `{file}` of the skill `{name}`");
            // The path, for the hard deny list: where it would be read from (not resolved yet).
            if let Some(dir) = self.skills.current().get(name).and_then(|s| s.dir.clone()) {
                action.paths.push(crate::tools::builtin::plain::lexical_path(&dir, file));
            }
        }
        action
    }

    async fn call(&self, _ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let args: Args = parse_args(args)?;
        let catalog = self.skills.load().await;
        let Some(skill) = catalog.get(&args.name).cloned() else {
            let names = catalog.names().join(", ");
            return Err(ToolError::InvalidArgs(format!("no skill `{}`; the skills are: {names}", args.name)));
        };
        let work = move || match args.file {
            None => Ok(instructions(&skill)),
            Some(file) => read_file(&skill, &file),
        };
        tokio::task::spawn_blocking(work).await.map_err(|e| ToolError::Failed(format!("skill read failed: {e}")))?
    }
}

/// The body, then the folder's other files.
fn instructions(skill: &Skill) -> String {
    let mut out = format!("# Skill `{}`\n\n{}\n", skill.name, skill.body);
    let files = skill.dir.as_deref().map(list_files).unwrap_or_default();
    if !files.is_empty() {
        out.push_str("\nOther files of this skill (read one with `skill` and `file`):\n");
        for f in &files {
            out.push_str(&format!("- {f}\n"));
        }
        if files.len() >= MAX_LISTED {
            out.push_str(&format!("(only the first {MAX_LISTED} are listed)\n"));
        }
    }
    out
}

/// The files under `dir` (relative, `/`-separated, sorted), SKILL.md itself, hidden entries and
/// anything that resolves outside `dir` left out.
pub fn list_files(dir: &Path) -> Vec<String> {
    let Ok(root) = std::fs::canonicalize(dir) else { return Vec::new() };
    let mut out = Vec::new();
    walk(&root, &root, 0, &mut out);
    out.sort();
    out
}

fn walk(root: &Path, dir: &Path, depth: usize, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        if out.len() >= MAX_LISTED {
            return;
        }
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let path = entry.path();
        let Ok(real) = std::fs::canonicalize(&path) else { continue };
        if !real.starts_with(root) {
            continue;
        }
        let Ok(meta) = std::fs::metadata(&real) else { continue };
        if meta.is_dir() {
            // A link back up would loop: only real subfolders are walked.
            let is_link = entry.file_type().map(|t| t.is_symlink()).unwrap_or(true);
            if depth < MAX_DEPTH && !is_link {
                walk(root, &path, depth + 1, out);
            }
        } else if meta.is_file() {
            let Ok(rel) = path.strip_prefix(root) else { continue };
            let rel = rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/");
            if rel != "SKILL.md" {
                out.push(rel);
            }
        }
    }
}

/// `file` of `skill`'s folder, confined to it.
fn read_file(skill: &Skill, file: &str) -> Result<String, ToolError> {
    let refused = |why: &str| Err(ToolError::InvalidArgs(format!("refused file `{file}`: {why}")));
    let Some(dir) = &skill.dir else {
        return Err(ToolError::InvalidArgs(format!(
            "the built-in skill `{}` has no other files; call `skill` without `file`",
            skill.name
        )));
    };
    if file.is_empty() || file.contains('\0') {
        return refused("give a file name as listed");
    }
    let rel = PathBuf::from(file);
    if rel.is_absolute() {
        return refused("absolute paths are not allowed; give the path inside the skill's folder");
    }
    if rel.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir)) {
        return refused("`..` is not allowed; only files inside the skill's folder can be read");
    }
    let root = std::fs::canonicalize(dir).map_err(|e| ToolError::Failed(format!("skill folder unreadable: {e}")))?;
    let real = match std::fs::canonicalize(root.join(&rel)) {
        Ok(p) => p,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let listed = list_files(dir).join(", ");
            return Err(ToolError::InvalidArgs(format!(
                "no file `{file}` in skill `{}`; its files: {listed}",
                skill.name
            )));
        }
        Err(e) => return Err(ToolError::Failed(format!("cannot read `{file}`: {e}"))),
    };
    if !real.starts_with(&root) {
        return refused("it leads outside the skill's folder");
    }
    if real.components().skip(root.components().count()).any(|c| c.as_os_str().to_string_lossy().starts_with('.')) {
        return refused("hidden files are not part of a skill");
    }
    let meta = std::fs::metadata(&real).map_err(|e| ToolError::Failed(format!("cannot read `{file}`: {e}")))?;
    if !meta.is_file() {
        return refused("not a file");
    }
    if meta.len() > MAX_FILE_BYTES as u64 {
        return Err(ToolError::Failed(format!("`{file}` is {} bytes; at most {MAX_FILE_BYTES} are read", meta.len())));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(&real)
        .and_then(|f| f.take(MAX_FILE_BYTES as u64).read_to_end(&mut bytes))
        .map_err(|e| ToolError::Failed(format!("cannot read `{file}`: {e}")))?;
    String::from_utf8(bytes).map_err(|_| ToolError::Failed(format!("`{file}` is not a text file")))
}
