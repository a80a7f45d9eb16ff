//! Placeholder contract for hooks (replaced by the implementation).

use crate::config::{HookConfig, HookEvent};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HookOutcome {
    Continue,
    /// A pre_tool_use hook refused the call, with its reason.
    Block(String),
}

#[derive(Default)]
pub struct Hooks;

impl Hooks {
    pub fn new(_cfg: &[HookConfig]) -> Self {
        Self
    }

    pub async fn run(&self, _event: HookEvent, _tool: Option<&str>, _payload: &serde_json::Value) -> HookOutcome {
        HookOutcome::Continue
    }
}
