//! What one `delegate` call asks for and what the child gets: the arguments (the contract:
//! `task`, `archetype`, `tier`, `tools`, `background`), the archetype's prompt and tier, and
//! the child's tools - the intersection of the parent's, the archetype's and the call's.
//!
//! Pure: nothing here may run a tool, call a model or touch the store.

use crate::config::{AgentConfig, ArchetypeConfig, WORKER_TIER};
use crate::permissions::glob_match;
use crate::tools::ToolSpec;
use serde::Deserialize;
use serde_json::json;

/// The tool's name (the contract).
pub const DELEGATE_TOOL: &str = "delegate";

/// The arguments of a `delegate` call.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DelegateArgs {
    pub task: String,
    #[serde(default)]
    pub archetype: Option<String>,
    #[serde(default)]
    pub tier: Option<String>,
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    #[serde(default)]
    pub background: bool,
}

/// What a child runs with.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub task: String,
    pub archetype: Option<String>,
    /// The tier asked for (the call's, else the archetype's, else `worker`).
    pub tier: String,
    /// The child's tools, sorted; never one its parent lacks.
    pub tools: Vec<String>,
    /// The archetype's instructions (empty without an archetype).
    pub prompt: String,
    pub background: bool,
}

/// Why a call cannot start a child; the model sees the text and can fix the call.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum PlanError {
    #[error("`task` is empty: say what the helper should do")]
    EmptyTask,
    #[error("there is no archetype `{0}`; known: {1}")]
    UnknownArchetype(String, String),
    #[error("`background` is only for the conversation's own turn, not inside a helper")]
    NestedBackground,
}

/// The `delegate` tool's definition. `archetypes` are listed in its description so the model
/// knows the named helpers without a lookup.
pub fn spec(agent: &AgentConfig) -> ToolSpec {
    let mut description = String::from(
        "Hand a focused task to a helper agent with a fresh context: it sees only `task` (write \
         everything it needs into it), works with its own tools and returns only its final answer. \
         Several delegate calls in one answer run at the same time. `tier`: worker (fast, cheap; the \
         default), chat, or reasoning (hard problems). `tools` narrows the helper's tools. \
         `background: true` answers at once with a task id; the result arrives later as a new \
         message.",
    );
    if !agent.archetypes.is_empty() {
        description.push_str(" Archetypes:");
        for a in &agent.archetypes {
            let first = a.prompt.lines().next().unwrap_or_default();
            description.push_str(&format!(" `{}` ({first});", a.name));
        }
    }
    let names: Vec<&str> = agent.archetypes.iter().map(|a| a.name.as_str()).collect();
    let mut archetype = json!({"type": "string", "description": "a named kind of helper"});
    if !names.is_empty() {
        archetype["enum"] = json!(names);
    }
    ToolSpec {
        name: DELEGATE_TOOL.into(),
        description,
        parameters: json!({
            "type": "object",
            "properties": {
                "task": {"type": "string", "description": "everything the helper needs to know and do"},
                "archetype": archetype,
                "tier": {"type": "string", "description": "worker, chat or reasoning"},
                "tools": {"type": "array", "items": {"type": "string"}, "description": "only these tools"},
                "background": {"type": "boolean", "description": "run as a background task"}
            },
            "required": ["task"],
            "additionalProperties": false
        }),
        // The call itself changes nothing: every call the child makes is checked on its own.
        read_only: true,
    }
}

/// The plan for `args` from a parent at `depth` (0: the conversation's own turn) that has
/// `parent_tools`.
pub fn plan(agent: &AgentConfig, args: DelegateArgs, depth: u32, parent_tools: &[String]) -> Result<Plan, PlanError> {
    if args.task.trim().is_empty() {
        return Err(PlanError::EmptyTask);
    }
    if args.background && depth > 0 {
        return Err(PlanError::NestedBackground);
    }
    let archetype: Option<&ArchetypeConfig> = match &args.archetype {
        None => None,
        Some(name) => Some(agent.archetypes.iter().find(|a| &a.name == name).ok_or_else(|| {
            let known: Vec<&str> = agent.archetypes.iter().map(|a| a.name.as_str()).collect();
            let known = if known.is_empty() { "none are configured".to_string() } else { known.join(", ") };
            PlanError::UnknownArchetype(name.clone(), known)
        })?),
    };
    let tier =
        args.tier.clone().or_else(|| archetype.and_then(|a| a.tier.clone())).unwrap_or_else(|| WORKER_TIER.to_string());
    let child_depth = depth + 1;
    let mut tools: Vec<String> = parent_tools
        .iter()
        .filter(|t| {
            archetype.and_then(|a| a.tools.as_ref()).is_none_or(|allowed| allowed.iter().any(|g| glob_match(g, t)))
        })
        .filter(|t| args.tools.as_ref().is_none_or(|asked| asked.contains(t)))
        // A child at the depth limit is not offered `delegate`.
        .filter(|t| t.as_str() != DELEGATE_TOOL || child_depth < agent.delegation.max_depth)
        .cloned()
        .collect();
    tools.sort();
    tools.dedup();
    Ok(Plan {
        task: args.task,
        archetype: args.archetype,
        tier,
        tools,
        prompt: archetype.map(|a| a.prompt.clone()).unwrap_or_default(),
        background: args.background,
    })
}

/// The system prompt of a child: what it is, the archetype's instructions, how to answer.
pub fn child_prompt(name: &str, plan: &Plan) -> String {
    let mut out = format!(
        "You are a helper of {name}, an assistant. Another agent handed you one task; you cannot talk \
         to the person it works for except through `ask_user`. Work on the task with your tools, then \
         answer with your findings in full: your final answer is all the other agent will see."
    );
    if !plan.prompt.trim().is_empty() {
        out.push_str("\n\n");
        out.push_str(plan.prompt.trim());
    }
    out
}

#[cfg(test)]
mod tests;
