//! One tool of an MCP server as an ordinary [`Tool`]: named `<server>__<tool>`, read-only when
//! its server is `read_only`, arguments checked against the server's schema, every path-like
//! argument put into its [`Action`] (so the hard deny list and path rules see it), and the
//! result (text, structured content, images, resources) turned into the text the model sees;
//! `isError` becomes a [`ToolError`].
//!
//! This must never trust the server: a result is cut to [`MAX_RESULT_CHARS`] before the
//! agent's own limit, binary data (images, audio, blobs) is described, never inlined, and the
//! server's tool annotations never make a tool read-only.

use super::server::{McpServer, RemoteTool};
use crate::tools::{mask_secrets, validate_args, Action, Risk, Tool, ToolCtx, ToolError, ToolSpec};
use async_trait::async_trait;
use rmcp::model::CallToolResult;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;

/// The most text one result may give the model (the agent's `max_tool_result_chars` may cut
/// it further).
pub const MAX_RESULT_CHARS: usize = 200_000;

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
        let spec = ToolSpec {
            name,
            description,
            parameters,
            read_only,
            risk: if read_only { Risk::Low } else { Risk::Medium },
        };
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

    fn action(&self, _ctx: &ToolCtx, args: &Value) -> Action {
        let mut paths = Vec::new();
        collect_paths(None, args, &mut paths);
        Action {
            summary: format!(
                "use `{}` of MCP server `{}` with {}",
                self.remote,
                self.server.name(),
                mask_secrets(args)
            ),
            paths,
            command: None,
            url: None,
        }
    }

    async fn call(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        validate_args(&self.spec.parameters, &args).map_err(ToolError::InvalidArgs)?;
        let Value::Object(map) = args else {
            return Err(ToolError::InvalidArgs("arguments must be a JSON object".into()));
        };
        let result =
            self.server.call(&self.remote, map, &ctx.cancel).await.map_err(|e| ToolError::Failed(e.to_string()))?;
        let (text, is_error) = render(&result);
        if is_error {
            Err(ToolError::Failed(if text.is_empty() { "the tool reported an error".into() } else { text }))
        } else {
            Ok(text)
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

/// The text the model sees and whether the server flagged an error.
pub fn render(result: &CallToolResult) -> (String, bool) {
    let is_error = result.is_error.unwrap_or(false);
    // Walk the wire form: it is stable across rmcp's own type changes.
    let wire = serde_json::to_value(result).unwrap_or(Value::Null);
    let mut parts: Vec<String> = Vec::new();
    for block in wire.get("content").and_then(Value::as_array).into_iter().flatten() {
        let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
        let str_of = |k: &str| block.get(k).and_then(Value::as_str).unwrap_or("");
        match kind {
            "text" => parts.push(str_of("text").to_string()),
            "image" | "audio" => parts.push(format!(
                "[{kind}: {}, {} bytes; not shown to the model]",
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
    (text, is_error)
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
}
