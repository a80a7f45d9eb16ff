//! The agent as the app builds it: its own tools (the built-ins the config turns on and
//! `skill`), its policy (with the files no tool may touch) and its parts. The names of those
//! tools also serve the config checks that need them (`[[agent.archetypes]] tools`). This file
//! must never start anything: it only builds.

use crate::agent::{Agent, AgentParts, AgentStores};
use crate::config::Config;
use crate::hooks::Hooks;
use crate::llm::Tiers;
use crate::outbox::Deliverer;
use crate::permissions::Policy;
use crate::secrets::Vault;
use crate::tools::{Tool, Tools};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The built-in tools the config turns on (with the secrets they may name) and the `skill`
/// tool over `skills`.
fn own_tools(cfg: &Config, skills: &Arc<crate::skills::Skills>, vault: &Arc<Vault>) -> Tools {
    let mut tools = crate::tools::builtin_tools(cfg, vault);
    tools.add(Arc::new(crate::skills::SkillTool::new(skills.clone())));
    tools
}

/// The names of the agent's own tools under `cfg` (not the MCP servers'), sorted.
pub fn own_tool_names(cfg: &Config) -> Vec<String> {
    let skills = Arc::new(crate::skills::skills(cfg));
    let tools = crate::agent::with_agent_tools(&cfg.agent, own_tools(cfg, &skills, &Arc::default()));
    tools.names().into_iter().map(String::from).collect()
}

/// What `config check` and `serve` warn about in a valid config: archetype tools that match
/// no tool.
pub fn config_warnings(cfg: &Config) -> Vec<String> {
    crate::delegate::archetype_tool_warnings(cfg, &own_tool_names(cfg))
}

/// Hosts the operator already trusts with credentials, which a tool call's URL may carry a
/// secret-looking value to without asking: the http tool's `allowed_hosts` and each secret's
/// `hosts` (on top of `[permissions] trusted_hosts`).
fn trusted_hosts(cfg: &Config) -> Vec<String> {
    let mut hosts = cfg.tools.http_request.allowed_hosts.clone();
    hosts.extend(cfg.secrets.values().flat_map(|s| s.hosts.iter().cloned()));
    hosts
}

/// Files no tool may touch: the config file and the SQLite database with its journals.
fn protected_paths(cfg: &Config, config_path: Option<&std::path::Path>) -> Vec<std::path::PathBuf> {
    let mut out: Vec<std::path::PathBuf> = config_path.map(|p| p.to_path_buf()).into_iter().collect();
    let url = cfg.database.url.expose();
    if let Some(path) = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:")) {
        let path = path.split('?').next().unwrap_or(path);
        if !path.is_empty() && !path.contains(":memory:") {
            for suffix in ["", "-wal", "-shm", "-journal"] {
                out.push(std::path::PathBuf::from(format!("{path}{suffix}")));
            }
        }
    }
    out
}

/// The agent: the built-in tools the config turns on, the `skill` tool and the extra ones, the
/// permission policy (no tool may touch the config file or the database), the hooks, the skills.
///
/// The `skill` tool is always registered: the built-in skills always exist, and the catalog is
/// read live, so skills added later are loadable without a restart. The tool and the agent
/// (system prompt, `allowed-tools`) share one catalog.
pub(super) fn build(
    cfg: &Config,
    store: AgentStores,
    tiers: &Tiers,
    deliverer: &Arc<Deliverer>,
    (hooks, vault): (Arc<Hooks>, &Arc<Vault>),
    extra_tools: Vec<Arc<dyn Tool>>,
    config_path: Option<&std::path::Path>,
) -> Agent {
    let skills = Arc::new(crate::skills::skills(cfg));
    let mut tools = own_tools(cfg, &skills, vault);
    for t in extra_tools {
        tools.add(t);
    }
    Agent::new(
        cfg,
        AgentParts {
            store,
            tiers: tiers.clone(),
            tools,
            policy: Arc::new(
                Policy::new(&cfg.permissions, protected_paths(cfg, config_path))
                    .with_workspace_root(&cfg.tools.workspace_dir)
                    .trust_hosts(trusted_hosts(cfg)),
            ),
            hooks,
            nudge: deliverer.clone(),
            skills,
            running: crate::delegate::Running::new(CancellationToken::new()),
        },
    )
}
