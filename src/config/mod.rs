//! Configuration: the TOML file, `${VAR}` interpolation, `BUTLER_<SECTION>__<KEY>` overrides,
//! validation with errors that name the key and the file, and a masked print for
//! `butler config check`.
//!
//! Every key lives in a struct with `deny_unknown_fields` (the sections below and in the
//! section files, the whole in `root.rs`), except a platform channel's `[channels.<name>]`,
//! kept as written and read by the channel's own type (`channels.rs`, `src/channels`);
//! `config/butler.example.toml` documents each one. This module must never print or log a [`Secret`]'s value.

mod channels;
mod delegation;
mod error;
mod hooks;
mod llm;
mod load;
mod log;
mod masked;
mod mcp;
mod media;
mod net;
mod permissions;
mod roles;
mod root;
mod schedules;
mod secret;
mod secrets;
mod sections;
mod skills;
#[cfg(test)]
mod tests;
mod tools;
mod validate;

pub use channels::{ChannelChecks, ChannelsConfig, NoChannels, SectionOverride};
pub use delegation::{ArchetypeConfig, DelegationConfig, CHAT_TIER, KNOWN_TIERS, WORKER_TIER};
pub use error::{ConfigError, FileFrom, Problem};
pub use hooks::{HookConfig, HookEvent, HookKind};
pub use llm::{LlmConfig, LlmFallback, LlmTier, ProviderKind};
pub use load::{
    data_dir, load, load_from, parse_str, select_file, user_config_file, Chosen, Env, Loaded, DEFAULT_ANTHROPIC_MODEL,
    DEFAULT_OPENAI_MODEL, DEFAULT_PATH, NO_FILE,
};
pub use log::{LogConfig, LogFormat};
pub use mcp::{McpConfig, McpServerConfig};
pub use media::{AudioConvert, MediaConfig, TranscriptionConfig};
pub use net::{public_host, HostName, IpRange};
pub use permissions::{ContextKind, Mode, PermissionContext, PermissionsConfig};
pub use roles::UserRole;
pub use root::{Config, OwnerChecks, ScheduleCheck, SectionCheck};
pub use schedules::{Missed, ScheduleConfig, ScheduleMode, DEFAULT_GRACE_SECS};
pub use secret::{is_secret_name, redact_url, Secret, SECRET_WORDS};
pub use secrets::SecretConfig;
pub use sections::{
    AccessConfig, AccessPolicy, AgentConfig, DatabaseConfig, EmbeddingsConfig, GroupConfig, GroupSession, LimitsConfig,
    MemoryConfig, RedisConfig, Respond, ServerConfig, SignatureKind, TriggerAction, TriggerConfig, TriggerRule,
    WebConfig,
};
pub use skills::SkillsConfig;
pub use tools::{
    FilesConfig, HttpRequestConfig, SandboxMode, SearchProvider, SendMessageConfig, ShellConfig, ToolsConfig,
    WebFetchConfig, WebSearchConfig,
};
pub use validate::{http_url, Problems};
