//! A skill's `allowed-tools` while it is in use: once the model has loaded a skill that has
//! the key (a successful `skill` call), the rest of the turn offers only the tools it permits
//! (and `skill`), and calls to any other tool are refused with a tool error. Several such skills
//! in one turn narrow further (a tool must be permitted by each); nothing widens it again.
//!
//! This must never widen what the permission policy allows: it only takes tools away. It is
//! derived from the turn's own transcript, so a turn resumed after an approval or a crash is
//! narrowed exactly as before.

use crate::llm::{ToolCall, ToolDef};
use crate::skills::{allowed_tools, permits, Catalog, SKILL_TOOL};
use crate::store::{NewMessage, Role};
use std::sync::Arc;

/// The `allowed-tools` lists of the skills loaded in this turn.
#[derive(Clone, Debug, Default)]
pub(super) struct Narrowing {
    /// (skill, its allowed tools with `skill` added), in the order loaded.
    lists: Vec<(String, Vec<String>)>,
}

impl Narrowing {
    /// From the turn's messages: the last user message and everything after it.
    pub(super) fn from_turn(history: &[NewMessage], catalog: &Catalog) -> Self {
        let start = history.iter().rposition(|m| m.role() == Role::User).unwrap_or(history.len());
        let turn = &history[start..];
        let mut n = Self::default();
        for m in turn.iter().filter(|m| m.role() == Role::Assistant) {
            for call in &m.tool_calls {
                let ok = turn.iter().any(|r| r.tool_call_id.as_deref() == Some(call.id.as_str()) && !r.is_error);
                if ok {
                    n.loaded(call, catalog);
                }
            }
        }
        n
    }

    /// Whether the turn in `history` (from its last user message) called `skill`: only then is
    /// the catalog needed to narrow.
    pub(super) fn called_skill(history: &[NewMessage]) -> bool {
        let start = history.iter().rposition(|m| m.role() == Role::User).unwrap_or(history.len());
        history[start..].iter().any(|m| m.tool_calls.iter().any(|c| c.name == SKILL_TOOL))
    }

    /// Takes in one call that succeeded: a `skill` call adds its skill's `allowed-tools`.
    pub(super) fn loaded(&mut self, call: &ToolCall, catalog: &Catalog) {
        if call.name != SKILL_TOOL {
            return;
        }
        let args: serde_json::Value = serde_json::from_str(&call.arguments).unwrap_or_default();
        let Some(skill) = args.get("name").and_then(|v| v.as_str()).and_then(|name| catalog.get(name)) else {
            return;
        };
        if let Some(list) = allowed_tools(skill) {
            if !self.lists.iter().any(|(name, _)| *name == skill.name) {
                tracing::info!(skill = %skill.name, allowed = ?list, "tools narrowed by a skill's allowed-tools");
                self.lists.push((skill.name.clone(), list));
            }
        }
    }

    pub(super) fn is_narrowed(&self) -> bool {
        !self.lists.is_empty()
    }

    /// Whether `tool` may be called now.
    pub(super) fn permits(&self, tool: &str) -> bool {
        self.lists.iter().all(|(_, list)| permits(list, tool))
    }

    /// The refusal a call to `tool` gets, or `None` when it may run.
    pub(super) fn refusal(&self, tool: &str) -> Option<String> {
        let (skill, list) = self.lists.iter().find(|(_, list)| !permits(list, tool))?;
        Some(format!("refused: while the skill `{skill}` is in use only these tools may be used: {}", list.join(", ")))
    }

    /// `defs` without the tools that may not be called now.
    pub(super) fn offered(&self, defs: &Arc<[ToolDef]>) -> Arc<[ToolDef]> {
        if !self.is_narrowed() {
            return defs.clone();
        }
        defs.iter().filter(|d| self.permits(&d.name)).cloned().collect()
    }
}
