//! All configured MCP servers: started together in the background (Butler's start-up never
//! waits on one; each joins when it is ready), their tools as one snapshot per turn, and one
//! stop for all.
//!
//! A snapshot is built from each server's current list, in config order: a name that is
//! already taken (by a built-in tool, an earlier server, or another tool of the same server
//! after sanitizing) is refused with a warning naming both, never silently shadowed. This must
//! never block a turn on a server: a server that is not ready simply offers no tools.

use super::config::tool_name;
use super::server::{McpServer, Status};
use super::tool::McpTool;
use crate::config::{McpConfig, SandboxMode};
use crate::tools::Tool;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

/// One server as `/tools` and `butler doctor` show it.
#[derive(Clone, Debug)]
pub struct ServerReport {
    pub name: String,
    pub status: Status,
    /// Offered tool names (`<server>__<tool>`), sorted.
    pub tools: Vec<String>,
}

/// The tools of all servers for one turn, and the names that were refused.
#[derive(Clone, Default)]
pub struct Snapshot {
    pub tools: Vec<Arc<dyn Tool>>,
    /// Each refused name with the message naming both claimants.
    pub refused: Vec<String>,
}

/// A snapshot with the server generations and reserved names it was built for.
type Cached = (Vec<u64>, BTreeSet<String>, Snapshot);

pub struct McpManager {
    servers: Vec<Arc<McpServer>>,
    max_schema_tokens: usize,
    /// The last snapshot, rebuilt only when a server's tool list changed.
    cache: Mutex<Option<Cached>>,
}

impl McpManager {
    /// Starts every server in the background and returns at once. A sandboxed stdio server
    /// without `cwd` works in its own folder below `home_root` (the workspace folder).
    pub fn start(cfg: &McpConfig, home_root: &std::path::Path, vault: &Arc<crate::secrets::Vault>) -> Arc<Self> {
        let servers = cfg
            .servers
            .iter()
            .cloned()
            .map(|mut server| {
                if server.command.is_some() && server.cwd.is_none() && server.sandbox == SandboxMode::Bwrap {
                    server.cwd = Some(super::jail::home_of(home_root, &server.name).display().to_string());
                }
                McpServer::start_with(server, vault.clone())
            })
            .collect();
        Arc::new(Self { servers, max_schema_tokens: cfg.max_schema_tokens, cache: Mutex::new(None) })
    }

    pub fn servers(&self) -> &[Arc<McpServer>] {
        &self.servers
    }

    pub fn max_schema_tokens(&self) -> usize {
        self.max_schema_tokens
    }

    /// The current tools of every ready server; `reserved` are names already in use (the
    /// built-in tools), which an MCP tool never takes.
    pub fn snapshot(&self, reserved: &BTreeSet<String>) -> Snapshot {
        let generations: Vec<u64> = self.servers.iter().map(|s| s.generation()).collect();
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((gens, res, snap)) = cache.as_ref() {
            if *gens == generations && res == reserved {
                return snap.clone();
            }
        }
        let mut owners: BTreeMap<String, String> =
            reserved.iter().map(|n| (n.clone(), format!("built-in tool `{n}`"))).collect();
        let mut snap = Snapshot::default();
        for server in &self.servers {
            if !matches!(server.status(), Status::Ready { .. }) {
                continue;
            }
            for remote in server.tools().iter() {
                let name = tool_name(server.name(), &remote.name);
                let this = format!("tool `{}` of MCP server `{}`", remote.name, server.name());
                if let Some(first) = owners.get(&name) {
                    let msg = format!("`{name}` is refused: it would name both {first} and {this}");
                    tracing::warn!(tool = %name, "{msg}");
                    snap.refused.push(msg);
                    continue;
                }
                owners.insert(name.clone(), this);
                snap.tools.push(Arc::new(McpTool::new(server.clone(), remote, name)));
            }
        }
        *cache = Some((generations, reserved.clone(), snap.clone()));
        snap
    }

    /// Each server's state and offered tool names, in config order.
    pub fn report(&self) -> Vec<ServerReport> {
        self.servers
            .iter()
            .map(|s| {
                let mut tools: Vec<String> = s.tools().iter().map(|t| tool_name(s.name(), &t.name)).collect();
                tools.sort();
                ServerReport { name: s.name().to_string(), status: s.status(), tools }
            })
            .collect()
    }

    /// Stops every server (whole process groups for stdio servers) and waits for them.
    pub async fn stop(&self) {
        futures::future::join_all(self.servers.iter().map(|s| s.stop())).await;
    }
}

/// The agent asks for the servers' tools once per turn.
impl crate::tools::ToolSource for McpManager {
    fn tools(&self, reserved: &BTreeSet<String>) -> Vec<Arc<dyn Tool>> {
        self.snapshot(reserved).tools
    }
}
