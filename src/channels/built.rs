//! What building a platform channel yields: the adapters and their routes ([`Built`]), the error
//! when one cannot start ([`BuildError`]), and one `butler doctor` line ([`Check`]).
//!
//! Plain data shared by the per-platform glue files, and [`section_table`], a typed section
//! back into config's raw table. It must never name a channel crate.

use crate::config::Secret;
use butler_channel::{Channel, FileSource};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The platform channels the config asks for, and their HTTP routes.
#[derive(Default)]
pub struct Built {
    pub channels: Vec<Arc<dyn Channel>>,
    /// Webhook and interactivity endpoints, merged into Butler's one HTTP server.
    pub routes: axum::Router,
    /// How each channel fetches the files people attach, by channel name.
    pub files: BTreeMap<String, Arc<dyn FileSource>>,
}

/// A channel that could not be started (bad credentials, a platform that refused a call).
#[derive(Debug, thiserror::Error)]
#[error("the {channel} channel cannot start: {message}")]
pub struct BuildError {
    pub channel: &'static str,
    pub message: String,
}

/// One `butler doctor` line: what was checked, and either what is fine or (problem, fix).
pub type Check = (String, Result<String, (String, String)>);

/// `section` as a `[channels.<name>]` table, secrets included (for code and tests that build a
/// config from a typed section; `Secret` prints masked, so serde alone would lose them).
pub fn section_table(section: &impl serde::Serialize, secrets: &[(&str, Option<&Secret>)]) -> toml::Table {
    let mut table = match toml::Value::try_from(section) {
        Ok(toml::Value::Table(table)) => table,
        _ => toml::Table::new(),
    };
    for (key, secret) in secrets {
        if let Some(secret) = secret {
            table.insert((*key).to_string(), toml::Value::String(secret.expose().to_string()));
        }
    }
    table
}
