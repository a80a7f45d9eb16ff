//! Which built-in tools a config turns on: builds the [`Tools`] registry a turn sees.
//!
//! It only composes the tools of [`super::builtin`]; it must never hold a tool's own logic, and
//! never register a tool its config section leaves off.

use super::{builtin, Tools};
use crate::config::Config;
use std::sync::Arc;

/// The built-in tools enabled by the config: `web_fetch` when enabled, `web_search` when on
/// (a provider chosen, or `enabled = true`), `http_get` and
/// `http_request` when `allowed_hosts` is not empty, `shell` only when enabled, the file
/// tools (with `send_file`) when enabled, `send_message` when it has targets, the memory tools and
/// `conversation_search` when `[memory] enabled`, and always the scheduled-job tools
/// (`schedule`, `schedules_list`).
pub fn builtin_tools(cfg: &Config, vault: &Arc<crate::secrets::Vault>) -> Tools {
    let mut t = Tools::default();
    t.add(Arc::new(builtin::Now::new()));
    if cfg.memory.enabled {
        for tool in builtin::memory_tools() {
            t.add(tool);
        }
        t.add(Arc::new(builtin::ConversationSearch::new()));
    }
    let tc = &cfg.tools;
    if tc.web_fetch.enabled {
        match builtin::WebFetch::new(&tc.web_fetch) {
            Ok(tool) => t.add(Arc::new(tool)),
            Err(e) => tracing::warn!(error = %e, "web_fetch is off"),
        }
    }
    if tc.web_search.is_on() {
        match builtin::WebSearch::new(&tc.web_search) {
            Ok(tool) => t.add(Arc::new(tool)),
            Err(e) => tracing::warn!(error = %e, "web_search is off"),
        }
    }
    if !tc.http_request.allowed_hosts.is_empty() {
        match builtin::http_tools(&tc.http_request, vault.clone()) {
            Ok(tools) => tools.into_iter().for_each(|tool| t.add(tool)),
            Err(e) => tracing::warn!(error = %e, "http_get and http_request are off"),
        }
    }
    if tc.shell.enabled {
        t.add(Arc::new(builtin::Shell::new(&tc.shell).with_quota(tc.workspace_quota_mb)));
    }
    if tc.files.enabled {
        builtin::file_tools(&tc.files, tc.workspace_quota_mb).into_iter().for_each(|tool| t.add(tool));
        t.add(Arc::new(builtin::SendFile::new()));
    }
    if !tc.send_message.targets.is_empty() {
        t.add(Arc::new(builtin::SendMessage::new(&tc.send_message)));
    }
    builtin::schedule_tools().into_iter().for_each(|tool| t.add(tool));
    t
}
