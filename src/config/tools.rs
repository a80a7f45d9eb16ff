//! `[tools]`: the acting tools and their limits.

use super::Secret;
use butler_channel::ConversationRef;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ToolsConfig {
    /// Each user's workspace is `<workspace_dir>/<user id>` (file tools and shell run there).
    pub workspace_dir: String,
    /// What one person's workspace may hold, in MB; a full one refuses writes (0: no quota).
    pub workspace_quota_mb: u64,
    pub web_fetch: WebFetchConfig,
    pub web_search: WebSearchConfig,
    pub http_request: HttpRequestConfig,
    pub shell: ShellConfig,
    pub files: FilesConfig,
    pub send_message: SendMessageConfig,
}

impl Default for ToolsConfig {
    fn default() -> Self {
        Self {
            workspace_dir: "data/workspaces".into(),
            workspace_quota_mb: 1024,
            web_fetch: WebFetchConfig::default(),
            web_search: WebSearchConfig::default(),
            http_request: HttpRequestConfig::default(),
            shell: ShellConfig::default(),
            files: FilesConfig::default(),
            send_message: SendMessageConfig::default(),
        }
    }
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct WebFetchConfig {
    pub enabled: bool,
    pub max_bytes: usize,
    pub timeout_secs: u64,
    pub max_redirects: usize,
}

impl Default for WebFetchConfig {
    fn default() -> Self {
        Self { enabled: true, max_bytes: 2_000_000, timeout_secs: 20, max_redirects: 5 }
    }
}

/// `[tools.web_search]`: the `web_search` tool and the search API it asks.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct WebSearchConfig {
    /// Unset: on exactly when a provider is chosen (so the tool is never offered without one).
    pub enabled: Option<bool>,
    pub provider: Option<SearchProvider>,
    /// The provider's API root. Trusted config: it may be on loopback or the LAN (a
    /// self-hosted SearXNG). Unset: the provider's public API (SearXNG has none).
    pub base_url: Option<String>,
    /// Brave's subscription token or Tavily's key; for SearXNG optional (sent as a Bearer token
    /// to an authenticating proxy in front of it).
    pub api_key: Option<Secret>,
    /// Results a search returns unless the call asks for another number (at most 20).
    pub max_results: usize,
    pub timeout_secs: u64,
    /// Searches a minute this process sends at most (a token bucket: a burst of this many).
    pub per_minute: u32,
}

impl Default for WebSearchConfig {
    fn default() -> Self {
        Self {
            enabled: None,
            provider: None,
            base_url: None,
            api_key: None,
            max_results: 5,
            timeout_secs: 15,
            per_minute: 30,
        }
    }
}

impl WebSearchConfig {
    /// Whether the tool is offered: `enabled`, or when unset, whether a provider is chosen.
    pub fn is_on(&self) -> bool {
        self.enabled.unwrap_or(self.provider.is_some())
    }

    /// `base_url`, else the provider's public API; None for SearXNG without one.
    pub fn endpoint(&self) -> Option<&str> {
        self.base_url.as_deref().filter(|u| !u.trim().is_empty()).or(self.provider?.default_base_url())
    }
}

/// `[tools.web_search] provider`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchProvider {
    /// A SearXNG instance's JSON API (`/search?format=json`), usually self-hosted.
    Searxng,
    /// The Brave Search API (`/web/search`, `X-Subscription-Token`).
    Brave,
    /// The Tavily search API (`POST /search`, Bearer key).
    Tavily,
}

impl SearchProvider {
    /// The name people know it by, for messages.
    pub fn label(self) -> &'static str {
        match self {
            Self::Searxng => "SearXNG",
            Self::Brave => "Brave",
            Self::Tavily => "Tavily",
        }
    }

    /// The public API root, when the provider has one.
    pub fn default_base_url(self) -> Option<&'static str> {
        match self {
            Self::Searxng => None,
            Self::Brave => Some("https://api.search.brave.com/res/v1"),
            Self::Tavily => Some("https://api.tavily.com"),
        }
    }
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct HttpRequestConfig {
    /// Host names (`api.github.com`, `*.example.com`) the tool may call; none means the tool is off.
    pub allowed_hosts: Vec<String>,
    pub max_bytes: usize,
    pub timeout_secs: u64,
    /// Lets allowed hosts resolve to loopback or private-network addresses (a service on your
    /// LAN). Link-local and cloud metadata addresses stay refused either way.
    pub allow_private_addresses: bool,
}

impl Default for HttpRequestConfig {
    fn default() -> Self {
        Self { allowed_hosts: Vec::new(), max_bytes: 2_000_000, timeout_secs: 20, allow_private_addresses: false }
    }
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ShellConfig {
    /// Off unless set: commands run in the user's workspace, always asking unless full_auto.
    pub enabled: bool,
    pub timeout_secs: u64,
    pub max_output_bytes: usize,
    /// How commands are isolated from Butler: `bwrap` (bubblewrap namespaces; Butler refuses to
    /// start when it is missing) or `none` (only the cleared environment).
    pub sandbox: SandboxMode,
    /// Lets sandboxed commands use the network (off: a network namespace with nothing in it).
    pub network: bool,
    /// Live processes one command may have, itself included (more: all of them are killed).
    pub max_processes: u32,
    /// Writable memory of each process of a command, in MiB.
    pub max_memory_mb: u64,
    /// CPU time of each process of a command, in seconds.
    pub max_cpu_secs: u64,
}

impl Default for ShellConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            timeout_secs: 30,
            max_output_bytes: 64 * 1024,
            sandbox: SandboxMode::Bwrap,
            network: false,
            max_processes: 64,
            max_memory_mb: 1024,
            max_cpu_secs: 60,
        }
    }
}

/// `[tools.shell] sandbox`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxMode {
    /// bubblewrap: own PID, mount, IPC, UTS and (unless `network`) network namespaces.
    #[default]
    Bwrap,
    /// No isolation beyond the cleared environment; must be chosen explicitly.
    None,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct FilesConfig {
    pub enabled: bool,
    pub max_read_bytes: usize,
    pub max_write_bytes: usize,
}

impl Default for FilesConfig {
    fn default() -> Self {
        Self { enabled: true, max_read_bytes: 1_000_000, max_write_bytes: 1_000_000 }
    }
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct SendMessageConfig {
    /// Conversations the agent may post to (`telegram:-100123`, `slack:C024BE91L`, `web:team`).
    pub targets: Vec<ConversationRef>,
}
