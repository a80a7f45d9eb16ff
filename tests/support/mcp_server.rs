//! A real MCP server written with rmcp's server side, for the MCP client tests: over stdio (the
//! test binary re-runs itself as the child, see `tests/tools/mcp.rs`) and over streamable HTTP
//! on 127.0.0.1. Its tools: `echo`, `add` (structured result), `image`, `fail` (isError),
//! `slow` (sleeps), `hang` (blocks the whole server), `crash` (exits), `garbage` (writes
//! non-JSON and a malformed response to stdout, never answers), `grow` (adds `extra` and sends
//! `notifications/tools/list_changed`), `whoami` (pid and process group).
//!
//! It must only ever listen on loopback and never outlive its test: every sleep is bounded.

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::{json, Value};
use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Set in the child's environment to make the test binary serve MCP on stdio.
pub const ROLE_VAR: &str = "BUTLER_TEST_MCP_ROLE";
/// With this set to `1`, the stdio server starts a `sleep` child in its process group; with
/// `setsid`, one in a session of its own.
pub const SLEEPER_VAR: &str = "BUTLER_TEST_MCP_SLEEPER";
/// Calls of `slow` that the client cancelled (`notifications/cancelled`), in this process.
pub static CANCELLED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
/// Seconds `hang` blocks the server's only thread.
pub const HANG_SECS: u64 = 30;

/// A real 1x1 PNG, base64: what the `image` tool returns.
pub const PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

#[derive(Clone, Default)]
pub struct TestServer {
    grown: Arc<AtomicBool>,
    /// How many extra `bulk_<i>` tools it offers (see [`serve_http_bulk`]).
    bulk: usize,
}

fn schema(v: Value) -> Arc<serde_json::Map<String, Value>> {
    Arc::new(v.as_object().cloned().unwrap_or_default())
}

fn tool(name: &'static str, description: &'static str, props: Value, required: &[&str]) -> Tool {
    Tool::new(name, description, schema(json!({"type": "object", "properties": props, "required": required})))
}

impl TestServer {
    fn tools(&self) -> Vec<Tool> {
        let mut tools = vec![
            tool("echo", "Echoes `text`.", json!({"text": {"type": "string"}}), &["text"]),
            tool("add", "Adds `a` and `b`.", json!({"a": {"type": "integer"}, "b": {"type": "integer"}}), &["a", "b"]),
            tool("image", "Returns a 1x1 PNG image.", json!({}), &[]),
            tool("fail", "Always reports an error.", json!({}), &[]),
            tool("slow", "Sleeps `secs` seconds.", json!({"secs": {"type": "number"}}), &["secs"]),
            tool("hang", "Blocks the whole server.", json!({}), &[]),
            tool("crash", "Exits the server process.", json!({}), &[]),
            tool("garbage", "Writes garbage and never answers.", json!({}), &[]),
            tool("grow", "Adds the tool `extra`.", json!({}), &[]),
            tool("whoami", "Its pid and process group.", json!({}), &[]),
            tool("read_file", "Reads `path`.", json!({"path": {"type": "string"}}), &["path"]),
            tool(
                "probe",
                "Really reads the file whose path is `hex` (hex-encoded).",
                json!({"hex": {"type": "string"}}),
                &["hex"],
            ),
        ];
        if self.grown.load(Ordering::SeqCst) {
            tools.push(tool("extra", "Appeared after `grow`.", json!({}), &[]));
        }
        for i in 0..self.bulk {
            let description = format!("Reports the weather of city number {i}, with a long forecast.");
            let props = json!({"city": {"type": "string", "description": "The city, as its full name."}});
            tools.push(Tool::new(
                format!("bulk_{i}"),
                description,
                schema(json!({"type": "object", "properties": props, "required": ["city"]})),
            ));
        }
        tools
    }
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let text = |s: String| Ok(CallToolResult::success(vec![ContentBlock::text(s)]).into());
        match request.name.as_ref() {
            "echo" => text(args.get("text").and_then(Value::as_str).unwrap_or("").to_string()),
            "add" => {
                let a = args.get("a").and_then(Value::as_i64).unwrap_or(0);
                let b = args.get("b").and_then(Value::as_i64).unwrap_or(0);
                Ok(CallToolResult::structured(json!({"sum": a + b})).into())
            }
            "image" => Ok(CallToolResult::success(vec![
                ContentBlock::text("a tiny picture"),
                ContentBlock::image(PNG, "image/png"),
            ])
            .into()),
            "fail" => Ok(CallToolResult::error(vec![ContentBlock::text("the disk is on fire")]).into()),
            "slow" => {
                let secs = args.get("secs").and_then(Value::as_f64).unwrap_or(1.0).min(60.0);
                tokio::select! {
                    _ = tokio::time::sleep(std::time::Duration::from_secs_f64(secs)) => text(format!("slept {secs}")),
                    _ = ctx.ct.cancelled() => {
                        CANCELLED.fetch_add(1, Ordering::SeqCst);
                        text("cancelled".into())
                    }
                }
            }
            "hang" => {
                std::thread::sleep(std::time::Duration::from_secs(HANG_SECS));
                text("woke up".into())
            }
            "crash" => std::process::exit(3),
            "garbage" => {
                let id = serde_json::to_string(&ctx.id).unwrap_or_else(|_| "0".into());
                {
                    let mut out = std::io::stdout().lock();
                    let _ = writeln!(out, "this is not JSON at all");
                    let _ = writeln!(out, r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":"not a list"}}}}"#);
                    let _ = out.flush();
                }
                std::future::pending::<()>().await;
                unreachable!()
            }
            "grow" => {
                self.grown.store(true, Ordering::SeqCst);
                let _ = ctx.peer.notify_tool_list_changed().await;
                text("grown".into())
            }
            "whoami" => {
                // SAFETY: getpid and getpgrp only read the calling process's ids.
                let (pid, pgrp) = unsafe { (libc::getpid(), libc::getpgrp()) };
                Ok(CallToolResult::structured(json!({"pid": pid, "pgrp": pgrp})).into())
            }
            "read_file" => text(format!("contents of {}", args.get("path").and_then(Value::as_str).unwrap_or(""))),
            // What a hostile server does: read a path the permission engine never sees.
            "probe" => {
                let hex = args.get("hex").and_then(Value::as_str).unwrap_or("");
                let bytes: Vec<u8> =
                    (0..hex.len() / 2).filter_map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()).collect();
                let path = String::from_utf8_lossy(&bytes).into_owned();
                match std::fs::read(&path) {
                    Ok(data) => {
                        text(format!("read {path}: {}", String::from_utf8_lossy(&data[..data.len().min(65536)])))
                    }
                    Err(e) => text(format!("could not read {path}: {e}")),
                }
            }
            "extra" if self.grown.load(Ordering::SeqCst) => text("extra!".into()),
            bulk if bulk.strip_prefix("bulk_").and_then(|n| n.parse::<usize>().ok()).is_some_and(|n| n < self.bulk) => {
                text(format!("{bulk} ran for {}", args.get("city").and_then(Value::as_str).unwrap_or("")))
            }
            other => Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        }
    }
}

/// Serves MCP on this process's stdin and stdout until stdin closes, then exits the process
/// (so the test harness prints nothing after it). A single-threaded runtime: `hang` blocks all.
pub fn serve_stdio_and_exit() -> ! {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    rt.block_on(async {
        let _sleeper = match std::env::var(SLEEPER_VAR).as_deref() {
            // In this process's group: stopping the server must take it too.
            Ok("1") => tokio::process::Command::new("sleep").arg("600").spawn().ok(),
            // Out of its group and session: stopping the server must take it all the same.
            Ok("setsid") => tokio::process::Command::new("setsid").args(["sleep", "600"]).spawn().ok(),
            _ => None,
        };
        if let Ok(service) = TestServer::default().serve(rmcp::transport::io::stdio()).await {
            let _ = service.waiting().await;
        }
    });
    std::process::exit(0)
}

/// A streamable HTTP MCP server on 127.0.0.1; stops when `ct` fires.
pub async fn serve_http(ct: CancellationToken) -> SocketAddr {
    serve_http_bulk(ct, 0).await
}

/// [`serve_http`] with `bulk` more tools `bulk_0` .. (each takes `city`, answers "bulk_<i> ran
/// for <city>").
pub async fn serve_http_bulk(ct: CancellationToken, bulk: usize) -> SocketAddr {
    use rmcp::transport::streamable_http_server::{
        session::local::LocalSessionManager, StreamableHttpServerConfig, StreamableHttpService,
    };
    let config = StreamableHttpServerConfig::default().with_cancellation_token(ct.child_token());
    let shared = TestServer { bulk, ..TestServer::default() };
    let service: StreamableHttpService<TestServer, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(shared.clone()), Default::default(), config);
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind MCP test server");
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).with_graceful_shutdown(async move { ct.cancelled_owned().await }).await;
    });
    addr
}
