//! Loading the configuration: pick the file, parse the TOML, expand `${VAR}`, apply
//! `BUTLER_<SECTION>__<KEY>` overrides, deserialize (unknown keys are errors), fill the LLM from
//! `OPENAI_*` / `ANTHROPIC_*` / `BUTLER_MODEL` when the config leaves it unset, and validate.
//!
//! Order of precedence, lowest first: built-in defaults, the file, `${VAR}` inside the file,
//! `BUTLER_*__*` overrides, then (only for an LLM left entirely unset) the LLM variables.
//!
//! Everything here reads the environment through an [`Env`] snapshot, so tests never touch the
//! process environment or working directory. This module must never print, log or put into an
//! error the value of a variable or of a secret key.

mod deser;
mod env;
mod interpolate;
mod llm_env;
mod overrides;
mod paths;

use super::error::ConfigError;
use super::error::FileFrom;
use super::{Config, OwnerChecks};
pub use env::Env;
pub use llm_env::{DEFAULT_ANTHROPIC_MODEL, DEFAULT_OPENAI_MODEL};
pub use paths::{data_dir, user_config_file};
use std::path::{Path, PathBuf};

/// The file looked for when neither `--config` nor `BUTLER_CONFIG` names one.
pub const DEFAULT_PATH: &str = "config/butler.toml";

/// What [`load`] found: the effective configuration and the file it came from (`None` when no
/// file was used and everything is the embedded default plus the environment), why that file,
/// and another candidate file that exists but was not read.
#[derive(Debug)]
pub struct Loaded {
    pub config: Config,
    pub source: Option<PathBuf>,
    pub chosen: Chosen,
    /// A config file Butler would read were the chosen one absent: it is ignored.
    pub ignored: Option<PathBuf>,
}

/// Why the config file is the one in [`Loaded::source`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chosen {
    /// `butler --config PATH`.
    Flag,
    /// The `BUTLER_CONFIG` environment variable.
    EnvVar,
    /// `config/butler.toml` in the working directory.
    WorkingDir,
    /// The user's config file (`$XDG_CONFIG_HOME/butler/butler.toml` or `~/.config/butler/`).
    UserFile,
    /// No file: built-in defaults and the environment.
    NoFile,
}

impl Chosen {
    /// In words, for the start-up log.
    pub fn describe(self) -> &'static str {
        match self {
            Chosen::Flag => "named by --config",
            Chosen::EnvVar => "named by BUTLER_CONFIG",
            Chosen::WorkingDir => "config/butler.toml in the working directory (searched first)",
            Chosen::UserFile => "the user's config file (searched after config/butler.toml in the working directory)",
            Chosen::NoFile => "no config file found (config/butler.toml here, then the user's config file)",
        }
    }
}

/// Loads, checks and returns the configuration for this process: the file from `explicit`
/// (`--config`), else `BUTLER_CONFIG`, else `config/butler.toml` if it exists, else the user's
/// config file ([`user_config_file`]) if it exists, else none; relative paths are relative to
/// the working directory. Calls [`Config::validate_with`]
/// `owners` (the components' checks, `app::CONFIG_CHECKS`).
pub fn load(explicit: Option<&Path>, owners: &OwnerChecks<'_>) -> Result<Loaded, ConfigError> {
    load_checked(explicit, &Env::process(), Path::new(""), owners)
}

/// [`load`] with the environment and the directory relative paths start from given, for tests;
/// checks only the sections config owns ([`Config::validate`]).
pub fn load_from(explicit: Option<&Path>, env: &Env, base_dir: &Path) -> Result<Loaded, ConfigError> {
    load_checked(explicit, env, base_dir, &OwnerChecks::NONE)
}

fn load_checked(
    explicit: Option<&Path>,
    env: &Env,
    base_dir: &Path,
    owners: &OwnerChecks<'_>,
) -> Result<Loaded, ConfigError> {
    let (source, chosen, ignored) = choose_file(explicit, env, base_dir)?;
    let (text, origin) = match &source {
        Some(path) => {
            let text =
                std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: path.clone(), source })?;
            (text, path.display().to_string())
        }
        None => (String::new(), NO_FILE.to_string()),
    };
    let config = parse_str(&text, &origin, env)?;
    config.validate_with(owners).map_err(|e| with_origin(e, &origin))?;
    Ok(Loaded { config, source, chosen, ignored })
}

/// What error messages say instead of a file name when no file is used.
pub const NO_FILE: &str = "built-in defaults (no config file)";

/// Which file to read: `explicit`, else `BUTLER_CONFIG` (empty counts as unset), else
/// `config/butler.toml` under `base_dir` if it exists, else the user's config file
/// (`$XDG_CONFIG_HOME/butler/butler.toml`, else `~/.config/butler/butler.toml`) if it exists,
/// else `None`. A named file that does not exist is an error naming it.
pub fn select_file(explicit: Option<&Path>, env: &Env, base_dir: &Path) -> Result<Option<PathBuf>, ConfigError> {
    Ok(choose_file(explicit, env, base_dir)?.0)
}

/// [`select_file`] with why, and the first other candidate that exists (the working
/// directory's `config/butler.toml`, then the user's config file) and is therefore ignored.
fn choose_file(
    explicit: Option<&Path>,
    env: &Env,
    base_dir: &Path,
) -> Result<(Option<PathBuf>, Chosen, Option<PathBuf>), ConfigError> {
    let named = match explicit {
        Some(p) => Some((p.to_path_buf(), FileFrom::Flag, Chosen::Flag)),
        None => env.non_empty("BUTLER_CONFIG").map(|p| (PathBuf::from(p), FileFrom::EnvVar, Chosen::EnvVar)),
    };
    let candidates: Vec<(PathBuf, Chosen)> =
        [(Some(base_dir.join(DEFAULT_PATH)), Chosen::WorkingDir), (user_config_file(env), Chosen::UserFile)]
            .into_iter()
            .filter_map(|(p, why)| p.filter(|p| p.is_file()).map(|p| (p, why)))
            .collect();
    let other = |chosen: &Path| candidates.iter().map(|(p, _)| p).find(|p| !same_file(p, chosen)).cloned();
    if let Some((path, from, chosen)) = named {
        let path = base_dir.join(path);
        if !path.exists() {
            return Err(ConfigError::NotFound { path, from });
        }
        let ignored = other(&path);
        return Ok((Some(path), chosen, ignored));
    }
    match candidates.first() {
        Some((path, chosen)) => Ok((Some(path.clone()), *chosen, other(path))),
        None => Ok((None, Chosen::NoFile, None)),
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// Parses `text` (the contents of `origin`, used in messages) into a [`Config`]: TOML, then
/// `${VAR}`, then `BUTLER_<SECTION>__<KEY>` overrides from `env`, then deserialization, then the
/// LLM environment defaults. Does not validate; [`load_from`] does.
///
/// LLM environment defaults, used only when `llm.model`, `llm.api_key` and `llm.base_url` are
/// all unset after the file and the overrides:
/// - `OPENAI_API_KEY` and/or `OPENAI_BASE_URL` set: provider `openai` with those; the model is
///   `BUTLER_MODEL`, else [`DEFAULT_OPENAI_MODEL`] when a key is set, else empty (a local server
///   with `OPENAI_BASE_URL` needs `BUTLER_MODEL`);
/// - else `ANTHROPIC_API_KEY` and/or `ANTHROPIC_BASE_URL`: provider `anthropic`, model
///   `BUTLER_MODEL`, else [`DEFAULT_ANTHROPIC_MODEL`] when a key is set.
///
/// Empty variables count as unset; when the file (or an override) sets `llm.provider`, only
/// that provider's variables are used; `BUTLER_MODEL` alone configures nothing, but it names
/// the model of an endpoint the file or an override set without one (`BUTLER_LLM__BASE_URL`).
///
/// `[database] url` and `[tools] workspace_dir`, when neither the file nor an override sets
/// them, go under the data dir ([`data_dir`]: `BUTLER_DATA_DIR`, else the user's data folder).
pub fn parse_str(text: &str, origin: &str, env: &Env) -> Result<Config, ConfigError> {
    let mut table: toml::Table = text.parse().map_err(|e: toml::de::Error| syntax_error(text, origin, &e))?;
    interpolate::expand_table(&mut table, origin, env)?;
    let applied = overrides::apply(&mut table, env)?;
    let provider_set = table.get("llm").and_then(|llm| llm.get("provider")).is_some();
    let preset = paths::preset(&table);
    let mut config = deser::deserialize(table, text, origin, applied)?;
    llm_env::apply_defaults(&mut config.llm, provider_set, env);
    paths::apply_data_dir(&mut config, preset, env);
    Ok(config)
}

/// Puts the real origin into a validation error (which does not know the file).
fn with_origin(err: ConfigError, origin: &str) -> ConfigError {
    match err {
        ConfigError::Invalid { problems, .. } => ConfigError::Invalid { origin: origin.to_string(), problems },
        other => other,
    }
}

/// A syntax error with line and column but without toml's source excerpt, which could show a
/// secret written on the failing line.
fn syntax_error(text: &str, origin: &str, err: &toml::de::Error) -> ConfigError {
    let (line, column) = err.span().map(|s| deser::line_col(text, s.start)).unwrap_or((1, 1));
    ConfigError::Syntax { file: origin.to_string(), line, column, message: err.message().trim().to_string() }
}
