//! `send_file`: sends a file from the user's workspace (something a file tool wrote, a file the
//! person sent earlier under `media/`) to the conversation the turn is answering, as a platform
//! document or, for an image, a photo.
//!
//! The file is copied to `media/sent/` in the same workspace and the copy goes into the outbox
//! with the caption, so delivery survives a restart and happens once; this tool never talks to
//! a platform itself. It must never read outside the workspace (the file tools' guards) nor
//! send anywhere but the current conversation.

use super::files::{in_workspace, io_err};
use super::plain::{lexical_path, mask_text, preview, str_arg};
use crate::store::NewOutbox;
use crate::tools::{parse_args, Action, Tool, ToolCtx, ToolError, ToolSpec};
use async_trait::async_trait;
use butler_channel::OutFile;
use serde::Deserialize;
use serde_json::{json, Value};
use std::io::Read;

/// Largest file sent (Telegram bots may upload up to 50 MB; Discord and Slack take as much or more
/// only on some plans, and refuse with a clear error).
pub const MAX_SEND_BYTES: u64 = 50 * 1024 * 1024;
/// Photos above this go as documents (Telegram's `sendPhoto` limit).
const MAX_PHOTO_BYTES: u64 = 10 * 1024 * 1024;
/// Longest caption (Telegram allows 1,024 characters; longer text belongs in the reply).
const MAX_CAPTION_CHARS: usize = 1_000;

pub struct SendFile {
    spec: ToolSpec,
}

impl SendFile {
    pub fn new() -> Self {
        Self {
            spec: ToolSpec {
                name: "send_file".into(),
                description: "Send a file from your workspace to this conversation (as a photo for images, \
                              else as a document), e.g. a file you wrote with file_write or one the person sent \
                              (under media/). Delivered once, after this call."
                    .into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "description": "path relative to your workspace"},
                        "caption": {"type": "string", "description": "optional short text shown with the file"},
                        "as_document": {"type": "boolean", "description": "send an image as a file, not as a photo"}
                    },
                    "required": ["path"],
                    "additionalProperties": false
                }),
                // Like the agent's own reply: it only reads the workspace and answers the
                // conversation the person is in. Credential paths stay denied by the hard list.
                read_only: true,
            },
        }
    }
}

impl Default for SendFile {
    fn default() -> Self {
        Self::new()
    }
}

#[derive(Deserialize)]
struct Args {
    path: String,
    #[serde(default)]
    caption: Option<String>,
    #[serde(default)]
    as_document: bool,
}

/// What was checked about the file before it is queued.
struct Picked {
    copy: std::path::PathBuf,
    name: String,
    mime: &'static str,
    size: u64,
}

/// Whether an image goes as a photo: a type every platform shows inline, and small enough.
pub fn as_photo(mime: &str, size: u64, as_document: bool) -> bool {
    !as_document && matches!(mime, "image/jpeg" | "image/png" | "image/webp") && size <= MAX_PHOTO_BYTES
}

#[async_trait]
impl Tool for SendFile {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn action(&self, ctx: &ToolCtx, args: &Value) -> Action {
        let path = str_arg(args, "path");
        let caption = str_arg(args, "caption");
        let with =
            if caption.is_empty() { String::new() } else { format!(" with \"{}\"", mask_text(&preview(caption, 120))) };
        Action {
            summary: format!("send {path} from your workspace to this conversation{with}"),
            paths: vec![lexical_path(&ctx.workspace, path)],
            ..Action::default()
        }
    }

    async fn call(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let args: Args = parse_args(args)?;
        let caption = args.caption.unwrap_or_default().trim().to_string();
        if caption.chars().count() > MAX_CAPTION_CHARS {
            return Err(ToolError::InvalidArgs(format!(
                "`caption` is longer than {MAX_CAPTION_CHARS} characters; put long text in your reply"
            )));
        }
        let shown = args.path.clone();
        let picked = in_workspace(ctx, &args.path, move |root, full| pick(root, &full, &shown)).await?;
        let photo = as_photo(picked.mime, picked.size, args.as_document);
        let key = format!("file:{}", uuid::Uuid::new_v4());
        let new = NewOutbox::message(key, ctx.conversation.to_string(), caption).with_file(OutFile {
            path: picked.copy.display().to_string(),
            name: picked.name.clone(),
            mime: picked.mime.to_string(),
            size: picked.size,
            photo,
        });
        let row =
            ctx.store.send(&new).await.map_err(|e| ToolError::Failed(format!("the file could not be queued: {e}")))?;
        tracing::info!(outbox = row.id, user = %ctx.user.id, size = picked.size, mime = picked.mime, "send_file queued");
        let how = if photo { "photo" } else { "document" };
        Ok(format!(
            "Sent {} ({}, {}) to this conversation as a {how}; it is delivered after this call.",
            picked.name,
            picked.mime,
            human_size(picked.size)
        ))
    }
}

/// Checks the file, sniffs its type and copies it to `media/sent/` (streamed, never read whole).
fn pick(root: &std::path::Path, full: &std::path::Path, shown: &str) -> Result<Picked, ToolError> {
    let meta = std::fs::metadata(full).map_err(io_err(shown))?;
    if !meta.is_file() {
        return Err(ToolError::Failed(format!("`{shown}` is not a regular file")));
    }
    if meta.len() == 0 {
        return Err(ToolError::Failed(format!("`{shown}` is empty; there is nothing to send")));
    }
    if meta.len() > MAX_SEND_BYTES {
        return Err(ToolError::Failed(format!(
            "`{shown}` is {}; files up to {} can be sent",
            human_size(meta.len()),
            human_size(MAX_SEND_BYTES)
        )));
    }
    let mut head = [0u8; 512];
    let n = std::fs::File::open(full).and_then(|mut f| f.read(&mut head)).map_err(io_err(shown))?;
    let mime = crate::media::sniff(&head[..n]).unwrap_or("application/octet-stream");
    let name = full.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "file".into());
    let dir = root.join("media").join("sent");
    std::fs::create_dir_all(&dir).map_err(|e| ToolError::Failed(format!("cannot keep a copy to send: {e}")))?;
    let safe: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || ".-_".contains(c) { c } else { '_' }).collect();
    let copy =
        dir.join(format!("{}-{}", &uuid::Uuid::new_v4().simple().to_string()[..12], safe.trim_start_matches('.')));
    let size = std::fs::copy(full, &copy).map_err(|e| ToolError::Failed(format!("cannot keep a copy to send: {e}")))?;
    Ok(Picked { copy, name, mime, size })
}

fn human_size(bytes: u64) -> String {
    match bytes {
        b if b >= 1024 * 1024 => format!("{:.1} MB", b as f64 / (1024.0 * 1024.0)),
        b if b >= 1024 => format!("{:.0} KB", b as f64 / 1024.0),
        b => format!("{b} bytes"),
    }
}
