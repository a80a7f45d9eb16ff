//! One tool of an MCP server as an ordinary [`Tool`]: named `<server>__<tool>`, read-only when
//! its server is `read_only`, arguments checked against the server's schema, every path-like
//! argument put into its [`Action`] (so the hard deny list and path rules see it), its arguments
//! as the action's detail (pretty JSON, secrets masked, shown when a person is asked), and the
//! result (text, structured content, images, resources) turned into what the model sees;
//! `isError` becomes a [`ToolError`].
//!
//! This must never trust the server: a result is cut to [`MAX_RESULT_CHARS`] before the
//! agent's own limit; an image reaches the model only when its bytes decode and are a PNG,
//! JPEG, GIF or WebP by their own signature (the declared type is not trusted), at most
//! [`MAX_IMAGES`] of at most [`MAX_IMAGE_BYTES`] each (one bad image would otherwise fail every
//! later request of the session); other binary data is described, never inlined; the server's
//! tool annotations never make a tool read-only.

use super::server::{McpServer, RemoteTool};
use crate::llm::Image;
use crate::tools::{
    masked_pretty, validate_args, Action, Detail, DetailKind, Tool, ToolCtx, ToolError, ToolOutput, ToolSpec,
};
use async_trait::async_trait;
use rmcp::model::CallToolResult;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;

/// The most text one result may give the model (the agent's `max_tool_result_chars` may cut
/// it further).
pub const MAX_RESULT_CHARS: usize = 200_000;

/// The most images one result may show the model.
pub const MAX_IMAGES: usize = 4;

/// The largest image shown to the model, decoded (the providers' own limit is about 5 MB).
pub const MAX_IMAGE_BYTES: usize = 4 * 1024 * 1024;

/// Argument names taken as paths whatever their value looks like.
const PATH_KEYS: &[&str] = &[
    "path",
    "paths",
    "file",
    "files",
    "filename",
    "filepath",
    "file_path",
    "dir",
    "dirs",
    "directory",
    "folder",
    "source",
    "destination",
    "src",
    "dst",
    "dest",
    "target",
    "root",
    "cwd",
    "uri",
];

pub struct McpTool {
    spec: ToolSpec,
    remote: String,
    server: Arc<McpServer>,
}

impl McpTool {
    /// The tool `remote` of `server`, offered as `name`.
    pub fn new(server: Arc<McpServer>, remote: &RemoteTool, name: String) -> Self {
        let mut parameters = remote.schema.clone();
        if !parameters.is_object() || parameters.get("type").is_none() {
            let mut obj = parameters.as_object().cloned().unwrap_or_default();
            obj.insert("type".into(), Value::String("object".into()));
            parameters = Value::Object(obj);
        }
        let read_only = server.config().read_only;
        let description = if remote.description.is_empty() {
            format!("`{}` of MCP server `{}`", remote.name, server.name())
        } else {
            remote.description.clone()
        };
        let spec = ToolSpec { name, description, parameters, read_only };
        Self { spec, remote: remote.name.clone(), server }
    }

    pub fn server(&self) -> &str {
        self.server.name()
    }

    /// The tool's own name on its server.
    pub fn remote_name(&self) -> &str {
        &self.remote
    }
}

#[async_trait]
impl Tool for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn untrusted_output(&self) -> bool {
        true
    }

    fn action(&self, _ctx: &ToolCtx, args: &Value) -> Action {
        let mut paths = Vec::new();
        collect_paths(None, args, &mut paths);
        Action {
            summary: format!("use `{}` of MCP server `{}`", self.remote, self.server.name()),
            paths,
            command: None,
            url: None,
            detail: Some(Detail::new(DetailKind::Arguments, masked_pretty(args))),
        }
    }

    async fn call(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        self.call_rich(ctx, args).await.map(|out| out.text)
    }

    /// The server's `timeout_secs`, and a moment more, so the server's own limit (which tells
    /// the server the call was cancelled, and names the key) is the one that ends a slow call.
    fn time_limit(&self) -> Option<std::time::Duration> {
        Some(std::time::Duration::from_secs(self.server.config().timeout_secs) + std::time::Duration::from_secs(2))
    }

    async fn call_rich(&self, ctx: &ToolCtx, args: Value) -> Result<ToolOutput, ToolError> {
        validate_args(&self.spec.parameters, &args).map_err(ToolError::InvalidArgs)?;
        let Value::Object(map) = args else {
            return Err(ToolError::InvalidArgs("arguments must be a JSON object".into()));
        };
        let result =
            self.server.call(&self.remote, map, &ctx.cancel).await.map_err(|e| ToolError::Failed(e.to_string()))?;
        let (mut out, is_error) = render(&result);
        // A server that prints a secret (its environment, a token it was given) never hands it on.
        out.text = self.server.vault().redact(&out.text);
        if is_error {
            Err(ToolError::Failed(if out.text.is_empty() { "the tool reported an error".into() } else { out.text }))
        } else {
            Ok(out)
        }
    }
}

/// Paths among `args`: string values under a path-like key (any depth, arrays included) and
/// any string that looks like a path (`/…`, `~/…`, `./…`, `../…`, `file://…`).
pub fn collect_paths(key: Option<&str>, v: &Value, out: &mut Vec<PathBuf>) {
    match v {
        Value::String(s) => {
            let keyed = key.is_some_and(|k| {
                let k = k.to_ascii_lowercase();
                PATH_KEYS.contains(&k.as_str()) || k.ends_with("_path") || k.ends_with("_file") || k.ends_with("_dir")
            });
            let s = s.strip_prefix("file://").unwrap_or(s);
            let looks =
                s.starts_with('/') || s.starts_with("~/") || s == "~" || s.starts_with("./") || s.starts_with("../");
            if (keyed || looks) && !s.is_empty() && !s.contains("://") && !out.iter().any(|p| p.as_os_str() == s) {
                out.push(PathBuf::from(s));
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect_paths(key, item, out)),
        Value::Object(map) => map.iter().for_each(|(k, item)| collect_paths(Some(k), item, out)),
        _ => {}
    }
}

/// What the model sees and whether the server flagged an error.
pub fn render(result: &CallToolResult) -> (ToolOutput, bool) {
    let is_error = result.is_error.unwrap_or(false);
    // Walk the wire form: it is stable across rmcp's own type changes.
    let wire = serde_json::to_value(result).unwrap_or(Value::Null);
    let mut parts: Vec<String> = Vec::new();
    let mut images: Vec<Image> = Vec::new();
    for block in wire.get("content").and_then(Value::as_array).into_iter().flatten() {
        let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
        let str_of = |k: &str| block.get(k).and_then(Value::as_str).unwrap_or("");
        match kind {
            "text" => parts.push(str_of("text").to_string()),
            "image" => parts.push(match image(str_of("data"), images.len()) {
                Ok((image, len)) => {
                    let line = format!("[image {}: {}, {len} bytes]", images.len() + 1, image.mime);
                    images.push(image);
                    line
                }
                Err(why) => format!("[image: {}; not shown to the model: {why}]", str_of("mimeType")),
            }),
            "audio" => parts.push(format!(
                "[audio: {}, {} bytes; not given to the model]",
                str_of("mimeType"),
                decoded_len(str_of("data"))
            )),
            "resource" => {
                let r = block.get("resource").cloned().unwrap_or(Value::Null);
                let uri = r.get("uri").and_then(Value::as_str).unwrap_or("");
                match (r.get("text").and_then(Value::as_str), r.get("blob").and_then(Value::as_str)) {
                    (Some(text), _) => parts.push(format!("[resource {uri}]\n{text}")),
                    (None, Some(blob)) => parts.push(format!(
                        "[resource {uri}: {}, {} bytes; not shown to the model]",
                        r.get("mimeType").and_then(Value::as_str).unwrap_or("application/octet-stream"),
                        decoded_len(blob)
                    )),
                    _ => parts.push(format!("[resource {uri}]")),
                }
            }
            "resource_link" => parts.push(format!("[resource link: {} {}]", str_of("name"), str_of("uri"))),
            other => parts.push(format!("[{other} content]")),
        }
    }
    if let Some(structured) = &result.structured_content {
        let json = structured.to_string();
        let repeated = parts.iter().any(|p| serde_json::from_str::<Value>(p).ok().as_ref() == Some(structured));
        if !repeated {
            parts.push(format!("structured result: {json}"));
        }
    }
    let mut text = parts.join("\n");
    if text.chars().count() > MAX_RESULT_CHARS {
        text = text.chars().take(MAX_RESULT_CHARS).collect();
        text.push_str("\n[… cut: the MCP result was longer]");
    }
    (ToolOutput { text, images }, is_error)
}

/// An image block's data as an image for the model, typed by its own signature, with its
/// decoded size; or why it is not shown. `shown` images of the result came before it.
fn image(data: &str, shown: usize) -> Result<(Image, usize), String> {
    use base64::Engine;
    if shown >= MAX_IMAGES {
        return Err(format!("only the first {MAX_IMAGES} images of a result are shown"));
    }
    let len = decoded_len(data);
    if len > MAX_IMAGE_BYTES {
        return Err(format!("{len} bytes is over the {MAX_IMAGE_BYTES}-byte limit"));
    }
    let bytes =
        base64::engine::general_purpose::STANDARD.decode(data.trim()).map_err(|_| "not valid base64".to_string())?;
    let mime = crate::media::sniff(&bytes)
        .filter(|m| matches!(*m, "image/png" | "image/jpeg" | "image/gif" | "image/webp"))
        .ok_or_else(|| format!("{} bytes that are not a PNG, JPEG, GIF or WebP image", bytes.len()))?;
    Ok((Image { mime: mime.to_string(), data: data.trim().to_string() }, bytes.len()))
}

/// Bytes of base64 `data` once decoded (an estimate from its length).
fn decoded_len(data: &str) -> usize {
    let trimmed = data.trim_end_matches('=');
    trimmed.len() * 3 / 4
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn path_like_arguments() {
        let cases = [
            (json!({"path": "notes/a.md"}), vec!["notes/a.md"]),
            (json!({"query": "/etc/shadow"}), vec!["/etc/shadow"]),
            (json!({"files": ["~/.ssh/id_rsa", "./x"]}), vec!["~/.ssh/id_rsa", "./x"]),
            (json!({"opts": {"source_path": "a", "dest_dir": "b"}}), vec!["b", "a"]),
            (json!({"uri": "file:///home/u/.aws/credentials"}), vec!["/home/u/.aws/credentials"]),
            (json!({"url": "https://example.com/a", "text": "hello"}), vec![]),
        ];
        for (args, want) in cases {
            let mut got = Vec::new();
            collect_paths(None, &args, &mut got);
            let want: Vec<PathBuf> = want.into_iter().map(PathBuf::from).collect();
            assert_eq!(got, want, "{args}");
        }
    }

    #[test]
    fn images_table() {
        use rmcp::model::ContentBlock as Content;
        const PNG: &str =
            "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
        let huge = "A".repeat(MAX_IMAGE_BYTES / 3 * 4 + 8);
        // (blocks, shown mime types, text)
        let cases: Vec<(Vec<Content>, Vec<&str>, &str)> = vec![
            (vec![Content::image(PNG, "image/png")], vec!["image/png"], "[image 1: image/png, 70 bytes]"),
            // The declared type is not trusted: the bytes are a PNG.
            (vec![Content::image(PNG, "image/jpeg")], vec!["image/png"], "[image 1: image/png, 70 bytes]"),
            (
                vec![Content::image("iVBORw==", "image/png")],
                vec![],
                "[image: image/png; not shown to the model: 4 bytes that are not a PNG, JPEG, GIF or WebP image]",
            ),
            (
                vec![Content::image("**not base64**", "image/png")],
                vec![],
                "[image: image/png; not shown to the model: not valid base64]",
            ),
            (
                vec![Content::image(huge.as_str(), "image/png")],
                vec![],
                "[image: image/png; not shown to the model: 4194309 bytes is over the 4194304-byte limit]",
            ),
            (
                (0..5).map(|_| Content::image(PNG, "image/png")).collect(),
                vec!["image/png"; 4],
                "[image 4: image/png, 70 bytes]\n[image: image/png; not shown to the model: only the first 4 images of a result are shown]",
            ),
        ];
        for (blocks, mimes, text) in cases {
            let (out, is_error) = render(&CallToolResult::success(blocks));
            assert!(!is_error);
            assert_eq!(out.images.iter().map(|i| i.mime.as_str()).collect::<Vec<_>>(), mimes, "{}", out.text);
            assert!(out.text.ends_with(text), "{} does not end with {text}", out.text);
        }
    }
}
