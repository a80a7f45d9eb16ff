//! `butler backup PATH` and `butler restore PATH`: the SQLite database copied while Butler runs
//! and put back while it does not; for Postgres both say which `pg_dump` / `pg_restore`
//! commands to use. The workspaces (`[tools] workspace_dir`) are files: copy that folder too.
//!
//! Must never print the database URL's password.

use super::exit::fail;
use crate::config::Config;
use crate::store::backup as copies;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

pub async fn backup(cfg: Config, dest: &Path) -> Result<ExitCode, ExitCode> {
    let info = copies::backup(cfg.database.url.expose(), dest).await.map_err(|e| fail(1, e))?;
    println!(
        "backup: wrote {} ({} bytes, schema version {}); the workspaces are in {}: copy that folder too",
        dest.display(),
        info.bytes,
        info.schema_version,
        cfg.tools.workspace_dir
    );
    Ok(ExitCode::SUCCESS)
}

pub async fn restore(cfg: Config, src: &Path) -> Result<ExitCode, ExitCode> {
    let url = cfg.database.url.expose();
    if !url.starts_with("postgres") {
        if let Some(addr) = running(&cfg.server.listen).await {
            return Err(fail(1, format!("Butler is running (it answers at {addr}): stop it, then restore")));
        }
    }
    let info = copies::restore(url, src).await.map_err(|e| fail(1, e))?;
    let kept = match &info.kept {
        Some(p) => format!("; the database it replaced is kept as {}", p.display()),
        None => String::new(),
    };
    println!(
        "restore: {} is in place (schema version {} migrated to {}){kept}",
        src.display(),
        info.from_version,
        info.to_version
    );
    Ok(ExitCode::SUCCESS)
}

/// The health URL of a Butler answering at `listen` (any interface is asked on loopback).
async fn running(listen: &str) -> Option<String> {
    let port = listen.rsplit(':').next()?;
    let host = listen.rsplit_once(':').map(|(h, _)| h).filter(|h| !h.is_empty() && *h != "0.0.0.0" && *h != "[::]");
    let url = format!("http://{}:{port}/healthz", host.unwrap_or("127.0.0.1"));
    let client = reqwest::Client::builder().timeout(Duration::from_secs(2)).build().ok()?;
    let answered = client.get(&url).send().await.ok()?.status().is_success();
    answered.then_some(url)
}
