//! The `butler` command line: serve, chat, migrate, doctor, config check, usage and the rest.
//!
//! Each command prints errors that name what is wrong and what to do, and returns an exit code
//! (0 success, 1 a check or run failed, 2 bad usage or configuration). Only this module and
//! `main` may print to the terminal.

pub mod allocator;
mod audit;
mod backup;
mod chat;
mod doctor;
mod exit;
mod inbox;
mod init;
mod memory;
mod model;
mod pair;
mod render;
mod schedule;
pub mod security;
mod skills;
mod usage;

use crate::app::{App, AppOptions};
use crate::config;
use clap::{Parser, Subcommand};
use exit::{fail, load_config};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(name = "butler", version, about = "A personal AI assistant in the chat apps you already use")]
pub struct Cli {
    /// Config file (default: $BUTLER_CONFIG, else config/butler.toml if present, else
    /// ~/.config/butler/butler.toml if present, else built-in defaults)
    #[arg(long, global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Set Butler up: asks for the model and the channels, checks each answer, writes the config file
    Init,
    /// Run Butler: the HTTP server (web chat, API, health, metrics) and every configured channel
    Serve,
    /// Chat with Butler in this terminal, through the same pipeline and store (as `cli:local`)
    Chat,
    /// Apply database migrations and exit
    Migrate,
    /// Copy the SQLite database to PATH while Butler runs (Postgres: prints the pg_dump command)
    Backup {
        /// The new file to write
        path: PathBuf,
    },
    /// Put a backup from `butler backup` in place (stop Butler first) and migrate it forward
    Restore {
        /// The backup file
        path: PathBuf,
    },
    /// Check the config, the database, the model endpoint and each channel; exit 0 only if all pass
    Doctor,
    /// Configuration commands
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Permission decisions on tool calls, newest first
    Audit {
        /// How many rows to show
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
    /// Export or import a user's long-term memories (JSON)
    Memory {
        #[command(subcommand)]
        command: memory::MemoryCommand,
    },
    /// Stored inbound events: list them (`--failed`: the ones given up on) or retry a failed one
    Inbox {
        #[command(subcommand)]
        command: inbox::InboxCommand,
    },
    /// Pairing requests from people Butler does not know yet
    Pair {
        #[command(subcommand)]
        command: pair::PairCommand,
    },
    /// Scheduled jobs: list, add, remove, run now, or preview a cron expression's fire times
    Schedule {
        #[command(subcommand)]
        command: schedule::ScheduleCommand,
    },
    /// Skills the agent can load: list them, or show one (source, front matter, files, body)
    Skills {
        #[command(subcommand)]
        command: skills::SkillsCommand,
    },
    /// Check the deployment for known exposures (public without a token, open policy, no sandbox,
    /// secrets in the config file, readable files, link previews, writable skills) and say what
    /// to change; exit 1 when anything high or medium is found
    Security {
        #[command(subcommand)]
        command: SecurityCommand,
    },
    /// What the model calls cost today, this week and this month, by model, and the budgets
    Usage {
        /// One person's usage, by any account of theirs (CHANNEL:ID, e.g. telegram:12345); default: everyone's
        #[arg(long)]
        user: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
pub enum SecurityCommand {
    /// List what to change; `--json` for CI
    Audit {
        /// Print the findings as JSON (`{"ok", "findings": [{"id", "severity", "what", "fix"}]}`)
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand, Debug)]
pub enum ConfigCommand {
    /// Validate the config and print the effective values with secrets masked
    Check,
}

/// Parses arguments, runs the command, returns the process exit code.
pub async fn main() -> ExitCode {
    let cli = Cli::parse();
    // The terminal chat logs to a file once its config (and so its data dir) is known; serve
    // once its `[log]` section is.
    let _telemetry = if matches!(cli.command, Command::Chat | Command::Init | Command::Serve) {
        None
    } else {
        Some(init_tracing(&config::LogConfig::default(), None))
    };
    match run(cli).await {
        Ok(code) => code,
        Err(code) => code,
    }
}

/// Colour only for a terminal, and never with `NO_COLOR` set (https://no-color.org).
fn colour(is_terminal: bool) -> bool {
    is_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Logs to stderr, or to `file` (the terminal chat, which keeps stderr for the conversation),
/// as `[log]` says.
fn init_tracing(cfg: &config::LogConfig, file: Option<std::fs::File>) -> crate::telemetry::Telemetry {
    use crate::telemetry::Sink;
    use std::io::IsTerminal;
    let sink = match file {
        Some(file) => Sink::File(file),
        None => Sink::Stderr { colour: colour(std::io::stderr().is_terminal()) },
    };
    crate::telemetry::init(cfg, sink)
}

/// `<data dir>/logs/chat.log`, opened for appending, for the terminal chat's log lines.
fn chat_log(cfg: &config::Config) -> Option<(PathBuf, std::fs::File)> {
    let path = crate::skills::data_dir(cfg).join("logs").join("chat.log");
    std::fs::create_dir_all(path.parent()?).ok()?;
    let file = std::fs::OpenOptions::new().create(true).append(true).open(&path).ok()?;
    Some((path, file))
}

async fn run(cli: Cli) -> Result<ExitCode, ExitCode> {
    match cli.command {
        Command::Config { command: ConfigCommand::Check } => {
            let loaded = load_config(cli.config.as_deref())?;
            match &loaded.source {
                Some(p) => eprintln!("config: {} is valid", p.display()),
                None => eprintln!("config: no file found; using the built-in defaults"),
            }
            if !loaded.config.llm.model.trim().is_empty() {
                for e in crate::llm::PriceBook::from_config(&loaded.config.llm).unpriced() {
                    eprintln!("config: warning: {}", e.describe());
                }
            }
            for warning in crate::app::config_warnings(&loaded.config) {
                eprintln!("config: warning: {warning}");
            }
            print!("{}", loaded.config.to_masked_toml());
            Ok(ExitCode::SUCCESS)
        }
        Command::Migrate => {
            let cfg = load_config(cli.config.as_deref())?.config;
            let url = cfg.database.url.expose();
            let store = crate::store::connect(url, 2).await.map_err(|e| fail(1, e))?;
            store.migrate().await.map_err(|e| fail(1, e))?;
            store.close().await;
            println!("migrations applied to {}", crate::store::redact_url(url));
            Ok(ExitCode::SUCCESS)
        }
        Command::Doctor => {
            let ok = doctor::run(cli.config.as_deref()).await;
            Ok(if ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
        Command::Serve => {
            let loaded = load_config(cli.config.as_deref())?;
            let mut telemetry = init_tracing(&loaded.config.log, None);
            let code = serve(loaded).await;
            telemetry.flush();
            code
        }
        Command::Inbox { command } => inbox::run(load_config(cli.config.as_deref())?.config, command).await,
        Command::Pair { command } => pair::run(load_config(cli.config.as_deref())?.config, command).await,
        Command::Schedule { command } => schedule::run(cli.config.as_deref(), command).await,
        Command::Skills { command } => skills::run(load_config(cli.config.as_deref())?.config, command),
        Command::Memory { command } => memory::run(load_config(cli.config.as_deref())?.config, command).await,
        Command::Backup { path } => backup::backup(load_config(cli.config.as_deref())?.config, &path).await,
        Command::Restore { path } => backup::restore(load_config(cli.config.as_deref())?.config, &path).await,
        Command::Audit { limit } => audit::run(load_config(cli.config.as_deref())?.config, limit).await,
        Command::Security { command: SecurityCommand::Audit { json } } => {
            let loaded = load_config(cli.config.as_deref())?;
            let clean = security::run(&loaded.config, loaded.source.as_deref(), json);
            Ok(if clean { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
        Command::Usage { user } => usage::run(load_config(cli.config.as_deref())?.config, user).await,
        Command::Chat => {
            let loaded = load_config(cli.config.as_deref())?;
            let mut _telemetry = None;
            let log = match chat_log(&loaded.config) {
                Some((path, file)) => {
                    _telemetry = Some(init_tracing(&loaded.config.log, Some(file)));
                    Some(path)
                }
                None => None,
            };
            chat::run(loaded.config, loaded.source, log).await
        }
        Command::Init => init::run(cli.config.as_deref()).await,
    }
}

/// Makes what this process creates private to its user (umask 077): the data folder, the
/// database and its journals, workspaces, uploads, backups and logs hold secrets and people's
/// words.
pub fn private_files() {
    // SAFETY: umask only sets this process's file-creation mask; it cannot fail.
    unsafe {
        libc::umask(0o077);
    }
}

/// Marks this process non-dumpable: its /proc files (`environ` with the API keys, its memory,
/// its open files) become unreadable, and the process untraceable, for every other process of
/// the same user that lacks CAP_SYS_PTRACE - the shell commands, hooks and MCP servers Butler
/// starts included - and no core dump is written (it would hold the same secrets). The flag is
/// this process's own: a program Butler starts is dumpable again, and reads only itself.
pub fn private_process() {
    // SAFETY: PR_SET_DUMPABLE takes plain integers and changes only this process's flag.
    let done = unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
    if done != 0 {
        eprintln!("butler: warning: could not mark the process non-dumpable ({})", std::io::Error::last_os_error());
    }
}

/// Says which config file `serve` read and why, and warns about another one it did not read.
fn log_config_choice(loaded: &config::Loaded) {
    let why = loaded.chosen.describe();
    match &loaded.source {
        Some(file) => {
            let file = std::path::absolute(file).unwrap_or_else(|_| file.clone());
            tracing::info!(file = %file.display(), why, "config file {}: {why}", file.display())
        }
        None => tracing::info!(why, "built-in defaults and the environment: {why}"),
    }
    if let Some(other) = &loaded.ignored {
        tracing::warn!(
            ignored = %other.display(),
            "{} is a config file too and is not read; remove it, or name the file to use with --config",
            other.display()
        );
    }
}

async fn serve(loaded: config::Loaded) -> Result<ExitCode, ExitCode> {
    log_config_choice(&loaded);
    let allocator = allocator::described();
    tracing::info!(allocator, "memory allocator: {allocator}");
    let database = crate::store::redact_url(loaded.config.database.url.expose());
    tracing::info!(database = %database, "using the database {database}");
    if let Some(problem) = model::setup_problem(&loaded.config.llm).await {
        tracing::warn!("{problem}");
    }
    if let Some(warning) = model::points_at_butler(&loaded.config) {
        tracing::warn!("{warning}");
    }
    let mut opts = AppOptions::serve(loaded.config);
    opts.config_path = loaded.source;
    let app = App::start(opts).await.map_err(|e| fail(1, e))?;
    if let Some(addr) = app.addr {
        tracing::info!(%addr, "Butler is ready: open http://{addr}");
    }
    shutdown_signal().await;
    app.shutdown().await;
    Ok(ExitCode::SUCCESS)
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}
