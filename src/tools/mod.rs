//! Tools the agent can call: the [`Tool`] trait, the registry, argument validation and the
//! built-in tools.
//!
//! A tool declares whether it is read-only and how risky it is; the permission engine decides
//! from that. A tool must never reach outside the user it runs for (its [`ToolCtx`]), never
//! panic on bad arguments (it returns [`ToolError::InvalidArgs`]) and never block the runtime.

pub mod builtin;
pub mod sandbox;
mod validate;

pub use validate::validate_args;

use crate::llm::ToolDef;
use crate::store::{Store, UserRow};
use async_trait::async_trait;
use butler_channel::{ConversationRef, Identity};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// How much harm a mistaken call could do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Risk {
    Low,
    Medium,
    High,
}

#[derive(Clone, Debug)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
    pub read_only: bool,
    pub risk: Risk,
}

/// Who a tool call runs for, and the handles it may use.
#[derive(Clone)]
pub struct ToolCtx {
    pub user: UserRow,
    pub identity: Identity,
    pub session_id: String,
    pub conversation: ConversationRef,
    pub kind: butler_channel::ConversationKind,
    pub store: Arc<dyn Store>,
    /// Fires when the turn is stopped; long tools should give up.
    pub cancel: CancellationToken,
    pub recall_limit: usize,
    /// This user's workspace directory (file tools and shell run inside it).
    pub workspace: PathBuf,
}

impl ToolCtx {
    /// Whose memory the memory tools use: the user's own in a DM, the user's share of the group
    /// inside a group (so a group never sees DM memories, nor a DM group memories).
    pub fn memory_scope(&self) -> crate::store::MemoryScope {
        match self.kind {
            butler_channel::ConversationKind::Direct => crate::store::MemoryScope::personal(&self.user.id),
            butler_channel::ConversationKind::Group => {
                crate::store::MemoryScope::group(&self.user.id, &self.conversation.to_string())
            }
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The model sent arguments that do not fit the schema; it can fix them and retry.
    #[error("invalid arguments: {0}")]
    InvalidArgs(String),
    /// The tool ran and failed.
    #[error("{0}")]
    Failed(String),
}

/// What a call would do, for the permission check and the approval message.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Action {
    /// Plain words a person can approve ("run `ls -la` in your workspace"), secrets masked.
    pub summary: String,
    /// Every path the call would touch, absolute (resolved against the workspace).
    pub paths: Vec<PathBuf>,
    /// A shell command line, for command rules.
    pub command: Option<String>,
    /// A URL the call would fetch or send to.
    pub url: Option<String>,
}

#[async_trait]
pub trait Tool: Send + Sync {
    fn spec(&self) -> &ToolSpec;
    /// Describes what `args` would do; called before the permission check, never runs anything.
    fn action(&self, _ctx: &ToolCtx, args: &Value) -> Action {
        Action { summary: format!("use `{}` with {}", self.spec().name, mask_secrets(args)), ..Action::default() }
    }
    async fn call(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError>;
}

/// `args` as compact JSON with values of secret-looking keys (token, password, key, secret,
/// authorization) replaced by `***`, cut to 300 characters.
pub fn mask_secrets(args: &Value) -> String {
    fn mask(v: &Value) -> Value {
        match v {
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| {
                        let lower = k.to_ascii_lowercase();
                        let secret = ["token", "password", "secret", "key", "authorization", "cookie"]
                            .iter()
                            .any(|s| lower.contains(s));
                        (k.clone(), if secret { Value::String("***".into()) } else { mask(v) })
                    })
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(mask).collect()),
            other => other.clone(),
        }
    }
    let text = mask(args).to_string();
    if text.chars().count() > 300 {
        format!("{}…", text.chars().take(300).collect::<String>())
    } else {
        text
    }
}

/// The tools available to a turn, by name. Sorted, so the tool list sent to the model is
/// byte-stable (provider prompt caches key on it).
#[derive(Clone)]
pub struct Tools {
    by_name: BTreeMap<String, Arc<dyn Tool>>,
    /// The definitions sent to the model, rebuilt when a tool is added.
    defs: Arc<[ToolDef]>,
}

impl Default for Tools {
    fn default() -> Self {
        Self { by_name: BTreeMap::new(), defs: Arc::from(Vec::new()) }
    }
}

impl Tools {
    pub fn add(&mut self, tool: Arc<dyn Tool>) {
        self.by_name.insert(tool.spec().name.clone(), tool);
        self.defs = self
            .by_name
            .values()
            .map(|t| {
                let s = t.spec();
                ToolDef { name: s.name.clone(), description: s.description.clone(), parameters: s.parameters.clone() }
            })
            .collect();
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.by_name.get(name)
    }

    /// The definitions sent to the model, in name order (byte-stable).
    pub fn defs(&self) -> Arc<[ToolDef]> {
        self.defs.clone()
    }

    pub fn names(&self) -> Vec<&str> {
        self.by_name.keys().map(String::as_str).collect()
    }

    /// The built-in tools enabled by the config: `web_fetch` when enabled, `http_get` and
    /// `http_request` when `allowed_hosts` is not empty, `shell` only when enabled, the file
    /// tools when enabled, `send_message` when it has targets, and always the scheduled-job tools
    /// (`schedule`, `schedules_list`).
    pub fn builtin(cfg: &crate::config::Config) -> Self {
        let mut t = Self::default();
        t.add(Arc::new(builtin::Now::new()));
        if cfg.memory.enabled {
            for tool in builtin::memory_tools() {
                t.add(tool);
            }
        }
        let tc = &cfg.tools;
        if tc.web_fetch.enabled {
            match builtin::WebFetch::new(&tc.web_fetch) {
                Ok(tool) => t.add(Arc::new(tool)),
                Err(e) => tracing::warn!(error = %e, "web_fetch is off"),
            }
        }
        if !tc.http_request.allowed_hosts.is_empty() {
            match builtin::http_tools(&tc.http_request) {
                Ok(tools) => tools.into_iter().for_each(|tool| t.add(tool)),
                Err(e) => tracing::warn!(error = %e, "http_get and http_request are off"),
            }
        }
        if tc.shell.enabled {
            t.add(Arc::new(builtin::Shell::new(&tc.shell)));
        }
        if tc.files.enabled {
            builtin::file_tools(&tc.files).into_iter().for_each(|tool| t.add(tool));
        }
        if !tc.send_message.targets.is_empty() {
            t.add(Arc::new(builtin::SendMessage::new(&tc.send_message)));
        }
        builtin::schedule_tools().into_iter().for_each(|tool| t.add(tool));
        t
    }
}

/// Deserializes validated arguments into a tool's typed argument struct.
pub fn parse_args<T: serde::de::DeserializeOwned>(args: Value) -> Result<T, ToolError> {
    serde_json::from_value(args).map_err(|e| ToolError::InvalidArgs(e.to_string()))
}
