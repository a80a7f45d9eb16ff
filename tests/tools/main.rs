//! The acting tools, called directly through the `Tool` trait with a real `ToolCtx` (a migrated
//! SQLite store in a temp dir and a temp workspace): the SSRF guard of the web tools (against
//! local axum servers), the http allow list, the shell's sandbox, the file tools' path checks,
//! send_message's targets, every tool's action summary, `web_search` against fakes of its three
//! providers, and the `[tools]` config.
//!
//! Tests here must never reach the internet or anything outside their temp dirs: every HTTP
//! target is a server started by the test on a loopback address, and names resolve through the
//! guard's injected host entries.

#[path = "../support/mod.rs"]
mod support;

mod actions;
mod config;
mod delegate;
mod delegate_limits;
mod files;
mod http;
mod limits;
mod many_tools;
mod mcp;
mod net;
mod sandbox;
mod scoped;
mod secrets;
mod send;
mod shell;
mod skills;
mod skills_agent;
mod web;
mod web_search;

use axum::Router;
use butler::channel::{ConversationKind, ConversationRef, Identity};
use butler::store::{Store, UserRole, UserRow};
use butler::tools::{Tool, ToolCtx, ToolError, ToolStores};
use serde_json::Value;
use std::net::SocketAddr;
use std::sync::Arc;
use support::db::SqliteTestDb;
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;

/// A tool context for user `u1` with its own store and workspace (`<tmp>/workspaces/u1`, not
/// created yet: the tools create it).
pub struct Harness {
    pub ctx: ToolCtx,
    pub tmp: TempDir,
    pub store: Arc<dyn Store>,
    _db: SqliteTestDb,
}

impl Harness {
    pub async fn new() -> Self {
        let db = SqliteTestDb::new();
        let store = butler::store::connect(&db.url, 2).await.expect("open SQLite");
        store.migrate().await.expect("migrate");
        let tmp = tempfile::tempdir().expect("temp dir");
        let user = UserRow {
            id: "u1".into(),
            display_name: Some("Alice".into()),
            role: UserRole::Member,
            timezone: "UTC".into(),
            created_ms: 0,
        };
        let (identity, conversation) = (Identity::new("web", "alice"), ConversationRef::new("web", "alice"));
        let transcripts = Arc::new(butler::memory::Transcripts::new(store.clone()));
        let stores = ToolStores::new(store.clone(), store.clone(), store.clone(), store.clone(), transcripts);
        let ctx = ToolCtx {
            store: stores.serve(&user, &identity, &conversation, ConversationKind::Direct),
            user,
            identity,
            session_id: "s1".into(),
            session_key: "dm:web:alice:alice".into(),
            conversation,
            kind: ConversationKind::Direct,
            cancel: CancellationToken::new(),
            recall_limit: 8,
            workspace: tmp.path().join("workspaces").join("u1"),
        };
        Self { ctx, tmp, store, _db: db }
    }

    /// The workspace, created and canonical.
    pub fn workspace(&self) -> std::path::PathBuf {
        std::fs::create_dir_all(&self.ctx.workspace).unwrap();
        std::fs::canonicalize(&self.ctx.workspace).unwrap()
    }

    pub async fn call(&self, tool: &dyn Tool, args: Value) -> Result<String, ToolError> {
        tool.call(&self.ctx, args).await
    }
}

/// The message of a call that must fail.
pub fn err_text(r: Result<String, ToolError>) -> String {
    match r {
        Ok(out) => panic!("expected an error, got Ok({out:?})"),
        Err(e) => e.to_string(),
    }
}

/// Serves `app` on `ip` at a free port.
pub async fn serve_on(ip: &str, app: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind((ip, 0)).await.expect("bind test server");
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}

pub async fn serve(app: Router) -> SocketAddr {
    serve_on("127.0.0.1", app).await
}

/// A tool by name from a tool list.
pub fn pick(tools: &[Arc<dyn Tool>], name: &str) -> Arc<dyn Tool> {
    tools.iter().find(|t| t.spec().name == name).cloned().unwrap_or_else(|| panic!("no tool {name}"))
}
