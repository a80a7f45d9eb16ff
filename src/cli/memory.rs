//! `butler memory export --user ID` (JSON on stdout) and `butler memory import --user ID FILE`:
//! one user's memories, on the store directly. `ID` is a user id or an identity (`web:alice`).

use super::exit;
use crate::config::Config;
use crate::memory::{export_user, import_user, MemoryFile};
use crate::store::UserStore;
use butler_channel::Identity;
use clap::Subcommand;
use std::process::ExitCode;

#[derive(Subcommand, Debug)]
pub enum MemoryCommand {
    /// Print a user's memories as JSON
    Export {
        /// A user id, or an identity such as telegram:123456789
        #[arg(long)]
        user: String,
        /// Group scopes to include too (`group:<conversation>`); the personal scope always is
        #[arg(long = "scope")]
        scopes: Vec<String>,
    },
    /// Add memories from a JSON file made by `export` (texts already there are skipped)
    Import {
        #[arg(long)]
        user: String,
        file: std::path::PathBuf,
    },
}

/// The user id behind `who` (an identity is looked up; anything else is taken as a user id).
async fn user_id(store: &dyn UserStore, who: &str) -> Result<String, ExitCode> {
    match who.parse::<Identity>() {
        Ok(identity) => match store.identity_user(&identity).await.map_err(|e| exit::fail(1, e))? {
            Some(user) => Ok(user.id),
            None => Err(exit::fail(1, format!("no user has the identity {who}; check `--user`"))),
        },
        Err(_) => Ok(who.to_string()),
    }
}

pub async fn run(cfg: Config, cmd: MemoryCommand) -> Result<ExitCode, ExitCode> {
    let store = crate::store::connect(cfg.database.url.expose(), 2).await.map_err(|e| exit::fail(1, e))?;
    store.migrate().await.map_err(|e| exit::fail(1, e))?;
    match cmd {
        MemoryCommand::Export { user, scopes } => {
            let id = user_id(&*store, &user).await?;
            let file = export_user(&*store, &id, &scopes).await.map_err(|e| exit::fail(1, e))?;
            println!("{}", serde_json::to_string_pretty(&file).unwrap_or_default());
        }
        MemoryCommand::Import { user, file } => {
            let id = user_id(&*store, &user).await?;
            let text = std::fs::read_to_string(&file)
                .map_err(|e| exit::fail(2, format!("cannot read {}: {e}", file.display())))?;
            let parsed: MemoryFile = serde_json::from_str(&text).map_err(|e| {
                exit::fail(2, format!("{} is not a memory export (`butler memory export`): {e}", file.display()))
            })?;
            let (added, skipped) = import_user(&*store, &id, &parsed).await.map_err(|e| exit::fail(1, e))?;
            println!("imported {added} memories for {id} ({skipped} already there)");
        }
    }
    store.close().await;
    Ok(ExitCode::SUCCESS)
}
