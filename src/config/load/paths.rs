//! Where Butler keeps its files when the configuration does not say: the data dir (the SQLite
//! database and the workspaces, hence the skills folder and the chat log) and the per-user
//! config file, so that Butler started from any folder finds the same ones.
//!
//! - Data dir: `BUTLER_DATA_DIR`, else `$XDG_DATA_HOME/butler` (an absolute path), else
//!   `$HOME/.local/share/butler`, else `data` (relative: no home at all).
//! - User config file: `$XDG_CONFIG_HOME/butler/butler.toml`, else
//!   `$HOME/.config/butler/butler.toml`.
//!
//! Everything reads an [`Env`] snapshot; this must never create a folder or a file.

use super::super::Config;
use super::env::Env;
use std::path::{Path, PathBuf};
use toml::Table;

/// Butler's data dir for `env` (see the module docs).
pub fn data_dir(env: &Env) -> PathBuf {
    if let Some(dir) = env.non_empty("BUTLER_DATA_DIR") {
        return PathBuf::from(dir);
    }
    if let Some(xdg) = env.non_empty("XDG_DATA_HOME").filter(|d| Path::new(d).is_absolute()) {
        return Path::new(xdg).join("butler");
    }
    match env.non_empty("HOME") {
        Some(home) => Path::new(home).join(".local/share/butler"),
        None => PathBuf::from("data"),
    }
}

/// The per-user config file for `env`, `None` without a home.
pub fn user_config_file(env: &Env) -> Option<PathBuf> {
    if let Some(xdg) = env.non_empty("XDG_CONFIG_HOME").filter(|d| Path::new(d).is_absolute()) {
        return Some(Path::new(xdg).join("butler/butler.toml"));
    }
    env.non_empty("HOME").map(|home| Path::new(home).join(".config/butler/butler.toml"))
}

/// Puts the keys the file and the overrides left unset under the data dir: `[database] url`
/// (`sqlite://<data dir>/butler.db`) and `[tools] workspace_dir` (`<data dir>/workspaces`).
pub(super) fn apply_data_dir(config: &mut Config, set: Preset, env: &Env) {
    let dir = data_dir(env);
    if !set.database_url {
        config.database.url = super::super::Secret::new(format!("sqlite://{}", dir.join("butler.db").display()));
    }
    if !set.workspace_dir {
        config.tools.workspace_dir = dir.join("workspaces").display().to_string();
    }
}

/// Which of the data-dir keys the merged TOML (file plus overrides) sets.
#[derive(Clone, Copy)]
pub(super) struct Preset {
    database_url: bool,
    workspace_dir: bool,
}

/// What `table` sets of the keys [`apply_data_dir`] fills.
pub(super) fn preset(table: &Table) -> Preset {
    let set = |section: &str, key: &str| table.get(section).and_then(|s| s.get(key)).is_some();
    Preset { database_url: set("database", "url"), workspace_dir: set("tools", "workspace_dir") }
}
