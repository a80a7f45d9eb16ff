//! Approvals show what will happen (issue 30, point 5), set up the same way for every platform's
//! tests: one message makes the model call five real tools at once (a file write, a file edit
//! with a diff, a shell command, an HTTP POST with an Authorization header and a body, and an MCP
//! call), so five approval requests go out, each with its detail; the snapshots of what each
//! platform received live in that platform's test file.
//!
//! The MCP tool is the real `McpTool` of a server that is never reached: nothing is approved in
//! these tests, so no call is ever made. The shell has no sandbox for the same reason (the
//! command never runs); every secret in the calls is one the requests must never show.

use crate::support::fake_llm::{FakeLlm, Reply};
use butler::channel::Identity;
use butler::config::{Config, McpServerConfig, SandboxMode};
use butler::mcp::server::RemoteTool;
use butler::mcp::{McpServer, McpTool};
use butler::store::{NewUser, Store, UserRole};
use butler::tools::Tool;
use serde_json::json;
use std::path::Path;
use std::sync::Arc;

/// The message that makes the model ask for all five.
pub const ASK: &str = "tidy up my notes and tell the tracker";
/// The message that makes it write a 200-line file.
pub const ASK_LONG: &str = "write the long list";
/// The user the tests' person is (created before the first message, so its workspace is known).
pub const USER_ID: &str = "u-detail";
/// Secrets in the calls: none may reach a platform.
pub const SECRETS: &[&str] = &["key-k123", "sk-live-123", "tok-t9z", "tk-mcp-123"];

/// Files, the shell and `http_request` on, with the workspaces under `workspaces`.
pub fn tools_config(cfg: &mut Config, workspaces: &Path) {
    cfg.tools.workspace_dir = workspaces.display().to_string();
    cfg.tools.shell.enabled = true;
    cfg.tools.shell.sandbox = SandboxMode::None;
    cfg.tools.http_request.allowed_hosts = vec!["api.example.com".into()];
}

/// The MCP tool `tracker__create_issue`, and its server (stop it at the end).
pub fn mcp_tool() -> (Arc<dyn Tool>, Arc<McpServer>) {
    let server = McpServer::start(McpServerConfig {
        name: "tracker".into(),
        url: Some("http://127.0.0.1:9/mcp".into()),
        ..McpServerConfig::default()
    });
    let remote = RemoteTool {
        name: "create_issue".into(),
        description: "Opens an issue.".into(),
        schema: json!({"type": "object", "properties": {
            "title": {"type": "string"}, "labels": {"type": "array", "items": {"type": "string"}}, "api_token": {"type": "string"}
        }}),
    };
    let tool: Arc<dyn Tool> = Arc::new(McpTool::new(server.clone(), &remote, "tracker__create_issue".into()));
    (tool, server)
}

/// Makes `identity` the user [`USER_ID`] (an owner) unless it has a user already (the web's
/// `local`), and puts the file the edit changes in its workspace; returns the workspace.
pub async fn seed(store: &Arc<dyn Store>, identity: &Identity, workspaces: &Path) -> std::path::PathBuf {
    let new = NewUser { id: USER_ID.into(), display_name: None, role: UserRole::Owner, timezone: "UTC".into() };
    let user = store.user_ensure(identity, &new).await.expect("the test user");
    let workspace = workspaces.join(&user.id);
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(workspace.join("todo.md"), "- buy milk\n- call mum\n- water the plants\n").unwrap();
    workspace
}

/// When the person says [`ASK`], the model calls the five tools; when they say [`ASK_LONG`], it
/// writes 200 lines.
pub fn script(llm: &FakeLlm) {
    let body = json!({"title": "Milk", "token": "tok-t9z"}).to_string();
    llm.on(
        ASK,
        Reply::tool_call(
            "file_write",
            json!({"path": "notes/groceries.md", "content": "# Groceries\n\n- oat milk\n- bread\n"}),
        )
        .and_tool_call("file_edit", json!({"path": "todo.md", "old": "- call mum", "new": "- call mum and dad"}))
        .and_tool_call("shell", json!({"command": "cd notes && grep -c milk *.md | sort -r > counts.txt"}))
        .and_tool_call(
            "http_request",
            json!({
                "method": "POST",
                "url": "https://api.example.com/v1/issues?api_key=key-k123",
                "headers": {"Authorization": "Bearer sk-live-123", "Content-Type": "application/json"},
                "body": body
            }),
        )
        .and_tool_call(
            "tracker__create_issue",
            json!({"title": "Login <fails>", "labels": ["bug"], "api_token": "tk-mcp-123"}),
        ),
    );
    llm.on(ASK_LONG, Reply::tool_call("file_write", json!({"path": "long.md", "content": long_text()})));
}

/// The 200 lines [`ASK_LONG`] writes.
pub fn long_text() -> String {
    (1..=200).map(|n| format!("{n}. a line of the long list\n")).collect()
}

/// `text` with the workspace path and the approval id in file names made stable for a snapshot.
pub fn stable(text: &str, workspace: &Path) -> String {
    let mut out = text.replace(&workspace.display().to_string(), "<workspace>");
    for prefix in ["content-", "diff-"] {
        let mut from = 0;
        while let Some(at) = out[from..].find(prefix).map(|i| i + from) {
            let start = at + prefix.len();
            if out.get(start..start + 8).is_some_and(|s| s.chars().all(|c| c.is_ascii_hexdigit())) {
                out.replace_range(start..start + 8, "<id>");
            }
            from = start;
        }
    }
    out
}

/// Fails if any of [`SECRETS`] is in `text`.
pub fn assert_no_secret(text: &str) {
    for secret in SECRETS {
        assert!(!text.contains(secret), "the secret {secret} is shown: {text}");
    }
}
