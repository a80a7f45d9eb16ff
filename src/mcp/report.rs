//! What `/tools` and `butler doctor` say about the tools: the agent's own tools, each MCP
//! server with its state and offered tools, and the skills (the `skill` tool when registered),
//! as plain text.
//!
//! Pure rendering from a [`ServerReport`] list: this must never start, wait on or call a server,
//! and never show a server's `env` or `headers` (only names, states and tool names).

use super::manager::{McpManager, ServerReport};
use super::server::Status;
use std::sync::Arc;

/// The name of the skills tool; listed under skills, not with the built-ins.
pub const SKILL_TOOL: &str = "skill";

/// What `/tools` lists: the agent's own tools (built-ins, extras, `skill`) and the servers.
#[derive(Clone)]
pub struct ToolsOverview {
    pub own: Vec<String>,
    pub mcp: Arc<McpManager>,
}

impl ToolsOverview {
    /// The current list, from each server's state now.
    pub fn render(&self) -> String {
        render_tools(&self.own, &self.mcp.report())
    }
}

/// A server's state in a few words: `starting`, `ready, 3 tools, 12 ms round trip`,
/// `failed 2 times: <why>; next start in 4 s`, `stopped`.
pub fn status_words(s: &Status) -> String {
    match s {
        Status::Starting => "starting".into(),
        Status::Ready { tools, round_trip } => {
            format!("ready, {tools} tool{}, {} ms round trip", plural(*tools), round_trip.as_millis())
        }
        Status::Failed { why, failures, retry_in } => format!(
            "failed {failures} time{}: {why}; next start in {} s",
            plural(*failures as usize),
            retry_in.as_secs().max(1)
        ),
        Status::Stopped => "stopped".into(),
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

/// `/tools`: built-in tools, then each MCP server (config order) with its state and tools, then
/// the skills.
pub fn render_tools(own: &[String], servers: &[ServerReport]) -> String {
    let mut builtin: Vec<String> = own.iter().filter(|n| *n != SKILL_TOOL).cloned().collect();
    builtin.sort();
    let mut out = format!("Tools\n\nBuilt-in ({}): {}\n", builtin.len(), list(&builtin));
    if servers.is_empty() {
        out.push_str("\nMCP servers: none configured ([[mcp.servers]])\n");
    }
    for s in servers {
        let offered = if matches!(s.status, Status::Ready { .. }) { list(&s.tools) } else { "none now".into() };
        out.push_str(&format!("\nMCP server `{}` ({}): {offered}\n", s.name, status_words(&s.status)));
    }
    if own.iter().any(|n| n == SKILL_TOOL) {
        out.push_str("\nSkills: the `skill` tool loads a skill's instructions (see `butler skills list`)\n");
    } else {
        out.push_str("\nSkills: off (no `skill` tool)\n");
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn server(name: &str, status: Status, tools: &[&str]) -> ServerReport {
        ServerReport { name: name.into(), status, tools: tools.iter().map(|t| t.to_string()).collect() }
    }

    #[test]
    fn tools_listing_snapshots() {
        let own: Vec<String> = ["now", "skill", "file_read", "recall"].map(String::from).to_vec();
        let servers = vec![
            server(
                "files",
                Status::Ready { tools: 2, round_trip: Duration::from_millis(12) },
                &["files__echo", "files__read_file"],
            ),
            server("gh", Status::Starting, &[]),
            server(
                "broken",
                Status::Failed { why: "no such file".into(), failures: 1, retry_in: Duration::from_millis(500) },
                &[],
            ),
            server("gone", Status::Stopped, &["gone__x"]),
        ];
        let cases: Vec<(&[String], &[ServerReport], &str)> = vec![
            (
                &own,
                &servers,
                "Tools\n\n\
                 Built-in (3): file_read, now, recall\n\n\
                 MCP server `files` (ready, 2 tools, 12 ms round trip): files__echo, files__read_file\n\n\
                 MCP server `gh` (starting): none now\n\n\
                 MCP server `broken` (failed 1 time: no such file; next start in 1 s): none now\n\n\
                 MCP server `gone` (stopped): none now\n\n\
                 Skills: the `skill` tool loads a skill's instructions (see `butler skills list`)",
            ),
            (
                &own[..1],
                &[],
                "Tools\n\n\
                 Built-in (1): now\n\n\
                 MCP servers: none configured ([[mcp.servers]])\n\n\
                 Skills: off (no `skill` tool)",
            ),
        ];
        for (own, servers, want) in cases {
            assert_eq!(render_tools(own, servers), want);
        }
    }
}
