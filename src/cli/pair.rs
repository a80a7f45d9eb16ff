//! `butler pair list|approve CODE|deny CODE|owner`: answering pairing requests from the shell,
//! straight on the store (Butler need not be running; a running Butler sees the result at once),
//! and the owner code that makes your own chat account you (`butler init` prints one too).

use super::exit;
use crate::config::Config;
use crate::store::{now_ms, CodeKind};
use crate::triage::access::{approve_pairing, approved_earlier, deny_pairing, owner_code, OWNER_CODE_TTL};
use clap::Subcommand;
use std::process::ExitCode;

#[derive(Subcommand, Debug)]
pub enum PairCommand {
    /// Pairing requests waiting for approval
    List,
    /// Let the person who got this code talk to Butler (as a member)
    Approve { code: String },
    /// Decline a request
    Deny { code: String },
    /// A one-time code: send `/link CODE` to Butler from your own chat account and that account
    /// becomes you, the owner (the same person as this terminal and the local web page)
    Owner,
}

/// Makes an owner code on `store` and says what to do with it.
pub(super) async fn print_owner_code(
    stores: (&dyn crate::store::UserStore, &dyn crate::store::AccessStore),
    timezone: &str,
) -> Result<(), String> {
    let code = owner_code(stores, timezone).await.map_err(|e| e.to_string())?;
    let days = OWNER_CODE_TTL.as_secs() / 86_400;
    println!(
        "  you are the owner: send `/link {code}` to your bot from your own account (within {days} days); that \
         account becomes you, the same person as this terminal and the local web page"
    );
    Ok(())
}

pub async fn run(cfg: Config, cmd: PairCommand) -> Result<ExitCode, ExitCode> {
    let store = crate::store::connect(cfg.database.url.expose(), 2).await.map_err(|e| exit::fail(1, e))?;
    store.migrate().await.map_err(|e| exit::fail(1, e))?;
    let code = match cmd {
        PairCommand::List => {
            let codes = store.codes_live(CodeKind::Pair, now_ms()).await.map_err(|e| exit::fail(1, e))?;
            if codes.is_empty() {
                println!("no pairing requests are waiting");
            }
            for c in codes {
                let left = (c.expires_ms - now_ms()).max(0) / 60_000;
                let name = c.display_name.map(|n| format!(" ({n})")).unwrap_or_default();
                println!("{}  {}{name}  expires in {left} min", c.code, c.identity);
            }
            ExitCode::SUCCESS
        }
        PairCommand::Approve { code } => {
            match approve_pairing((&*store, &*store, &*store), &code, &cfg.agent.timezone).await {
                Ok(Some((row, user))) => {
                    println!("approved {} (user {}, role {})", row.identity, user.id, user.role.as_str());
                    ExitCode::SUCCESS
                }
                Ok(None) => match approved_earlier(&*store, &code).await {
                    Ok(Some(who)) => {
                        println!("{code} was already approved: {who} is in");
                        ExitCode::SUCCESS
                    }
                    _ => {
                        eprintln!("error: no waiting request has the code {code}; `butler pair list` shows them (codes expire after an hour)");
                        ExitCode::from(1)
                    }
                },
                Err(e) => exit::fail(1, e),
            }
        }
        PairCommand::Deny { code } => match deny_pairing(&*store, &code).await {
            Ok(Some(row)) => {
                println!("declined {}", row.identity);
                ExitCode::SUCCESS
            }
            Ok(None) => {
                eprintln!("error: no waiting request has the code {code}; `butler pair list` shows them");
                ExitCode::from(1)
            }
            Err(e) => exit::fail(1, e),
        },
        PairCommand::Owner => match print_owner_code((&*store, &*store), &cfg.agent.timezone).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => exit::fail(1, e),
        },
    };
    store.close().await;
    Ok(code)
}
