//! `butler audit`: the permission decisions on tool calls, newest first (who, what tool, which
//! arguments hash, outcome, when). Reads the store directly; never shows arguments themselves.

use super::exit;
use crate::config::Config;
use std::process::ExitCode;

pub async fn run(cfg: Config, limit: usize) -> Result<ExitCode, ExitCode> {
    let store = crate::store::connect(cfg.database.url.expose(), 2).await.map_err(|e| exit::fail(1, e))?;
    store.migrate().await.map_err(|e| exit::fail(1, e))?;
    let rows = store.audit_recent(limit).await.map_err(|e| exit::fail(1, e))?;
    if rows.is_empty() {
        println!("no tool decisions recorded yet");
    }
    for r in rows {
        let when = chrono::DateTime::from_timestamp_millis(r.at_ms)
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
            .unwrap_or_default();
        let hash: String = r.args_hash.chars().take(12).collect();
        println!("{when}  {:<16}  {:<14}  {:<24}  args {hash}  {}", r.outcome, r.tool, r.actor, r.reason);
    }
    store.close().await;
    Ok(ExitCode::SUCCESS)
}
