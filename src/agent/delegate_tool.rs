//! The `delegate` tool as the model sees it. Its calls never reach `call`: the agent's tool
//! round takes them out and runs child agents for them (`child.rs`), because a child needs the
//! agent and may park on a person, which a plain tool cannot.
//!
//! This must never run anything itself.

use crate::config::AgentConfig;
use crate::tools::{Tool, ToolCtx, ToolError, ToolSpec};
use async_trait::async_trait;
use serde_json::Value;

pub(super) struct DelegateTool {
    spec: ToolSpec,
}

impl DelegateTool {
    pub(super) fn new(agent: &AgentConfig) -> Self {
        Self { spec: crate::delegate::spec(agent) }
    }
}

#[async_trait]
impl Tool for DelegateTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, _ctx: &ToolCtx, _args: Value) -> Result<String, ToolError> {
        Err(ToolError::Failed("`delegate` runs only in the agent's own tool round".into()))
    }
}
