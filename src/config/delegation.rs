//! `[agent.delegation]` and `[[agent.archetypes]]`: how a turn may hand a focused task to a
//! child agent, the named kinds of helper, and the names of the model tiers they run on.
//! Plain data: their checks live in `crate::delegate`. This file must never touch the network.

use serde::{Deserialize, Serialize};

/// `[agent.delegation]`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct DelegationConfig {
    /// Children may delegate down to this depth; a child of this depth is not offered `delegate`.
    /// 0 turns delegation off.
    pub max_depth: u32,
    /// Children of one turn running at once.
    pub max_parallel: usize,
    /// Model calls one child may make before it is stopped (its partial answer goes back).
    pub max_iterations: u32,
    /// Longest a child may run, in seconds, before it is stopped (its partial answer goes back).
    pub timeout_secs: u64,
    /// Background tasks of one user running at once; more are refused with a message.
    pub max_background: usize,
    /// Model calls one message may cause in all: its own turn, every helper at every depth, its
    /// background tasks and the turns their reports start. The call past it ends the request with
    /// a message naming this key. Must be more than 0.
    pub max_model_calls_per_message: u32,
    /// Helpers (foreground and background, at every depth) one message may start in all,
    /// counted like `max_model_calls_per_message`; a `delegate` call past it is refused. Must be
    /// more than 0.
    pub max_helpers_per_message: u32,
}

impl Default for DelegationConfig {
    fn default() -> Self {
        Self {
            max_depth: 3,
            max_parallel: 4,
            max_iterations: 8,
            timeout_secs: 300,
            max_background: 100,
            max_model_calls_per_message: 200,
            max_helpers_per_message: 32,
        }
    }
}

/// One `[[agent.archetypes]]`: a named kind of helper.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ArchetypeConfig {
    pub name: String,
    /// The model tier (`[llm.tiers.<tier>]`); default `worker`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tier: Option<String>,
    /// The tools it may have (intersected with the parent's and the call's); unset: the parent's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Its instructions, at the top of the child's system prompt.
    pub prompt: String,
}

/// The tier every helper runs on unless told otherwise; also the archivist's, compaction's and
/// the trigger classifier's when configured.
pub const WORKER_TIER: &str = "worker";
/// The everyday model: `[llm]` itself unless `[llm.tiers.chat]` says otherwise.
pub const CHAT_TIER: &str = "chat";
/// The tier names a call may use besides configured ones.
pub const KNOWN_TIERS: [&str; 3] = ["worker", "chat", "reasoning"];
