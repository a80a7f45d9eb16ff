//! What the status page shows ([`StatusReport`], served as JSON) and where each fact comes from
//! ([`Status`], built once by the composition root from the running parts).
//!
//! Read only: it must never change a part it reports on, and never show a secret.

use crate::config::Config;
use crate::llm::PriceBook;
use crate::mcp::McpManager;
use crate::metrics::METRICS;
use crate::skills::Skills;
use crate::store::{ScheduleFilter, ScheduleStore, StoreError};
use crate::usage::{PeriodUsage, Usage};
use serde::Serialize;
use std::sync::Arc;

/// The running parts the page reads.
pub struct StatusParts {
    pub config: Arc<Config>,
    pub prices: Arc<PriceBook>,
    pub mcp: Arc<McpManager>,
    pub skills: Arc<Skills>,
    /// The platform channels running (and `web`).
    pub channels: Vec<String>,
    pub schedules: Arc<dyn ScheduleStore>,
    pub usage: Usage,
}

/// The status page's source.
pub struct Status {
    parts: StatusParts,
    started_ms: i64,
}

#[derive(Debug, Serialize)]
pub struct ModelLine {
    /// `main` or a tier's name.
    pub tier: String,
    pub provider: String,
    pub model: String,
    /// The endpoint's scheme, host and port (never a path with a key, never credentials).
    pub endpoint: String,
}

#[derive(Debug, Serialize)]
pub struct ChannelLine {
    pub name: String,
    pub state: &'static str,
    pub sent: u64,
    pub retried: u64,
    pub failed: u64,
}

#[derive(Debug, Serialize)]
pub struct ServerLine {
    pub name: String,
    pub state: String,
    pub tools: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct ScheduleLine {
    pub id: i64,
    pub name: String,
    pub owner: String,
    /// `cron 0 8 * * *` or `once`.
    pub when: String,
    pub tz: String,
    pub paused: bool,
    pub next_fire_ms: Option<i64>,
}

#[derive(Debug, Serialize)]
pub struct StatusReport {
    pub version: &'static str,
    pub started_ms: i64,
    pub models: Vec<ModelLine>,
    /// One line per configured model: its prices and where they come from.
    pub prices: Vec<String>,
    pub unpriced: Vec<String>,
    pub channels: Vec<ChannelLine>,
    pub mcp: Vec<ServerLine>,
    pub skills: Vec<String>,
    pub schedules: Vec<ScheduleLine>,
    /// Everyone's spend today (in the owner's zone), by model.
    pub today: Option<PeriodUsage>,
    pub max_usd_per_turn: Option<f64>,
    pub max_usd_per_day: Option<f64>,
    pub data_dir: String,
    /// `sqlite` or `postgres`, and the URL without its password.
    pub database: String,
}

/// `scheme://host:port` of a URL, without user, password, path or query.
fn endpoint(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return String::new() };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = authority.rsplit('@').next().unwrap_or_default();
    format!("{scheme}://{host}")
}

impl Status {
    pub fn new(parts: StatusParts) -> Self {
        Self { parts, started_ms: crate::clock::now_ms() }
    }

    fn models(&self) -> Vec<ModelLine> {
        let llm = &self.parts.config.llm;
        let line = |tier: &str, cfg: &crate::config::LlmConfig| ModelLine {
            tier: tier.to_string(),
            provider: crate::llm::provider_name(cfg.provider).to_string(),
            model: cfg.model.clone(),
            endpoint: endpoint(&crate::llm::base_url(cfg)),
        };
        let mut out = vec![line("main", llm)];
        out.extend(llm.tiers.keys().filter_map(|name| llm.tier(name).map(|t| line(name, &t))));
        out
    }

    fn channels(&self) -> Vec<ChannelLine> {
        self.parts
            .channels
            .iter()
            .map(|name| ChannelLine {
                name: name.clone(),
                state: "running",
                sent: METRICS.deliveries.get(&[name, "sent"]),
                retried: METRICS.deliveries.get(&[name, "retried"]),
                failed: METRICS.deliveries.get(&[name, "failed"]),
            })
            .collect()
    }

    /// The page now; periods and times in `zone` (the owner's).
    pub async fn report(&self, zone: &str) -> Result<StatusReport, StoreError> {
        let now = crate::clock::now_ms();
        let usage = self.parts.usage.report_for(None, zone, now).await?;
        let schedules = self.parts.schedules.schedules_list(&ScheduleFilter::All).await?;
        let cfg = &self.parts.config;
        let mcp = self
            .parts
            .mcp
            .report()
            .into_iter()
            .map(|s| ServerLine { name: s.name, state: crate::mcp::report::status_words(&s.status), tools: s.tools })
            .collect();
        let mut skills: Vec<String> = self.parts.skills.current().names().into_iter().map(str::to_string).collect();
        skills.sort();
        let url = cfg.database.url.expose();
        Ok(StatusReport {
            version: env!("CARGO_PKG_VERSION"),
            started_ms: self.started_ms,
            models: if cfg.llm.model.is_empty() { Vec::new() } else { self.models() },
            prices: self.parts.prices.endpoints().iter().map(|e| e.describe()).collect(),
            unpriced: self.parts.prices.unpriced().map(|e| e.model.clone()).collect(),
            channels: self.channels(),
            mcp,
            skills,
            schedules: schedules
                .into_iter()
                .map(|s| ScheduleLine {
                    id: s.id,
                    name: s.name,
                    owner: s.owner,
                    when: s.cron.map_or_else(|| "once".to_string(), |c| format!("cron {c}")),
                    tz: s.tz,
                    paused: s.paused,
                    next_fire_ms: s.next_fire_ms,
                })
                .collect(),
            today: usage.periods.into_iter().next(),
            max_usd_per_turn: usage.max_usd_per_turn,
            max_usd_per_day: usage.max_usd_per_day,
            data_dir: crate::skills::data_dir(cfg).display().to_string(),
            database: format!(
                "{} {}",
                if url.starts_with("sqlite") { "sqlite" } else { "postgres" },
                crate::config::redact_url(url)
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn endpoints_never_carry_credentials_or_paths() {
        let cases = [
            ("https://api.openai.com/v1", "https://api.openai.com"),
            ("http://user:pw@127.0.0.1:11434/v1?key=abc", "http://127.0.0.1:11434"),
            ("not a url", ""),
        ];
        for (url, want) in cases {
            assert_eq!(super::endpoint(url), want, "{url}");
        }
    }
}
