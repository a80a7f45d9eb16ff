//! The web page's usage panel and the owner's status page, put together from the running parts
//! (the composition root's job: only it holds them all).
//!
//! Wiring only: it must never hold logic of its own.

use crate::config::Config;
use crate::llm::Tiers;
use crate::store::Store;
use std::sync::Arc;

/// The panels' sources: usage from the ledger, the status page from the parts (`channels`:
/// the names of the channels running).
pub(super) fn panels(
    cfg: &Config,
    store: &Arc<dyn Store>,
    tiers: &Tiers,
    mcp: &Arc<crate::mcp::McpManager>,
    channels: Vec<String>,
) -> crate::web::Panels {
    let usage = crate::usage::Usage::new(store.clone(), tiers.prices().clone(), &cfg.limits);
    let status = crate::status::Status::new(crate::status::StatusParts {
        config: Arc::new(cfg.clone()),
        prices: tiers.prices().clone(),
        mcp: mcp.clone(),
        skills: Arc::new(crate::skills::skills(cfg)),
        channels,
        schedules: store.clone(),
        usage: usage.clone(),
    });
    crate::web::Panels { usage, status: Arc::new(status), default_zone: cfg.agent.timezone.clone() }
}
