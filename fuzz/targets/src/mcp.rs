//! What an MCP server sends Butler: JSON-RPC lines read by rmcp's line codec (the one its
//! stdio transport frames with), and Butler's own handling of what they carry: a tool call's
//! result turned into what the model sees, and a listed tool's input schema used to check the
//! model's arguments.
//!
//! The body must never start a server or a process: the bytes stand for the server's output.

use butler::mcp::tool::{collect_paths, render, MAX_IMAGES, MAX_IMAGE_BYTES, MAX_RESULT_CHARS};
use butler::tools::validate_args;
use rmcp::model::{JsonRpcMessage, ServerJsonRpcMessage, ServerResult};
use rmcp::transport::async_rw::JsonRpcMessageCodec;
use serde_json::{json, Map, Value};
use tokio_util::codec::Decoder;

/// Longest line read (rmcp's stdio transport bounds its lines too).
const MAX_LINE: usize = 1 << 20;

/// Every message of `data`, as the codec frames a stream that has ended (a line it cannot read
/// is dropped; a line over the limit is discarded up to its end).
fn messages(data: &[u8]) -> Vec<ServerJsonRpcMessage> {
    let mut codec = JsonRpcMessageCodec::<ServerJsonRpcMessage>::new_with_max_length(MAX_LINE);
    let mut buf = bytes::BytesMut::from(data);
    let mut out = Vec::new();
    let mut idle = 0;
    while !buf.is_empty() && idle < 2 {
        let before = (buf.len(), out.len());
        if let Ok(Some(m)) = codec.decode_eof(&mut buf) {
            out.push(m);
        }
        idle = if (buf.len(), out.len()) == before { idle + 1 } else { 0 };
    }
    out
}

/// Arguments a model might send for `schema`: nothing, each property null, a string, a
/// number, and the schema itself.
fn arguments(schema: &Value) -> Vec<Value> {
    let props: Vec<&String> =
        schema.get("properties").and_then(Value::as_object).map(|p| p.keys().collect()).unwrap_or_default();
    let filled = |v: Value| Value::Object(props.iter().map(|k| ((*k).clone(), v.clone())).collect::<Map<_, _>>());
    vec![json!({}), filled(Value::Null), filled(json!("/etc/passwd")), filled(json!(1.5)), schema.clone()]
}

/// The server's lines: results rendered for the model, tool schemas used on arguments.
pub fn mcp_jsonrpc(data: &[u8]) {
    for message in messages(data) {
        let JsonRpcMessage::Response(response) = message else { continue };
        match response.result {
            ServerResult::CallToolResult(result) => {
                let (out, _) = render(&result);
                assert!(out.images.len() <= MAX_IMAGES, "{} images", out.images.len());
                for image in &out.images {
                    assert!(matches!(image.mime.as_str(), "image/png" | "image/jpeg" | "image/gif" | "image/webp"));
                    assert!(
                        image.data.len() / 4 * 3 <= MAX_IMAGE_BYTES + 3,
                        "an image of {} base64 bytes",
                        image.data.len()
                    );
                }
                let chars = out.text.chars().count();
                assert!(chars <= MAX_RESULT_CHARS + 64, "a result of {chars} characters");
            }
            ServerResult::ListToolsResult(list) => {
                for tool in &list.tools {
                    let schema = Value::Object((*tool.input_schema).clone());
                    for args in arguments(&schema) {
                        let _ = validate_args(&schema, &args);
                        let mut paths = Vec::new();
                        collect_paths(None, &args, &mut paths);
                    }
                }
            }
            _ => {}
        }
    }
}
