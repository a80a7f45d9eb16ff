//! The [`Tool`] trait and what a call carries: its spec, the context it runs in
//! ([`ToolCtx`], one user's), what it would do ([`Action`]), what it returns, its errors; the
//! set of tools a turn offers ([`Tools`]) and other sources of tools ([`ToolSource`]).
//!
//! Contracts and small helpers only: the built-in tools live in `builtin/`.

use super::store::ToolStore;
use crate::llm::ToolDef;
use crate::store::UserRow;
pub use crate::store::{Detail, DetailKind};
use async_trait::async_trait;
use butler_channel::{ConversationRef, Identity};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

#[derive(Clone, Debug)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
    pub read_only: bool,
}

/// Who a tool call runs for, and the handles it may use.
#[derive(Clone)]
pub struct ToolCtx {
    pub user: UserRow,
    pub identity: Identity,
    pub session_id: String,
    /// The key of the session the turn runs in (a child's is its root's): `dm:...`, `group:...`.
    pub session_key: String,
    pub conversation: ConversationRef,
    pub kind: butler_channel::ConversationKind,
    /// This user's rows, and no one else's.
    pub store: ToolStore,
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
        self.store.memory_scope().clone()
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
    /// What exactly it would do, shown under the summary when a person is asked (the content
    /// of a write, the diff of an edit, the whole command, the request, the arguments), secrets
    /// masked like the summary's.
    pub detail: Option<Detail>,
}

#[async_trait]
pub trait Tool: Send + Sync {
    fn spec(&self) -> &ToolSpec;
    /// Describes what `args` would do; called before the permission check, never runs anything.
    fn action(&self, _ctx: &ToolCtx, args: &Value) -> Action {
        Action { summary: format!("use `{}` with {}", self.spec().name, mask_secrets(args)), ..Action::default() }
    }
    async fn call(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError>;
    /// Its own time limit, when it has one (an MCP server's `timeout_secs`): it holds instead
    /// of `[limits] tool_timeout_secs`, so a server allowed longer is not cut short silently.
    fn time_limit(&self) -> Option<std::time::Duration> {
        None
    }
    /// Whether what it returns is text from outside (a web page, a file, command output, other
    /// people's messages, an MCP server): the model gets it fenced as untrusted data.
    fn untrusted_output(&self) -> bool {
        false
    }
    /// The call with what else it returns besides text (images); what the agent runs. Tools
    /// that only ever return text keep this default.
    async fn call_rich(&self, ctx: &ToolCtx, args: Value) -> Result<ToolOutput, ToolError> {
        self.call(ctx, args).await.map(ToolOutput::from)
    }
}

/// What a tool call returned: text, and images for vision models.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolOutput {
    pub text: String,
    pub images: Vec<crate::llm::Image>,
}

impl From<String> for ToolOutput {
    fn from(text: String) -> Self {
        Self { text, images: Vec::new() }
    }
}

/// `v` with the values of secret-looking keys (a name with one of
/// [`crate::config::SECRET_WORDS`]) replaced by `***`, at any depth.
fn mask_json(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let secret = crate::config::is_secret_name(k);
                    (k.clone(), if secret { Value::String("***".into()) } else { mask_json(v) })
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(mask_json).collect()),
        other => other.clone(),
    }
}

/// `args` as pretty JSON, whole, with the values of secret-looking keys replaced by `***` and
/// recognisable secrets inside string values masked too (`Bearer …`, `token=…`, URL passwords;
/// see `builtin::plain::mask_text`): an approval's detail of a call's arguments.
pub fn masked_pretty(args: &Value) -> String {
    fn strings(v: Value) -> Value {
        match v {
            Value::String(s) => Value::String(super::builtin::plain::mask_text(&s)),
            Value::Array(items) => Value::Array(items.into_iter().map(strings).collect()),
            Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, strings(v))).collect()),
            other => other,
        }
    }
    serde_json::to_string_pretty(&strings(mask_json(args))).unwrap_or_default()
}

/// `args` as compact JSON with values of secret-looking keys (a name with one of
/// [`crate::config::SECRET_WORDS`]) replaced by `***`, cut to 300 characters.
pub fn mask_secrets(args: &Value) -> String {
    let text = mask_json(args).to_string();
    if text.chars().count() > 300 {
        format!("{}…", text.chars().take(300).collect::<String>())
    } else {
        text
    }
}

/// Tools that come and go while Butler runs (the MCP servers'), asked once per turn so a
/// changed list applies from the next turn. It must answer at once from what it has: never
/// wait on a server.
pub trait ToolSource: Send + Sync {
    /// The tools offered now; `reserved` are names already taken, which it must not offer.
    fn tools(&self, reserved: &std::collections::BTreeSet<String>) -> Vec<Arc<dyn Tool>>;
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
        self.rebuild_defs();
    }

    /// These tools and the ones `source` offers now (never replacing one of these), for one
    /// turn; without a source (or when it offers nothing) a plain clone.
    pub fn with_source(&self, source: Option<&dyn ToolSource>) -> Tools {
        let Some(source) = source else { return self.clone() };
        let reserved: std::collections::BTreeSet<String> = self.by_name.keys().cloned().collect();
        let more = source.tools(&reserved);
        if more.is_empty() {
            return self.clone();
        }
        let mut out = self.clone();
        for tool in more {
            out.by_name.entry(tool.spec().name.clone()).or_insert(tool);
        }
        out.rebuild_defs();
        out
    }

    fn rebuild_defs(&mut self) {
        self.defs = self
            .by_name
            .values()
            .map(|t| {
                let s = t.spec();
                ToolDef::new(s.name.clone(), s.description.clone(), s.parameters.clone())
            })
            .collect();
    }

    /// Only the tools of this set named in `names` (a child agent's share of its parent's).
    pub fn only(&self, names: &[String]) -> Tools {
        let by_name = self.by_name.iter().filter(|(n, _)| names.contains(n)).map(|(n, t)| (n.clone(), t.clone()));
        let mut out = Tools { by_name: by_name.collect(), ..Tools::default() };
        out.rebuild_defs();
        out
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
}

/// Deserializes validated arguments into a tool's typed argument struct.
pub fn parse_args<T: serde::de::DeserializeOwned>(args: Value) -> Result<T, ToolError> {
    serde_json::from_value(args).map_err(|e| ToolError::InvalidArgs(e.to_string()))
}
