//! `butler inbox list [--failed]|retry ID`: looking at stored inbound events and giving a failed
//! one (a dead letter) another set of tries, straight on the store (a running Butler picks a
//! retried event up within a second).
//!
//! This must never print an event's text (it may be private): only ids, channels, statuses,
//! tries and errors.

use super::exit;
use crate::config::Config;
use crate::store::InboxStatus;
use clap::Subcommand;
use std::process::ExitCode;

#[derive(Subcommand, Debug)]
pub enum InboxCommand {
    /// Stored inbound events, newest first
    List {
        /// Only events given up on after [limits] max_event_attempts tries
        #[arg(long)]
        failed: bool,
        /// How many events to show
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
    /// Give a failed event another [limits] max_event_attempts tries
    Retry { id: String },
}

pub async fn run(cfg: Config, cmd: InboxCommand) -> Result<ExitCode, ExitCode> {
    let store = crate::store::connect(cfg.database.url.expose(), 2).await.map_err(|e| exit::fail(1, e))?;
    store.migrate().await.map_err(|e| exit::fail(1, e))?;
    let code = match cmd {
        InboxCommand::List { failed, limit } => {
            let status = failed.then_some(InboxStatus::Failed);
            let rows = store.inbox_list(status, limit).await.map_err(|e| exit::fail(1, e))?;
            if rows.is_empty() {
                println!("{}", if failed { "no failed events" } else { "no events" });
            }
            for r in rows {
                let error = r.error.map(|e| format!("  {e}")).unwrap_or_default();
                println!(
                    "{}  {}  {}  tries {}  {}{error}",
                    r.event.id,
                    r.event.conversation,
                    r.status.as_str(),
                    r.attempts,
                    r.event.actor.identity
                );
            }
            ExitCode::SUCCESS
        }
        InboxCommand::Retry { id } => match store.inbox_requeue(&id).await.map_err(|e| exit::fail(1, e))? {
            true => {
                println!("{id} will be tried again");
                ExitCode::SUCCESS
            }
            false => exit::fail(1, format!("no failed event `{id}`; see butler inbox list --failed")),
        },
    };
    store.close().await;
    Ok(code)
}
