//! The tools the agent answers itself, added to every agent's own: `ask_user` (the tool round
//! turns its calls into questions) and `delegate` (unless helpers are off). Nothing else may be
//! added here: the built-ins belong to `crate::tools`, the app adds `skill` and the extras.

/// `tools` with the ones the agent itself answers: `ask_user` in every turn (the tool round
/// answers its calls), and `delegate` unless `max_depth` is 0.
pub(crate) fn with_agent_tools(
    cfg: &crate::config::AgentConfig,
    mut tools: crate::tools::Tools,
) -> crate::tools::Tools {
    tools.add(std::sync::Arc::new(super::ask::AskUser::new()));
    if cfg.delegation.max_depth > 0 {
        tools.add(std::sync::Arc::new(super::delegate_tool::DelegateTool::new(cfg)));
    }
    tools
}
