//! `butler memory export --user ID` (JSON on stdout) and `butler memory import --user ID FILE`:
//! one user's memories, on the store directly. `ID` is a user id or an identity (`web:alice`).
//! `butler memory reembed`: embeds every memory and transcript message that has no vector of
//! the configured model, here and now, showing progress (a bar on a terminal).

use super::exit;
use crate::config::Config;
use crate::config::EmbeddingsConfig;
use crate::memory::embed::{EmbedWorker, Embedder};
use crate::memory::{export_user, import_user, MemoryFile};
use crate::store::{EmbedProgress, EmbedQueueStore, UserStore};
use butler_channel::Identity;
use clap::Subcommand;
use std::process::ExitCode;
use std::sync::Arc;

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
    /// Embed every memory and transcript message without a vector of [memory.embeddings] model
    /// (after a change of model, or to catch up), showing progress
    Reembed,
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
    let embeddings = cfg.memory.embeddings.as_ref().filter(|_| cfg.memory.enabled);
    // What this command writes is queued for embedding like what `serve` writes.
    store.embed_track(embeddings.map(|e| e.model.trim())).await.map_err(|e| exit::fail(1, e))?;
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
        MemoryCommand::Reembed => {
            let Some(e) = embeddings else {
                return Err(exit::fail(
                    2,
                    "[memory.embeddings] is not configured (or [memory] enabled is false): add base_url and model \
                     to embed memories",
                ));
            };
            let result = reembed(store.clone(), e).await;
            store.close().await;
            return result;
        }
    }
    store.close().await;
    Ok(ExitCode::SUCCESS)
}

/// Queues what lacks a vector of the model and embeds it batch by batch, reporting progress;
/// exit 1 when the service keeps failing (what is left stays queued for `serve`).
async fn reembed(store: Arc<dyn EmbedQueueStore>, cfg: &EmbeddingsConfig) -> Result<ExitCode, ExitCode> {
    let embedder = Arc::new(Embedder::new(cfg));
    let model = embedder.model().to_string();
    let queued = store.embed_backfill(&model, true).await.map_err(|e| exit::fail(1, e))?;
    let worker = EmbedWorker::new(store.clone(), embedder);
    let bar = Progress::new();
    let mut failures = 0;
    loop {
        let progress = store.embed_progress(&model).await.map_err(|e| exit::fail(1, e))?;
        bar.show(&progress);
        if progress.queued == 0 {
            break;
        }
        let batch = worker.step().await.map_err(|e| exit::fail(1, e))?;
        if batch.stored > 0 {
            failures = 0;
        } else if batch.failed > 0 || batch.taken == 0 {
            failures += 1;
            if failures >= 5 {
                bar.done();
                let why = batch.error.unwrap_or_else(|| "the texts left are waiting for a later try".into());
                return Err(exit::fail(
                    1,
                    format!("{why}; {} texts are still queued (`butler serve` keeps trying)", progress.queued),
                ));
            }
            tokio::time::sleep(std::time::Duration::from_millis(500 * failures)).await;
        }
    }
    bar.done();
    let p = store.embed_progress(&model).await.map_err(|e| exit::fail(1, e))?;
    println!(
        "embedded with {model}: {}/{} memories and {} transcript messages have vectors ({queued} were queued)",
        p.memories_embedded, p.memories, p.messages_embedded
    );
    Ok(ExitCode::SUCCESS)
}

/// Progress on stderr: a redrawn bar on a terminal, else a line per step.
struct Progress {
    tty: bool,
}

impl Progress {
    fn new() -> Self {
        use std::io::IsTerminal;
        Self { tty: std::io::stderr().is_terminal() }
    }

    fn show(&self, p: &EmbedProgress) {
        let done = p.memories_embedded + p.messages_embedded;
        let total = (done + p.queued).max(1);
        let line = format!("{done}/{total} texts embedded, {} waiting ({} failing)", p.queued, p.failing);
        if self.tty {
            let filled = (done * 30 / total) as usize;
            eprint!("\r[{}{}] {:>3}% {line}   ", "#".repeat(filled), ".".repeat(30 - filled), done * 100 / total);
        } else {
            eprintln!("reembed: {line}");
        }
    }

    fn done(&self) {
        if self.tty {
            eprintln!();
        }
    }
}
