//! The small sections config owns itself, as plain data with their defaults: `[server]`,
//! `[database]`, `[redis]`, `[channels.web]`, `[access]` (and its groups), `[[triggers]]`,
//! `[agent]`, `[memory]`, `[limits]`. Their checks are in `validate/`; the larger sections have
//! their own files.
//!
//! Plain data: nothing here reads a file, the environment or a component.

use super::delegation::{ArchetypeConfig, DelegationConfig};
use super::secret::Secret;
use butler_channel::Identity;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// Address of the one HTTP server (web chat, API, webhooks, health, metrics).
    pub listen: String,
    /// Largest request body accepted, in bytes.
    pub max_body_bytes: usize,
    /// On SIGTERM/Ctrl-C: how long running turns may take to finish or park.
    pub shutdown_grace_secs: u64,
    /// Seconds a connection may take to send a complete request head; the same bound applies
    /// while a kept-alive connection waits idle for its next request.
    pub header_timeout_secs: u64,
    /// Seconds a request may take to send its whole body.
    pub body_timeout_secs: u64,
    /// Most client connections served at once (kept below the open-file limit).
    pub max_connections: usize,
    /// Most connections one client address may hold at once (requests in flight, for clients
    /// behind a trusted proxy).
    pub max_connections_per_client: usize,
    /// Host names served besides the listen address, `localhost`, `127.0.0.1` and `[::1]` when
    /// the web chat has no token (names a reverse proxy forwards): `name` (any port) or
    /// `name:port`.
    pub allowed_hosts: Vec<String>,
    /// Proxies (IP addresses or CIDR ranges) whose `X-Forwarded-For` names the client for the
    /// per-client cap; anyone else's forwarded address is ignored.
    pub trusted_proxies: Vec<String>,
    /// Where people reach Butler from outside (`https://butler.example.com`, behind a reverse
    /// proxy): turns on answer links in mail. Empty: none.
    pub public_url: String,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:8080".into(),
            max_body_bytes: 1 << 20,
            shutdown_grace_secs: 10,
            header_timeout_secs: 10,
            body_timeout_secs: 30,
            max_connections: 1024,
            max_connections_per_client: 256,
            allowed_hosts: Vec::new(),
            trusted_proxies: Vec::new(),
            public_url: String::new(),
        }
    }
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct DatabaseConfig {
    /// `sqlite://<data dir>/butler.db` (default) or `postgres://user:pass@host/db`.
    pub url: Secret,
    pub max_connections: u32,
}

impl Default for DatabaseConfig {
    fn default() -> Self {
        Self { url: Secret::new("sqlite://data/butler.db"), max_connections: 8 }
    }
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RedisConfig {
    pub url: Secret,
    /// How long a lease (a session, a receiver, a replica's heartbeat) lives without renewal,
    /// in milliseconds: the time another replica waits before taking over from a dead one.
    #[serde(default = "default_lease_ms")]
    pub lease_ms: u64,
    /// Prefix of every Redis key and channel, so several deployments can share one Redis.
    #[serde(default = "default_redis_prefix")]
    pub prefix: String,
}

fn default_lease_ms() -> u64 {
    3000
}

fn default_redis_prefix() -> String {
    "butler".into()
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct WebConfig {
    pub enabled: bool,
    /// A single token for the owner (identity `web:owner`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<Secret>,
    /// One token per web user: `{ alice = "${ALICE_WEB_TOKEN}" }` -> identity `web:alice`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tokens: BTreeMap<String, Secret>,
}

impl Default for WebConfig {
    fn default() -> Self {
        Self { enabled: true, token: None, tokens: BTreeMap::new() }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AccessPolicy {
    /// Unknown people get a pairing code the owner approves.
    #[default]
    Pairing,
    /// Only owners and `allow` may talk; others are ignored after one short reply.
    Allowlist,
    /// Anyone may talk (warned about at start).
    Open,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct AccessConfig {
    pub policy: AccessPolicy,
    pub owners: Vec<Identity>,
    pub allow: Vec<Identity>,
    /// How Butler behaves in particular group conversations (others use the defaults).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<GroupConfig>,
}

/// When Butler answers in a group.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Respond {
    /// Only when mentioned, replied to, or given a command.
    #[default]
    Mention,
    /// To every message (a group made for talking to Butler).
    All,
}

/// How a group's messages map to sessions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupSession {
    /// One session for the group (or thread), every speaker named.
    #[default]
    Shared,
    /// One session per speaker inside the group.
    PerSpeaker,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GroupConfig {
    /// `channel:chat_id`, or `channel:chat_id/thread` for one thread or topic only.
    pub conversation: butler_channel::ConversationRef,
    #[serde(default)]
    pub respond: Respond,
    #[serde(default)]
    pub session: GroupSession,
}

/// What a trigger event turns into.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TriggerAction {
    /// Ignore it (recorded with the reason).
    #[default]
    Drop,
    /// Render `template` and post it to the target conversation.
    Notify,
    /// Run an agent turn for the target user with the payload as context.
    Agent,
}

/// How a trigger source signs its requests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SignatureKind {
    /// `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body>`.
    Github,
    /// `X-Butler-Signature-256: sha256=<hex HMAC-SHA256 of "<timestamp>.<raw body>">` with
    /// `X-Butler-Timestamp` (Unix seconds) within 5 minutes.
    #[default]
    Butler,
}

/// A signed webhook source (`[[triggers]]`).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TriggerConfig {
    /// The path segment: `POST /hooks/{name}`.
    pub name: String,
    pub secret: Secret,
    #[serde(default)]
    pub signature: SignatureKind,
    /// What to do when no rule (and no classifier) decides.
    #[serde(default)]
    pub default: TriggerAction,
    /// Notify: the conversation to post to. Agent: the identity whose turn it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Agent: the conversation the reply is delivered to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<butler_channel::ConversationRef>,
    /// Notify: the message, with `{{field.path}}` placeholders from the event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// Agent: what the agent should do with the event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Agent: the payload is cut to this many characters of context.
    #[serde(default = "default_max_payload_chars")]
    pub max_payload_chars: usize,
    /// Requests accepted per minute; more get 429.
    #[serde(default = "default_rate_limit")]
    pub rate_limit_per_minute: u32,
    /// Ask the model to classify events no rule decides (cached by content hash).
    #[serde(default)]
    pub classify: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<TriggerRule>,
}

fn default_max_payload_chars() -> usize {
    8_000
}

fn default_rate_limit() -> u32 {
    60
}

/// `[[triggers.rules]]`: the first rule whose every `when` entry matches decides.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TriggerRule {
    /// Field path (`headers.x-github-event`, `body.action`, `body.repository.full_name`) ->
    /// expected value: a string (`*` matches any run of characters), a number, a boolean, or a
    /// list of alternatives.
    #[serde(default)]
    pub when: BTreeMap<String, serde_json::Value>,
    pub action: TriggerAction,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<butler_channel::ConversationRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentConfig {
    /// The assistant's name in its system prompt.
    pub name: String,
    /// Extra instructions appended to the built-in system prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Default IANA time zone for users who have not set one.
    pub timezone: String,
    /// Handing focused tasks to child agents (`delegate`); checked by `crate::delegate`.
    pub delegation: DelegationConfig,
    /// Named kinds of helper for `delegate {archetype}`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub archetypes: Vec<ArchetypeConfig>,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            name: "Butler".into(),
            instructions: None,
            timezone: "UTC".into(),
            delegation: DelegationConfig::default(),
            archetypes: Vec::new(),
        }
    }
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct MemoryConfig {
    /// The remember / recall / forget tools.
    pub enabled: bool,
    /// Most memories a `recall` returns.
    pub recall_limit: usize,
    /// Before each turn, add the memories relevant to the new message to it (never to the
    /// system prompt).
    pub recall: bool,
    /// The most tokens those recalled memories may take.
    pub recall_budget_tokens: usize,
    /// After each reply, a background job distils durable facts from the exchange into memories.
    pub archivist: bool,
    /// The most tokens the pinned memories (the profile always known in a new private session's
    /// prompt) may take; 0 leaves the profile out.
    pub profile_max_tokens: usize,
    /// Recall by meaning as well as by words (`[memory.embeddings]`); off when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embeddings: Option<EmbeddingsConfig>,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            recall_limit: 8,
            recall: true,
            recall_budget_tokens: 500,
            archivist: true,
            profile_max_tokens: 300,
            embeddings: None,
        }
    }
}

/// An OpenAI-compatible `POST {base_url}/embeddings` (OpenAI, Ollama, llama.cpp's server,
/// vLLM): every memory and transcript message is embedded in the background, and recall merges
/// what the words find with what the meaning finds. Checked by `crate::memory`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct EmbeddingsConfig {
    /// e.g. `https://api.openai.com/v1`, `http://127.0.0.1:11434/v1` (Ollama).
    pub base_url: String,
    /// Stored with each vector: a new model re-embeds in the background, and until then the
    /// rows it has not reached are found by their words only.
    pub model: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key: Option<Secret>,
    /// Asked of the service (`dimensions`) and checked on each answer; unset takes the model's own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dimensions: Option<usize>,
    /// Most texts per embedding request.
    pub batch_size: usize,
    /// How close (cosine) a memory must be to count as found by meaning.
    pub min_similarity: f32,
    pub timeout_secs: u64,
}

impl Default for EmbeddingsConfig {
    fn default() -> Self {
        Self {
            base_url: String::new(),
            model: "text-embedding-3-small".into(),
            api_key: None,
            dimensions: None,
            batch_size: 64,
            min_similarity: 0.3,
            timeout_secs: 30,
        }
    }
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsConfig {
    /// LLM calls in one turn before it is stopped with a message.
    pub max_iterations: u32,
    /// Longest a single tool call may run (an MCP server's own `timeout_secs` holds for its tools).
    pub tool_timeout_secs: u64,
    /// Longer tool results are cut, with a marker saying so.
    pub max_tool_result_chars: usize,
    /// Messages waiting for one session before new ones are deferred.
    pub session_mailbox: usize,
    /// An idle session's actor is dropped after this long (it is rehydrated from the store).
    pub session_idle_secs: u64,
    /// Transcript messages sent to the model per turn (the most recent ones).
    pub history_messages: usize,
    /// Tries of one inbound event before it becomes `failed` (a dead letter); the sender is
    /// told once. Retries back off between tries.
    pub max_event_attempts: u32,
    /// Most US dollars one turn may spend, its children included; unset: no limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_usd_per_turn: Option<f64>,
    /// Most US dollars one user may spend in a day (UTC); unset: no limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_usd_per_day: Option<f64>,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        Self {
            max_iterations: 10,
            tool_timeout_secs: 60,
            max_tool_result_chars: 16_000,
            session_mailbox: 32,
            session_idle_secs: 600,
            history_messages: 200,
            max_event_attempts: 5,
            max_usd_per_turn: None,
            max_usd_per_day: None,
        }
    }
}
