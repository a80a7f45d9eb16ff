//! The whole configuration: the [`Config`] struct of all sections, its checks in the order of
//! the sections (config's own in `validate/`, the components' handed in as [`OwnerChecks`]), and
//! its masked print (`masked.rs`).
//!
//! Plain data at the bottom of the crate: this file must never import a component of Butler,
//! and never print or log a secret.

use super::error::ConfigError;
use super::validate::{self, Problems};
use super::{
    AccessConfig, AgentConfig, ChannelChecks, ChannelsConfig, DatabaseConfig, HookConfig, LimitsConfig, LlmConfig,
    LogConfig, McpConfig, MediaConfig, MemoryConfig, NoChannels, PermissionsConfig, RedisConfig, ScheduleConfig,
    SecretConfig, ServerConfig, SkillsConfig, ToolsConfig, TriggerConfig,
};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub server: ServerConfig,
    pub database: DatabaseConfig,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redis: Option<RedisConfig>,
    pub llm: LlmConfig,
    pub channels: ChannelsConfig,
    pub access: AccessConfig,
    pub agent: AgentConfig,
    pub memory: MemoryConfig,
    pub limits: LimitsConfig,
    /// Signed webhook sources at `POST /hooks/{name}`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub triggers: Vec<TriggerConfig>,
    pub permissions: PermissionsConfig,
    pub tools: ToolsConfig,
    /// Commands or URLs called around tool calls, sessions and compaction.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<HookConfig>,
    /// Cron-scheduled jobs (briefings, reports, reminders).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub schedules: Vec<ScheduleConfig>,
    /// MCP tool servers (`[mcp]`, `[[mcp.servers]]`); checked by `crate::mcp`.
    pub mcp: McpConfig,
    /// Extra skill folders (`[skills]`); discovery and checks are in `crate::skills`.
    pub skills: SkillsConfig,
    /// Files people send (`[media]`, `[media.transcription]`); checked by `crate::media`.
    pub media: MediaConfig,
    /// Log format and traces (`[log]`); checked by `crate::telemetry`.
    pub log: LogConfig,
    /// Credentials tools use by name (`[secrets.<name>]`); checked and used by `crate::secrets`.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub secrets: std::collections::BTreeMap<String, SecretConfig>,
}

impl Config {
    /// The checks of the sections config owns, all problems at once, as [`ConfigError::Invalid`]
    /// (origin `config`; `load` puts the file name in). The full check, with `[permissions]`,
    /// `[tools]` and `[[schedules]]`, is `app::check_config`.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.validate_with(&OwnerChecks::NONE)
    }

    /// [`Config::validate`] with the checks of the sections components own, each at its place,
    /// so the problems keep the order of the sections.
    pub fn validate_with(&self, owners: &OwnerChecks<'_>) -> Result<(), ConfigError> {
        let mut p = Problems::default();
        validate::check_server(&self.server, &mut p);
        validate::check_stores(&self.database, self.redis.as_ref(), &mut p);
        validate::check_llm(&self.llm, &mut p);
        validate::check_web(&self.channels.web, &self.server.listen, &mut p);
        validate::check_rest(&self.agent, &self.memory, &self.limits, &mut p);
        (owners.memory)(self, &mut p);
        (owners.delegation)(self, &mut p);
        validate::check_triggers(&self.triggers, &mut p);
        (owners.permissions)(self, &mut p);
        validate::check_hooks(&self.hooks, &mut p);
        (owners.tools)(self, &mut p);
        owners.channels.check(&self.channels, &mut p);
        (owners.schedules)(self, owners.channels, &mut p);
        (owners.mcp)(self, &mut p);
        (owners.skills)(self, &mut p);
        (owners.media)(self, &mut p);
        (owners.log)(self, &mut p);
        (owners.secrets)(self, &mut p);
        (owners.prices)(self, &mut p);
        p.into_result()
    }

    /// The full effective configuration as TOML (in the order of the structs), secrets masked.
    pub fn to_masked_toml(&self) -> String {
        let shown = Self { channels: self.channels.masked(), ..self.clone() };
        super::masked::to_masked_toml(&shown, self.database.url.expose(), self.redis.as_ref().map(|r| r.url.expose()))
    }

    /// A digest per top-level section of the effective config, for replicas to compare: secrets
    /// masked, and the keys that are each replica's own left out (`[server] listen`, a Matrix
    /// device's `store_path` and `device_id`).
    pub fn section_digests(&self) -> std::collections::BTreeMap<String, String> {
        use sha2::{Digest, Sha256};
        let mut table: toml::Table = self.to_masked_toml().parse().unwrap_or_default();
        if let Some(server) = table.get_mut("server").and_then(toml::Value::as_table_mut) {
            server.remove("listen");
        }
        let matrix = table.get_mut("channels").and_then(|c| c.get_mut("matrix")).and_then(toml::Value::as_table_mut);
        if let Some(matrix) = matrix {
            matrix.remove("store_path");
            matrix.remove("device_id");
        }
        let digest = |v: &toml::Value| hex::encode(Sha256::digest(v.to_string().as_bytes()))[..16].to_string();
        table.iter().map(|(name, value)| (name.clone(), digest(value))).collect()
    }
}

/// A check of one section whose rules a component owns: it adds a problem per bad value.
pub type SectionCheck = fn(&Config, &mut Problems);

/// The check of `[[schedules]]`: its targets must be on channels this config runs, which only
/// the channel registry knows, so it is handed the registry's answers.
pub type ScheduleCheck = fn(&Config, &dyn ChannelChecks, &mut Problems);

/// The checks of the sections whose rules live in their components: config sits below them and
/// cannot call them, so the caller above (`app::CONFIG_CHECKS`) hands them in, and
/// [`Config::validate_with`] runs them at their place in the order of the sections.
#[derive(Clone, Copy)]
pub struct OwnerChecks<'a> {
    /// `[permissions]` (`crate::permissions`).
    pub permissions: SectionCheck,
    /// `[tools]` (`crate::tools`).
    pub tools: SectionCheck,
    /// `[[schedules]]` (`crate::schedule`).
    pub schedules: ScheduleCheck,
    /// `[channels.<name>]` of every platform channel, and which channels run (the registry in
    /// `crate::channels`).
    pub channels: &'a dyn ChannelChecks,
    /// `[mcp]` and `[[mcp.servers]]` (`crate::mcp`).
    pub mcp: SectionCheck,
    /// `[skills]` (`crate::skills`).
    pub skills: SectionCheck,
    /// `[agent.delegation]` and `[[agent.archetypes]]` (`crate::delegate`).
    pub delegation: SectionCheck,
    /// `[media]` and `[media.transcription]` (`crate::media`).
    pub media: SectionCheck,
    /// `[log]` (`crate::telemetry`).
    pub log: SectionCheck,
    /// `[llm]`'s prices against `[limits]`' budgets (`crate::llm`).
    pub prices: SectionCheck,
    /// `[memory.embeddings]` (`crate::memory`).
    pub memory: SectionCheck,
    /// `[secrets]` and the `secret:NAME` references to them (`crate::secrets`).
    pub secrets: SectionCheck,
}

impl OwnerChecks<'static> {
    /// Checks only the sections config owns.
    pub const NONE: Self = Self {
        permissions: skip,
        tools: skip,
        schedules: skip_schedules,
        channels: &NoChannels,
        mcp: skip,
        skills: skip,
        delegation: skip,
        media: skip,
        log: skip,
        prices: skip,
        memory: skip,
        secrets: skip,
    };
}

fn skip(_: &Config, _: &mut Problems) {}

fn skip_schedules(_: &Config, _: &dyn ChannelChecks, _: &mut Problems) {}
