//! `butler usage`: what the model calls cost today, this week and this month, by model, for
//! everyone (the default) or one person (`--user CHANNEL:ID`, any account of theirs), with the budgets; the same report as
//! `/usage` in a chat and the web page's usage panel. Reads the store directly; never writes.

use super::exit;
use crate::config::Config;
use std::process::ExitCode;
use std::sync::Arc;

pub async fn run(cfg: Config, user: Option<String>) -> Result<ExitCode, ExitCode> {
    let store = crate::store::connect(cfg.database.url.expose(), 2).await.map_err(|e| exit::fail(1, e))?;
    store.migrate().await.map_err(|e| exit::fail(1, e))?;
    let prices = Arc::new(crate::llm::PriceBook::from_config(&cfg.llm));
    let usage = crate::usage::Usage::new(store.clone(), prices, &cfg.limits);
    let now = crate::clock::now_ms();
    let report = match user {
        None => usage.report_for(None, &cfg.agent.timezone, now).await,
        Some(account) => {
            let identity: butler_channel::Identity = account.parse().map_err(|_| {
                exit::fail(
                    2,
                    format!("`{account}` is not an account: write CHANNEL:ID, e.g. telegram:12345 or web:local"),
                )
            })?;
            let found = store.identity_user(&identity).await.map_err(|e| exit::fail(1, e))?;
            let Some(person) = found else {
                store.close().await;
                return Err(exit::fail(
                    2,
                    format!("nobody uses the account `{account}` (`/whoami` in a chat shows yours)"),
                ));
            };
            usage.report(&person, now).await
        }
    }
    .map_err(|e| exit::fail(1, e))?;
    println!("{}", crate::usage::render(&report).replace("**", ""));
    store.close().await;
    Ok(ExitCode::SUCCESS)
}
