//! The MCP client: tool servers speaking the Model Context Protocol (stdio children or
//! streamable HTTP endpoints, through the official `rmcp` SDK) whose tools the agent uses as
//! ordinary [`crate::tools::Tool`]s named `<server>__<tool>`.
//!
//! [`config`] holds the rules of `[[mcp.servers]]`, [`server`] one supervised connection,
//! [`tool`] one remote tool as a `Tool`, [`manager`] all servers and the per-turn snapshot,
//! [`report`] the text of `/tools` and `butler doctor`, [`jail`] how a stdio server is started
//! (its sandbox, folder, environment and limits).
//! Nothing here may block Butler on a server (every wait is bounded, start-up is in the
//! background), leave a server's processes behind, or let a server's answer decide a
//! permission: the permission engine decides, from the config's `read_only` and the paths.

pub mod config;
pub mod jail;
pub mod manager;
pub mod report;
pub mod server;
pub mod tool;

pub use config::check_config;
pub use manager::{McpManager, ServerReport, Snapshot};
pub use report::ToolsOverview;
pub use server::{McpServer, Status};
pub use tool::McpTool;
