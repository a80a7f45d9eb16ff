//! `touch`: a mutating test tool (so the default mode asks before it runs) that records when each
//! run started and can take a while, for approval tests on every channel.

use async_trait::async_trait;
use butler::tools::{Action, Tool, ToolCtx, ToolError, ToolSpec};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub struct Touch {
    spec: ToolSpec,
    delay: Duration,
    started: Mutex<Vec<Instant>>,
}

impl Touch {
    /// Runs at once.
    pub fn new() -> Arc<Self> {
        Self::slow(Duration::ZERO)
    }

    /// Takes `delay` to run (so a click's acknowledgement can be shown to come first).
    pub fn slow(delay: Duration) -> Arc<Self> {
        Arc::new(Self {
            spec: ToolSpec {
                name: "touch".into(),
                description: "touch a named thing".into(),
                parameters: json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
                read_only: false,
            },
            delay,
            started: Mutex::new(vec![]),
        })
    }

    /// How many runs have started.
    pub fn runs(&self) -> usize {
        self.started.lock().unwrap().len()
    }

    /// When each run started.
    pub fn started(&self) -> Vec<Instant> {
        self.started.lock().unwrap().clone()
    }
}

#[async_trait]
impl Tool for Touch {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn action(&self, _ctx: &ToolCtx, args: &Value) -> Action {
        Action { summary: format!("touch `{}`", args["name"].as_str().unwrap_or("?")), ..Action::default() }
    }

    async fn call(&self, _ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        self.started.lock().unwrap().push(Instant::now());
        tokio::time::sleep(self.delay).await;
        Ok(format!("touched {}", args["name"].as_str().unwrap_or("?")))
    }
}
