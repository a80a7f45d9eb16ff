//! `[mcp]` and `[[mcp.servers]]`: the MCP tool servers Butler connects to, as plain data.
//!
//! The rules (command or url, names, duplicates, limits) belong to `crate::mcp`, which checks
//! them through `app::CONFIG_CHECKS`; this file only parses and defaults. It must never start,
//! resolve or connect to anything, and env and header values are [`Secret`]s (masked in prints).

use super::Secret;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct McpConfig {
    /// Above this estimate of tokens for all offered tool schemas, tools are found by search.
    pub max_schema_tokens: usize,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<McpServerConfig>,
}

impl Default for McpConfig {
    fn default() -> Self {
        Self { max_schema_tokens: 8_000, servers: Vec::new() }
    }
}

/// One server: stdio (`command`, `args`, `env`, `cwd`) or streamable HTTP (`url`, `headers`).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct McpServerConfig {
    /// a-z, 0-9, `_`, `-`; its tools reach the model as `<name>__<tool>`.
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    pub args: Vec<String>,
    pub env: BTreeMap<String, Secret>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    pub headers: BTreeMap<String, Secret>,
    /// Seconds one tool call may take.
    pub timeout_secs: u64,
    /// Seconds start-up (spawn or connect, handshake, first tool list) may take.
    pub connect_timeout_secs: u64,
    /// Globs of the server's tool names to offer.
    pub tools: Vec<String>,
    /// Globs of the server's tool names never to offer (wins over `tools`).
    pub exclude: Vec<String>,
    /// Its tools count as read-only in the permission engine.
    pub read_only: bool,
    /// A stdio server runs in bubblewrap (`bwrap`, the default: it sees its own folder, the
    /// system's programs and `paths`, never Butler's files or processes) or `none`.
    pub sandbox: super::SandboxMode,
    /// A sandboxed stdio server may use the network (most servers call an API).
    pub network: bool,
    /// Host folders a sandboxed stdio server may read and write besides its own.
    pub paths: Vec<String>,
    /// Live processes a stdio server may have (more: it is killed and restarted).
    pub max_processes: u32,
    /// Writable memory of each process of a stdio server, in MiB.
    pub max_memory_mb: u64,
}

impl Default for McpServerConfig {
    fn default() -> Self {
        Self {
            name: String::new(),
            command: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
            url: None,
            headers: BTreeMap::new(),
            timeout_secs: 60,
            connect_timeout_secs: 30,
            tools: vec!["*".into()],
            exclude: Vec::new(),
            read_only: false,
            sandbox: super::SandboxMode::Bwrap,
            network: true,
            paths: Vec::new(),
            max_processes: 256,
            max_memory_mb: 2048,
        }
    }
}
