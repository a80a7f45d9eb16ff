//! How a command gives up: the one `error: ...` line on stderr and the exit code, and loading
//! the config with exit code 2 when it is bad.
//!
//! Shared by the command files; it must never decide what a command does, only how it fails.

use crate::config;
use std::process::ExitCode;

pub(super) fn fail(code: u8, msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(code)
}

pub(super) fn load_config(path: Option<&std::path::Path>) -> Result<config::Loaded, ExitCode> {
    config::load(path, &crate::app::CONFIG_CHECKS).map_err(|e| fail(2, e))
}
